package scrub

import (
	"math/rand"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

// checkDFA compares the DFA's answer on text with the regexp package's, on the whole
// text and cut after its first and second newlines.
func checkDFA(t *testing.T, d *prefixDFA, re *regexp.Regexp, text string) bool {
	t.Helper()
	for lines := 0; lines <= 2; lines++ {
		got, ok := d.match([]byte(text), lines)
		if !ok {
			t.Errorf("%s on %q: the DFA could not tell", d.src, text)
			return false
		}
		cut := text
		if lines > 0 {
			cut = text[:afterNewlines([]byte(text), 0, len(text), lines)]
		}
		if want := re.MatchString(cut); got != want {
			t.Errorf("%s on %q cut after %d lines: DFA %v, regexp %v", d.src, text, lines, got, want)
			return false
		}
	}
	return true
}

func TestPrefixDFAAssertions(t *testing.T) {
	cases := []struct {
		src   string
		texts []string
	}{
		{`^(?:ab\b)`, []string{"ab", "ab ", "abc", "ab-", "a", "", "ab\n", "abé"}},
		{`^(?:ab\B)`, []string{"ab", "abc", "ab ", "ab_"}},
		{`^(?:\bab)`, []string{"ab", " ab", "xab"}},
		{`^(?:ab$)`, []string{"ab", "ab\n", "abc", "ab "}},
		{`^(?:(?m)ab$\ncd)`, []string{"ab\ncd", "ab cd", "ab\n\ncd"}},
		{`^(?:(?m)a\n^b)`, []string{"a\nb", "a\n b"}},
		{`^(?:a\s*b?$)`, []string{"a\n", "a\n\nb", "a\nb\n", "a \n \n"}},
		{`^(?:ab(?:[\x60'"\s;]|\\[nr]|$))`, []string{"ab", "ab;", "ab\\n", "ab\\x", "abz", "ab\t"}},
		{`^(?i)(?:key)`, []string{"KEY", "Key", "\u212aey", "ke", "kex"}},
		{`^(?i)(?:s[a-z]{3})`, []string{"\u017fabc", "Sabc", "sab", "sab1"}},
		{`^(?:.{3}x)`, []string{"abcx", "a\nbx", "\xff\xfe\xfdx", "éé́x", "\xffx"}},
		{`^(?:[^a]{2,}b)`, []string{"xyb", "\xff\xffb", "éb", "ab", "ééb"}},
		{`^(?:a*)`, []string{"", "b", "aaa"}},
		{`^(?:a+|b{2,4}c)`, []string{"", "bc", "bbc", "bbbbbc", "bbbbc", "a"}},
		{`^(?:\A\z)`, []string{"", "a"}},
	}
	for _, c := range cases {
		d, err := newPrefixDFA(c.src)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(c.src)
		for _, text := range c.texts {
			checkDFA(t, d, re, text)
		}
	}
}

// mutate changes s the ways text around a near-secret differs from one: cut short,
// bytes replaced or inserted (word and non-word, newline, non-ASCII, invalid UTF-8),
// something appended.
func mutate(s string, r *rand.Rand) string {
	pieces := []string{" ", "\n", "\t", "=", ":", "\"", "'", ";", "-", "_", ".", "/", "+", "\\n", "a", "Z", "0", "\u212a", "\u017f", "é", "\xff", "\x00", "`"}
	b := []byte(s)
	for n := r.Intn(4); n > 0; n-- {
		switch r.Intn(5) {
		case 0:
			if len(b) > 0 {
				b = b[:r.Intn(len(b))]
			}
		case 1:
			if len(b) > 0 {
				i := r.Intn(len(b))
				b = append(b[:i:i], append([]byte(pieces[r.Intn(len(pieces))]), b[i+1:]...)...)
			}
		case 2:
			i := r.Intn(len(b) + 1)
			b = append(b[:i:i], append([]byte(pieces[r.Intn(len(pieces))]), b[i:]...)...)
		default:
			b = append(b, pieces[r.Intn(len(pieces))]...)
		}
	}
	return string(b)
}

// TestPrefixDFARules checks every default rule's DFA against the regexp package on
// strings its regex matches, in random contexts and mutated: a DFA that rejected a
// match would lose a secret.
func TestPrefixDFARules(t *testing.T) {
	s := newTestScrubber(t)
	r := rand.New(rand.NewSource(26))
	n := 40
	if raceEnabled {
		n = 8
	}
	tested, yes, no := 0, 0, 0
	for _, ru := range s.rules {
		p := ru.plan()
		if p.pre == nil {
			continue
		}
		tested++
		re := regexp.MustCompile(p.pre.src)
		body, err := syntax.Parse(p.pre.src, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		// The property recall rests on: pre is a superset of the anchored
		// regex, so whatever that matches, pre lets through. Texts made
		// from the anchored regex itself test it.
		anch, err := p.anchored.get()
		if err != nil {
			t.Fatal(err)
		}
		anchBody, err := syntax.Parse(anch.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i := 0; i < n && bad < 3; i++ {
			m := genMatch(body, r)
			a := genMatch(anchBody, r)
			texts := []string{m, m + " ", m + "\n", m + "x", mutate(m, r), mutate(m, r), strings.ToUpper(m), a, a + " x", mutate(a, r)}
			for _, text := range texts {
				if !checkDFA(t, p.pre, re, text) {
					bad++
				}
				if anch.MatchString(text) {
					if got, ok := p.pre.match([]byte(text), 0); ok && !got {
						t.Errorf("%s on %q: the anchored regex matches, the DFA rejects it (a secret lost)", ru.id, text)
						bad++
					}
				}
				if re.MatchString(text) {
					yes++
				} else {
					no++
				}
			}
		}
		// Everyday text around the keywords.
		for _, k := range ru.keywords {
			for _, after := range []string{"", " = 1", "s := x", `: "value"`, "_ID=AKIAABCDEFGHIJKLMNOP", "=abcdefghijklmnopqrstuvwx\n"} {
				checkDFA(t, p.pre, re, k+after)
			}
		}
	}
	if tested < 100 {
		t.Errorf("only %d rules have a DFA", tested)
	}
	// Both answers must be common for the comparison to mean something.
	if yes < (yes+no)/10 || no < (yes+no)/10 {
		t.Errorf("%d texts matched, %d did not", yes, no)
	}
	t.Logf("%d rules, %d texts matched, %d did not", tested, yes, no)
}

// TestPrefixDFALimit: past its state limit a DFA says it cannot tell rather than guess.
func TestPrefixDFALimit(t *testing.T) {
	d, err := newPrefixDFA(`^(?:[ab]*a[ab]{12}c)`)
	if err != nil {
		t.Fatal(err)
	}
	d.limit = 20
	unsure := 0
	r := rand.New(rand.NewSource(1))
	re := regexp.MustCompile(d.src)
	for i := 0; i < 200; i++ {
		b := make([]byte, 30)
		for j := range b {
			b[j] = "ab"[r.Intn(2)]
		}
		got, ok := d.match(b, 0)
		if !ok {
			unsure++
			continue
		}
		if got != re.Match(b) {
			t.Fatalf("%q: DFA %v", b, got)
		}
	}
	if unsure == 0 {
		t.Error("a DFA of 20 states for a regex needing thousands was always sure")
	}
}

// TestPrefixDFAReach: the anchored regex of every default rule finds the same match,
// groups included, on a text cut where reach says as on the whole text.
func TestPrefixDFAReach(t *testing.T) {
	s := newTestScrubber(t)
	r := rand.New(rand.NewSource(27))
	n := 30
	if raceEnabled {
		n = 6
	}
	cut, found := 0, 0
	for _, ru := range s.rules {
		p := ru.plan()
		if p.pre == nil {
			continue
		}
		re, err := p.anchored.get()
		if err != nil {
			t.Fatal(err)
		}
		body, err := syntax.Parse(p.pre.src, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			m := genMatch(body, r)
			for _, text := range []string{m + " tail", m + "\nmore", mutate(m, r) + " " + mutate(m, r), m + m, strings.ToLower(m) + "=x"} {
				k := p.pre.reach([]byte(text))
				want := re.FindStringSubmatchIndex(text)
				got := re.FindStringSubmatchIndex(text[:k])
				if !slices.Equal(got, want) {
					t.Fatalf("%s on %q: %v, cut to %q: %v", ru.id, text, want, text[:k], got)
				}
				if k < len(text) {
					cut++
				}
				if want != nil {
					found++
				}
			}
		}
	}
	if cut == 0 || found == 0 {
		t.Errorf("%d texts cut, %d matched", cut, found)
	}
	t.Logf("%d texts cut, %d matched", cut, found)
}

func TestPrefixDFAReachAssertions(t *testing.T) {
	for _, c := range []struct {
		src   string
		texts []string
	}{
		{`^(?:ab\b)`, []string{"ab", "ab ", "abc", "ab-x"}},
		{`^(?:ab$)`, []string{"ab", "abc", "ab\n"}},
		{`^(?:a+b?)`, []string{"aaab", "aaac", "aé", "a\xff"}},
		{`^(?:a.)`, []string{"aé and more", "a\xffx"}},
	} {
		d, err := newPrefixDFA(c.src)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(c.src)
		for _, text := range c.texts {
			k := d.reach([]byte(text))
			if want, got := re.FindStringIndex(text), re.FindStringIndex(text[:k]); !slices.Equal(got, want) {
				t.Errorf("%s on %q: %v, cut to %q: %v", c.src, text, want, text[:k], got)
			}
		}
	}
}

// TestWindowDFA: for the rules run on windows, the DFA finds a match in a text exactly
// when its own (relaxed) regex does, and so whenever the rule's regex does (a window it
// rejects would lose a secret), on generated matches inside other text, mutated.
func TestWindowDFA(t *testing.T) {
	s := newTestScrubber(t)
	r := rand.New(rand.NewSource(28))
	n := 30
	if raceEnabled {
		n = 6
	}
	tested, yes, no := 0, 0, 0
	for _, ru := range s.rules {
		p := ru.plan()
		if p.win == nil {
			continue
		}
		tested++
		re := ru.regex()
		relaxed := regexp.MustCompile(p.win.src)
		tree, err := syntax.Parse(ru.regexSrc, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			m := genMatch(tree, r)
			for _, text := range []string{
				m, "x = " + m + "\n", "some text before\n" + mutate(m, r) + " and after",
				mutate(m, r), strings.ToUpper(m) + "\t", "é" + m[:len(m)/2] + "\xff" + m[len(m)/2:],
			} {
				got, ok := p.win.match([]byte(text), 0)
				if !ok {
					t.Fatalf("%s on %q: the DFA could not tell", ru.id, text)
				}
				want := re.MatchString(text)
				if got != relaxed.MatchString(text) || want && !got {
					t.Fatalf("%s on %q: DFA %v, regexp %v", ru.id, text, got, want)
				}
				if want {
					yes++
				} else {
					no++
				}
			}
		}
	}
	if tested == 0 || yes == 0 || no == 0 {
		t.Errorf("%d rules, %d texts matched, %d did not", tested, yes, no)
	}
	t.Logf("%d rules, %d texts matched, %d did not", tested, yes, no)
}

// FuzzPrefixDFA checks the DFA against the regexp package on fuzzed patterns
// and texts: where the DFA can tell, its answer is the regexp's (a wrong "no"
// loses a secret); and a text cut where reach says no thread lives has the
// same leftmost match as the whole text.
func FuzzPrefixDFA(f *testing.F) {
	for _, s := range []struct{ src, text string }{
		{`(?i)\b(ghp_[a-z0-9]{36})\b`, "ghp_" + strings.Repeat("a", 36) + " x"},
		{`key\s*[:=]\s*["']?([\w\-.]{8,})`, "key = 'abcdefgh12'"},
		{`-----BEGIN[ A-Z]*PRIVATE KEY-----[\s\S]*?-----END`, "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END"},
		{`(?m)^a$\n^b`, "a\nb"},
		{`.{3}x`, "é\xffbx"},
	} {
		f.Add(s.src, s.text, uint8(0))
	}
	f.Fuzz(func(t *testing.T, src, text string, lines uint8) {
		if len(src) > 200 || len(text) > 4096 {
			return
		}
		if _, err := regexp.Compile(src); err != nil {
			return // not a pattern (and ")x|y(" would unbalance the anchor's group)
		}
		anchored := "^(?:" + src + ")"
		re, err := regexp.Compile(anchored)
		if err != nil {
			return
		}
		d, err := newPrefixDFA(anchored)
		if err != nil {
			t.Fatalf("%s compiles for regexp but not for the DFA: %v", anchored, err)
		}
		n := int(lines % 3)
		if got, ok := d.match([]byte(text), n); ok {
			cut := text
			if n > 0 {
				cut = text[:afterNewlines([]byte(text), 0, len(text), n)]
			}
			if want := re.MatchString(cut); got != want {
				t.Fatalf("%s on %q (%d lines): DFA %v, regexp %v", anchored, text, n, got, want)
			}
		}
		k := d.reach([]byte(text))
		if k < 0 || k > len(text) {
			t.Fatalf("%s on %q: reach %d out of range", anchored, text, k)
		}
		if want, got := re.FindStringSubmatchIndex(text), re.FindStringSubmatchIndex(text[:k]); !slices.Equal(got, want) {
			t.Fatalf("%s on %q: whole %v, cut to %d: %v", anchored, text, want, k, got)
		}
	})
}
