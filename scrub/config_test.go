package scrub

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestDefaultRules compiles every default rule and allowlist regex (New leaves them for
// later) and checks the secret groups, so a gitleaks upgrade that breaks one fails here
// rather than in a scan.
func TestDefaultRules(t *testing.T) {
	s := newTestScrubber(t)
	if len(s.rules) < 200 {
		t.Fatalf("only %d rules", len(s.rules))
	}
	anchored := 0
	for _, r := range s.rules {
		re := r.regex()
		if r.secretGroup > re.NumSubexp() {
			t.Errorf("%s: secretGroup %d > %d groups", r.id, r.secretGroup, re.NumSubexp())
		}
		p := r.plan()
		if p.printed > 0 {
			t.Errorf("%s: the source rewrite of its regex failed, so it is printed from the tree (slow)", r.id)
		}
		if p.anchored != nil {
			anchored++
			are, err := p.anchored.get()
			if err != nil {
				t.Fatalf("%s: anchored regex: %v", r.id, err)
			}
			if are.NumSubexp() != re.NumSubexp() {
				t.Errorf("%s: anchored regex has %d groups, want %d", r.id, are.NumSubexp(), re.NumSubexp())
			}
		}
		for _, a := range r.allowlists {
			a.prepare()
			if a.err != nil {
				t.Errorf("%s: allowlist: %v", r.id, a.err)
			}
			if a.re != nil {
				checkRegexSet(t, r.id, a.re)
			}
		}
	}
	for _, a := range s.global {
		a.prepare()
		checkRegexSet(t, "global allowlist", a.re)
	}
	t.Logf("%d rules, %d run anchored at their keywords, %d in windows", len(s.rules), anchored, len(s.rules)-anchored)
	if anchored < len(s.rules)*3/4 {
		t.Errorf("only %d rules anchored", anchored)
	}
	ids := s.Rules()
	for _, id := range []string{"github-pat", "private-key", "generic-api-key", RuleEnvCredential, RuleURLCredential} {
		found := false
		for _, x := range ids {
			found = found || x == id
		}
		if !found {
			t.Errorf("Rules() lacks %s", id)
		}
	}
}

// TestQuickTOMLParser: the fast parser of the default config reads it exactly as the
// general TOML decoder does.
func TestQuickTOMLParser(t *testing.T) {
	quick, err := parseDefaultTOML(gitleaksDefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	full, err := decodeTOML(gitleaksDefaultConfig(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(quick, full) {
		t.Fatal("the quick parser and BurntSushi/toml disagree on gitleaks' default config")
	}
	if _, err := parseDefaultTOML("[[rules]]\nid = \"x\"\nfoo = { a = 1 }\n"); err == nil {
		t.Error("an inline table should make the quick parser give up")
	}
}

func TestExtraConfigRules(t *testing.T) {
	s, err := New(&Options{ExtraConfig: `
title = "acme"

[[rules]]
id = "acme-internal-token"
description = "ACME service tokens"
regex = '''\b(acme_[a-z0-9]{24})\b'''
keywords = ["acme_"]
entropy = 3.0

[[rules]]
id = "github-pat"
keywords = ["github"]

[[allowlists]]
description = "test fixtures"
regexes = ['''^acme_0{24}$''']
targetRules = ["acme-internal-token"]

[[allowlists]]
stopwords = ["notreallyasecret"]

[extend]
useDefault = true
disabledRules = ["slack-bot-token"]
`})
	if err != nil {
		t.Fatal(err)
	}
	f := fakes{newRand(41)}
	tok := "acme_" + f.pick("abcdefghijklmnopqrstuvwxyz0123456789", 24)
	slack := "xoxb-" + f.digits(12) + "-" + f.digits(13) + "-" + f.pick(alnum, 24)
	ghp := "ghp_" + f.pick(alnum, 36)
	text := "t=" + tok + "\nfixture=acme_000000000000000000000000\nslack " + slack + "\n" + ghp + "\n"
	got := map[string]string{}
	for _, x := range s.Find([]byte(text)) {
		got[x.Secret] = x.Rule
	}
	if got[tok] != "acme-internal-token" {
		t.Errorf("user rule: %v", got)
	}
	if _, ok := got["acme_000000000000000000000000"]; ok {
		t.Errorf("targeted allowlist ignored: %v", got)
	}
	if got[slack] == "slack-bot-token" {
		t.Errorf("disabled rule still runs: %v", got)
	}
	if got[ghp] != "github-pat" {
		t.Errorf("merged default rule lost its regex: %v", got)
	}
	// The global stopword applies to every rule.
	if fs := s.Find([]byte("ghp_notreallyasecret1234567890ABCDEFGHIJ\n")); len(fs) != 0 {
		t.Errorf("global stopword ignored: %+v", fs)
	}
}

func TestExtraConfigExtendPath(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.toml")
	if err := os.WriteFile(base, []byte(`
[[rules]]
id = "base-rule"
regex = '''basesecret_[0-9]{6}'''
keywords = ["basesecret_"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(&Options{ExtraConfig: "[extend]\npath = \"" + base + "\"\n"})
	if err != nil {
		t.Fatal(err)
	}
	if fs := s.Find([]byte("x basesecret_123456 y")); len(fs) != 1 || fs[0].Rule != "base-rule" {
		t.Errorf("extended config's rule: %+v", fs)
	}
}

func TestExtraConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, cfg, want string }{
		{"toml syntax", "[[rules]\nid = 1", "ExtraConfig"},
		{"bad regex", "[[rules]]\nid = \"x\"\nregex = '''a(b'''", "x: invalid regex"},
		{"secret group", "[[rules]]\nid = \"x\"\nregex = '''(a)'''\nsecretGroup = 2", "invalid regex secret group 2"},
		{"missing id", "[[rules]]\nregex = '''abc'''", "rule |id| is missing"},
		{"no regex or path", "[[rules]]\nid = \"x\"", "both |regex| and |path| are empty"},
		{"duplicate id", "[[rules]]\nid = \"x\"\nregex='a'\n[[rules]]\nid = \"x\"\nregex='b'", "defined twice"},
		{"condition", "[[allowlists]]\ncondition = \"xor\"\nregexes = ['a']", "unknown allowlist |condition|"},
		{"regex target", "[[allowlists]]\nregexTarget = \"file\"\nregexes = ['a']", "unknown allowlist |regexTarget|"},
		{"empty allowlist", "[[allowlists]]\ndescription = \"nothing\"", "must contain at least one check"},
		{"allowlist regex", "[[allowlists]]\nregexes = ['(']", "invalid regex"},
		{"target rule", "[[allowlists]]\nregexes = ['a']\ntargetRules = [\"nope\"]", "target rule ID 'nope' does not exist"},
		{"required rule", "[[rules]]\nid = \"x\"\nregex='a'\n[[rules.required]]\nid = \"nope\"", "rule ID 'nope' does not exist"},
		{"both allowlist forms", "[allowlist]\nregexes=['a']\n[[allowlists]]\nregexes=['b']", "deprecated"},
		{"extend url", "[extend]\nurl = \"https://example.com/x.toml\"", "url is not supported"},
		{"extend missing file", "[extend]\npath = \"/nonexistent/gitleaks.toml\"", "no such file"},
		{"override secret group", "[[rules]]\nid = \"github-pat\"\nsecretGroup = 3", "invalid regex secret group 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(&Options{ExtraConfig: tc.cfg})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestRequiredRules: a composite rule reports only with its required rule nearby, and
// then both secrets are hidden; a skipReport rule only ever helps.
func TestRequiredRules(t *testing.T) {
	s, err := New(&Options{ExtraConfig: `
[[rules]]
id = "acme-key-id"
regex = '''ACMEID[0-9]{8}'''
keywords = ["acmeid"]
skipReport = true

[[rules]]
id = "acme-key-value"
regex = '''acmeval=([A-Za-z0-9]{20})'''
keywords = ["acmeval"]
[[rules.required]]
id = "acme-key-id"
withinLines = 1
`})
	if err != nil {
		t.Fatal(err)
	}
	pair := "id ACMEID12345678\nacmeval=Ab3dEf6hIj9kLm2nOp5q\n"
	fs := s.Find([]byte(pair))
	if len(fs) != 2 || fs[0].Rule != "acme-key-id" || fs[1].Rule != "acme-key-value" {
		t.Fatalf("pair: %+v", fs)
	}
	alone := "acmeval=Ab3dEf6hIj9kLm2nOp5q\n\n\n\nid ACMEID12345678\n"
	if fs := s.Find([]byte(alone)); len(fs) != 0 {
		t.Fatalf("too far apart: %+v", fs)
	}
	if fs := s.Find([]byte("only ACMEID12345678\n")); len(fs) != 0 {
		t.Fatalf("skipReport rule reported: %+v", fs)
	}
}

func TestNilOptions(t *testing.T) {
	a, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(&Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.rules) != len(b.rules) || a.workers < 1 {
		t.Fatalf("nil and zero Options differ: %d/%d rules, %d workers", len(a.rules), len(b.rules), a.workers)
	}
	c, _ := New(&Options{Workers: 3})
	if c.workers != 3 {
		t.Fatalf("workers %d", c.workers)
	}
}

// checkRegexSet compiles both forms of an allowlist's regexes and checks they agree on
// samples generated from the regexes themselves.
func checkRegexSet(t *testing.T, what string, rs *regexSet) {
	t.Helper()
	whole, err := rs.whole.get()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	split, err := newSplitSet(rs.srcs)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for i := range split.branches {
		split.branch(int32(i))
	}
	r := newRand(81)
	for _, src := range rs.srcs {
		tree := mustParse(t, src)
		for k := 0; k < 20; k++ {
			sample := genMatch(tree, r)
			if w, s := whole.MatchString(sample), split.match(sample); w != s {
				t.Errorf("%s: %q: joined %v, split %v", what, sample, w, s)
			}
			noise := "x" + sample[:len(sample)/2] + "Q"
			if w, s := whole.MatchString(noise), split.match(noise); w != s {
				t.Errorf("%s: %q: joined %v, split %v", what, noise, w, s)
			}
		}
	}
}
