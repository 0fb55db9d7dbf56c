package scrub

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

// gitleaksOracle is gitleaks' own library detector with the default rules, decoding as
// deep as `gitleaks stdin` does.
func gitleaksOracle(t testing.TB) *detect.Detector {
	t.Helper()
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	d.MaxDecodeDepth = 5
	return d
}

// covers reports whether one of fs overlaps gitleaks finding g in text. A secret found
// after decoding is not in the text; then any finding on its lines counts.
func covers(text []byte, fs []Finding, g report.Finding) bool {
	overlap := func(s, e int) bool {
		for _, f := range fs {
			if f.Start < e && s < f.End {
				return true
			}
		}
		return false
	}
	if g.Secret != "" {
		found := false
		for off := 0; ; {
			i := bytes.Index(text[off:], []byte(g.Secret))
			if i < 0 {
				break
			}
			found = true
			if overlap(off+i, off+i+len(g.Secret)) {
				return true
			}
			off += i + 1
		}
		if found {
			return false
		}
	}
	// The library reports 0-based lines (the CLI adds 1).
	lines := bytes.SplitAfter(text, []byte("\n"))
	s := 0
	for i := 0; i < g.StartLine && i < len(lines); i++ {
		s += len(lines[i])
	}
	e := s
	for i := max(g.StartLine, 0); i <= g.EndLine && i < len(lines); i++ {
		e += len(lines[i])
	}
	return overlap(s, max(e, s+1))
}

// contexts wrap a generated match the way secrets appear in output: alone, in an
// assignment, quoted in JSON, after a log prefix.
var contexts = []struct{ before, after string }{
	{"", "\n"},
	{"token = ", "\n"},
	{`{"value": "`, "\"}\n"},
	{"2025-03-01T08:00:00Z INFO got ", " from upstream\n"},
	{"export X=", "\n"},
}

// TestRecallAgainstGitleaks generates, for every default rule, random strings its regex
// matches (so in the rule's real format, not from a fixed list), puts each in a typical
// context, and checks that Find covers every finding gitleaks' own detector reports on
// that text. It also checks that most rules got samples gitleaks confirms, so the check
// is broad.
func TestRecallAgainstGitleaks(t *testing.T) {
	d := gitleaksOracle(t)
	s := newTestScrubber(t)
	r := rand.New(rand.NewSource(20250301))
	perRule := 6
	if raceEnabled {
		perRule = 2
	}
	confirmed := map[string]int{}
	var misses []string
	active := 0
	for _, ru := range s.rules {
		tree, err := syntax.Parse(ru.regexSrc, syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", ru.id, err)
		}
		active++
		for i := 0; i < perRule; i++ {
			c := contexts[r.Intn(len(contexts))]
			text := []byte(c.before + genMatch(tree, r) + c.after)
			got := s.Find(text)
			for _, g := range d.DetectBytes(text) {
				if g.RuleID == ru.id {
					confirmed[ru.id]++
				}
				if !covers(text, got, g) {
					misses = append(misses, fmt.Sprintf("%s (sample for %s): secret %q in %q; ours: %v", g.RuleID, ru.id, g.Secret, text, got))
				}
			}
		}
	}
	if len(misses) > 0 {
		t.Errorf("%d gitleaks findings not covered:\n%s", len(misses), strings.Join(misses, "\n"))
	}
	var unconfirmed []string
	for _, ru := range s.rules {
		if confirmed[ru.id] == 0 {
			unconfirmed = append(unconfirmed, ru.id)
		}
	}
	sort.Strings(unconfirmed)
	t.Logf("%d of %d rules that run on text got samples gitleaks confirms; not: %v", active-len(unconfirmed), active, unconfirmed)
	if min := active * 8 / 10; active-len(unconfirmed) < min {
		t.Errorf("only %d rules confirmed, want at least %d: the generator no longer fits the rules", active-len(unconfirmed), min)
	}
}

