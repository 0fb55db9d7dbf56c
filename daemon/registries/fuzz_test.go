package registries

import (
	"strings"
	"testing"
	"unicode"

	"github.com/contextd/contextd/daemon/homeview"
)

// visible approximates the scrubbed copy of content: what homeview.Redact
// replaces, and every URL password, cut out where they stand. Text that is
// still there may be quoted in a note (a key, a host, a path).
func visible(content string) string {
	s := string(homeview.Redact([]byte(content), func(string) string { return "\x00" }))
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || strings.ContainsRune("/\"'`<>\\\x7f", r) })
		if end < 0 {
			end = len(s)
		}
		at := strings.LastIndexByte(s[:end], '@')
		if at < 0 {
			continue
		}
		b.WriteString("\x00")
		s = s[at:]
	}
}

// checkNotes fails when a note quotes a secret from where it stands. Only
// values with a digit, of 6 bytes or more, are looked for: shorter or
// plainer ones match the notes' own words.
func checkNotes(t *testing.T, content string, f Found) {
	t.Helper()
	vis := visible(content)
	for _, s := range f.Secrets {
		if len(s.Value) < 6 || !strings.ContainsFunc(s.Value, unicode.IsDigit) || strings.Contains(vis, s.Value) {
			continue
		}
		for _, n := range f.Notes {
			if strings.Contains(n, s.Value) {
				t.Fatalf("note %q quotes the secret of %s", n, s.Key)
			}
		}
	}
}

func fuzzCollector() *collector {
	return &collector{
		h:       &homeview.Host{Home: "/nonexistent/home", Env: map[string]string{"SET": "https://set.example/"}},
		regs:    map[string]bool{},
		secrets: map[Secret]bool{},
		cas:     map[string]bool{},
	}
}

// FuzzNpmrc: an .npmrc of any shape never makes Discover panic, and its
// notes never quote a credential.
func FuzzNpmrc(f *testing.F) {
	f.Add(contractHome[".npmrc"])
	f.Add("registry=https://u:Pa55word1@r.example/\n//r.example/:_authToken=\"abc123def\"\n")
	f.Add("@s:registry=${SET}\n//[::1]:99999/:_auth=x1y2z3w4\n_authToken=tok3nValue\n[sec]\nx=1\n")
	f.Add("//:_authToken=abc123456\n//h/:_password='p4ssw0rd;x'\n\"registry\"=\"\\u0068ttp://h\"\n")
	f.Fuzz(func(t *testing.T, content string) {
		c := fuzzCollector()
		c.npmrc([]byte(content), origin{file: "/nonexistent/home/.npmrc", label: "~/.npmrc", scrubbed: true})
		checkNotes(t, content, c.f)
		for _, s := range c.f.Secrets {
			if s.Value == "" || s.Host == "" || !strings.Contains(content, s.Value) {
				t.Fatalf("secret %+v not from the file", s)
			}
		}
	})
}

// FuzzPipConf: a pip.conf of any shape never makes Discover panic, and
// its notes never quote a credential.
func FuzzPipConf(f *testing.F) {
	f.Add(contractHome[".config/pip/pip.conf"])
	f.Add("[global]\nindex-url = https://u:p4ss@h:1/\n[install]\nextra_index_url: https://a:b1c2d3e4@x\n  https://[::1]:8/\ncert = rel\n")
	f.Add("index-url = x\n[global\n")
	f.Add("[global]\n\tindex-url=https://tok3ntok3ntok3ntok3n@h.example/\n  continued\n")
	f.Fuzz(func(t *testing.T, content string) {
		c := fuzzCollector()
		if pf, ok := c.pipFile([]byte(content), origin{file: "/nonexistent/home/.config/pip/pip.conf", label: "~/.config/pip/pip.conf", scrubbed: true}); ok {
			c.pipFrom([]pipFile{pf})
		}
		checkNotes(t, content, c.f)
		for _, s := range c.f.Secrets {
			if s.Value == "" || s.Host == "" || !strings.Contains(content, s.Value) {
				t.Fatalf("secret %+v not from the file", s)
			}
		}
	})
}
