package scrub

import (
	"slices"
	"strings"
	"testing"
)

// TestMatcher checks the keyword automaton against a naive search, case-insensitively,
// with overlapping keywords and keywords inside others.
func TestMatcher(t *testing.T) {
	words := []string{"key", "api", "apikey", "ey", "-----begin", "s.", "sk", "ghp_", "a", "Token", "xoxb-"}
	m := newMatcher(words)
	ws := newWordSet(words)
	r := newRand(71)
	alphabet := "keyapiKEYAPsS.-gbhpt_oxTnb "
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := r.Intn(60); n > 0; n-- {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
		text := b.String()
		lower := strings.ToLower(text)
		want := map[[2]int]bool{}
		for id, w := range words {
			lw := strings.ToLower(w)
			for off := 0; ; {
				j := strings.Index(lower[off:], lw)
				if j < 0 {
					break
				}
				want[[2]int{id, off + j + len(w)}] = true
				off += j + 1
			}
		}
		got := map[[2]int]bool{}
		m.scan([]byte(text), func(id int32, end int) bool {
			got[[2]int{int(id), end}] = true
			return true
		})
		if len(got) != len(want) {
			t.Fatalf("%q: got %v, want %v", text, got, want)
		}
		for k := range want {
			if !got[k] {
				t.Fatalf("%q: missing %v", text, k)
			}
		}
		if m.containsAny(text) != (len(want) > 0) || ws.containsAny(text) != (len(want) > 0) {
			t.Fatalf("%q: containsAny disagrees", text)
		}
	}
}

// TestMatcherStreams checks that scan, which walks long inputs in four streams, reports
// what one walk does, in the same order, keywords across the streams' seams included.
func TestMatcherStreams(t *testing.T) {
	words := []string{"key", "api", "apikey", "ey", "-----begin", "s.", "sk", "ghp_", "a", "Token", "xoxb-", "-----begin private key-----"}
	m := newMatcher(words)
	r := newRand(72)
	alphabet := "keyapiKEYAPsS.-gbhpt_oxTnb rivate"
	type hit struct{ id, end int }
	for i := 0; i < 200; i++ {
		n := interleaveMin + r.Intn(3*interleaveMin)
		if i%4 == 0 {
			n = 4*interleaveMin + i%4
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = alphabet[r.Intn(len(alphabet))]
		}
		// Long keywords right across the seams.
		for k := 1; k < 4; k++ {
			at := k*(n/4) - r.Intn(20)
			copy(b[at:], "-----BEGIN PRIVATE KEY-----")
		}
		var one, four []hit
		m.scanOne(b, func(id int32, end int) bool { one = append(one, hit{int(id), end}); return true })
		m.scan(b, func(id int32, end int) bool { four = append(four, hit{int(id), end}); return true })
		if !slices.Equal(one, four) {
			t.Fatalf("length %d: one walk found %d hits, four streams %d", n, len(one), len(four))
		}
	}
}

// TestReach checks the window analysis on patterns of the kinds gitleaks uses.
func TestReach(t *testing.T) {
	for _, tc := range []struct {
		re       string
		kws      []string
		anchored bool
		back     int
		nlFwd    int
	}{
		{`\b((?:A3T[A-Z0-9]|AKIA|ASIA)[A-Z2-7]{16})\b`, []string{"a3t", "akia", "asia"}, true, 4, 0},
		{`(?i)[\w.-]{0,50}?(?:heroku)(?:[ \t\w.-]{0,20})[\s'"]{0,3}=([0-9a-f]{8})`, []string{"heroku"}, true, -2, 3},
		{`\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9\/\\_-]{17,})(?:[\x60'"\s;]|$)`, []string{"ey"}, true, 2, 1},
		{`(?i)\b(\b(sgp_[a-f0-9]{40}|[a-f0-9]{40})\b)`, []string{"sgp_", "sourcegraph"}, false, -2, 0},
		{`(?:https?://)?hooks.slack.com/services/[A-Za-z0-9+/]{43,56}`, []string{"hooks.slack.com"}, false, -2, 0},
		{`passw(?:or)?d=([a-z]{8})`, []string{"password", "passwd"}, true, -2, 0},
	} {
		tree := mustParse(t, tc.re)
		rc := analyzeReach(tree, tc.kws)
		if rc.anchored != tc.anchored {
			t.Errorf("%s: anchored %v", tc.re, rc.anchored)
		}
		if tc.back != -2 && rc.back != tc.back {
			t.Errorf("%s: back %d, want %d", tc.re, rc.back, tc.back)
		}
		if rc.anchored && rc.nlFwd != tc.nlFwd {
			t.Errorf("%s: nlFwd %d, want %d", tc.re, rc.nlFwd, tc.nlFwd)
		}
	}
}

// TestSourceRewrites checks the source-level rewrites against the tree-level ones on
// every default rule (resrc.go).
func TestSourceRewrites(t *testing.T) {
	s := newTestScrubber(t)
	relaxed := 0
	for _, r := range s.rules {
		tree := mustParse(t, r.regexSrc)
		rl, changed := relax(tree)
		if !changed {
			continue
		}
		if src := relaxSrc(r.regexSrc, relaxAbove); !sameTree(src, rl) {
			t.Errorf("%s: relaxSrc gives %q", r.id, src)
		}
		relaxed++
	}
	if relaxed < 50 {
		t.Errorf("only %d rules relaxed", relaxed)
	}
	alts := splitAlternation(`(?i)(?:access(?:ibility|or)|[a-z0-9-]*?api[a-z0-9-]*?:jar:|(?-i:[Dd]onkey|[DM]ONKEY)|x\|y|[|])`)
	want := []string{"(?i)access(?:ibility|or)", "(?i)[a-z0-9-]*?api[a-z0-9-]*?:jar:", "(?i)(?-i:[Dd]onkey|[DM]ONKEY)", `(?i)x\|y`, "(?i)[|]"}
	if strings.Join(alts, "\n") != strings.Join(want, "\n") {
		t.Errorf("splitAlternation: %q", alts)
	}
}