// TestRecallMixedTexts puts generated secrets of random rules, some of them base64-, hex-
// or percent-encoded, between lines of Go source and logs, many to a text, and checks
// again that Find covers everything gitleaks' detector finds: windows around keywords,
// merging of overlapping findings and decoding all take part. So that the check cannot
// pass on texts where gitleaks finds nothing, every planted secret gitleaks finds on its
// own line must be found in the text too, by gitleaks and by Find; every text must hold
// such secrets, and at least 3/4 of all planted ones must be such.
func TestRecallMixedTexts(t *testing.T) {
	d := gitleaksOracle(t)
	s := newTestScrubber(t)
	r := rand.New(rand.NewSource(7))
	noise := goSourceSample(t, 256<<10)
	logs := bytes.Split(fakeLogs(r, 2000), []byte("\n"))
	var trees []*syntax.Regexp
	for _, ru := range s.rules {
		trees = append(trees, mustParse(t, ru.regexSrc))
	}
	texts := 16
	if raceEnabled {
		texts = 3
	}
	// plant is a secret written into a text: the span of its (maybe encoded) form.
	type plant struct {
		start, end int
		line       string
	}
	planted, confirmed := 0, 0
	for k := 0; k < texts; k++ {
		var b bytes.Buffer
		var plants []plant
		off := r.Intn(len(noise) / 2)
		for b.Len() < 16<<10 {
			switch r.Intn(4) {
			case 0:
				n := r.Intn(2000)
				end := min(len(noise), off+n)
				b.Write(noise[off:end])
				off = end % (len(noise) - 1)
				b.WriteByte('\n')
			case 1:
				b.Write(logs[r.Intn(len(logs))])
				b.WriteByte('\n')
			default:
				i := r.Intn(len(trees))
				secret := genMatch(trees[i], r)
				c := contexts[r.Intn(len(contexts))]
				secret = encodeSometimes(secret, r)
				start := b.Len() + len(c.before)
				plants = append(plants, plant{start, start + len(secret), c.before + secret + c.after})
				b.WriteString(c.before + secret + c.after)
			}
		}
		text := b.Bytes()
		got := s.Find(text)
		found := d.DetectBytes(text)
		for _, g := range found {
			if !covers(text, got, g) {
				t.Errorf("text %d: %s not covered: secret %q match %q (tags %v)", k, g.RuleID, g.Secret, g.Match, g.Tags)
			}
		}
		mine := 0
		for _, p := range plants {
			alone := d.DetectString(p.line)
			if len(alone) == 0 {
				continue // not a secret by gitleaks' rules (allowlist, entropy): nothing to find
			}
			mine++
			if !slices.ContainsFunc(found, func(g report.Finding) bool { return covers(text, []Finding{{Start: p.start, End: p.end}}, g) }) {
				t.Errorf("text %d: gitleaks finds %s in %q alone but not in the text", k, alone[0].RuleID, p.line)
			}
			if !slices.ContainsFunc(got, func(f Finding) bool { return f.Start < p.end && p.start < f.End }) {
				t.Errorf("text %d: Find misses the planted %s in %q", k, alone[0].RuleID, p.line)
			}
		}
		if mine == 0 {
			t.Errorf("text %d: none of its %d planted secrets is one gitleaks finds", k, len(plants))
		}
		confirmed += mine
		planted += len(plants)
	}
	t.Logf("%d secrets planted in %d texts, %d of them found by gitleaks alone", planted, texts, confirmed)
	if confirmed < planted*3/4 {
		t.Errorf("gitleaks finds only %d of the %d planted secrets on their own lines, want at least 3/4: the generator no longer fits the rules", confirmed, planted)
	}
}

func encodeSometimes(s string, r *rand.Rand) string {
	switch r.Intn(8) {
	case 0:
		return base64Std(s)
	case 1:
		return fmt.Sprintf("%x", s)
	case 2:
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
		return b.String()
	}
	return s
}

// A rule whose match need not hold its keyword (facebook's token, Sourcegraph's bare
// hex) runs on decoded text when its keyword is elsewhere in the text, as gitleaks does:
// the keyword on one line, the secret hex- or base64-encoded or percent-escaped on the
// next or thousands of bytes later. Each text is checked against gitleaks' detector,
// which must find something (else the case proves nothing), and Find must cover it.
func TestRecallKeywordAwayFromEncodedSecret(t *testing.T) {
	s := newTestScrubber(t)
	gl := gitleaksOracle(t)
	fb := "2433738152228083|Nh6KYJKthLhjWkZX-X15iowFEMGA'"
	hexed := hex.EncodeToString([]byte(fb))
	based := base64.StdEncoding.EncodeToString([]byte("token " + fb + " end"))
	filler := strings.Repeat("INFO nothing to see in this line of the log\n", 200)
	for _, c := range []struct{ name, text string }{
		{"hex on the next line", "facebook\n" + hexed + "\n"},
		{"base64 on the next line", "see facebook docs\n" + based + "\n"},
		{"hex 9 kB later", "app: facebook\n" + filler + "value=" + hexed + "\n"},
		{"keyword after the secret", hexed + "\n" + filler + "# facebook\n"},
	} {
		want := gl.DetectString(c.text)
		if len(want) == 0 {
			t.Fatalf("%s: gitleaks finds nothing in the case: it proves nothing", c.name)
		}
		fs := s.Find([]byte(c.text))
		for _, g := range want {
			if !covers([]byte(c.text), fs, g) {
				t.Errorf("%s: gitleaks finds %s (%q), Find does not: %+v", c.name, g.RuleID, g.Secret, fs)
			}
		}
		if strings.HasPrefix(c.name, "keyword after") {
			continue // a stream has sent the secret's line before the keyword comes
		}
		// The stream (a command's output as it comes), in pieces of 1,000 bytes.
		var streamed []Finding
		var off int
		st := NewStream(s, func(text []byte, fs []Finding) error {
			for _, f := range fs {
				f.Start, f.End = f.Start+off, f.End+off
				streamed = append(streamed, f)
			}
			off += len(text)
			return nil
		})
		for i := 0; i < len(c.text); i += 1000 {
			if _, err := st.Write([]byte(c.text[i:min(len(c.text), i+1000)])); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		for _, g := range want {
			if !covers([]byte(c.text), streamed, g) {
				t.Errorf("%s: gitleaks finds %s (%q), the stream does not: %+v", c.name, g.RuleID, g.Secret, streamed)
			}
		}
	}
}
