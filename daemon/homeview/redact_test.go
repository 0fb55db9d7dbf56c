package homeview

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/scrub"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"npmrc token", "//registry.npmjs.org/:_authToken=npm_k3Jd9QxP2mZr7VtL0bWc5YhN8sFa1GeU4oRi\n",
			"//registry.npmjs.org/:_authToken=<1>\n"},
		{"npmrc basic", "//my.reg/:_auth=dXNlcjpwYXNz\n//my.reg/:_password=\"cGFzcw==\"\nalways-auth=true\n",
			"//my.reg/:_auth=<1>\n//my.reg/:_password=\"<2>\"\nalways-auth=true\n"},
		{"npmrc env reference", "//r/:_authToken=${NPM_TOKEN}\n", "//r/:_authToken=${NPM_TOKEN}\n"},
		{"cargo with a space", "[registries.my]\ntoken = \"Bearer q7Rk2LmZ9\"  # ci\n",
			"[registries.my]\ntoken = \"<1>\"  # ci\n"},
		{"maven", "<server><username>bob</username><password>hunter2</password></server>",
			"<server><username>bob</username><password><1></password></server>"},
		{"gradle", "org.gradle.jvmargs=-Xmx2g\nmavenPassword=hunter2\nsigning.password = x y\n",
			"org.gradle.jvmargs=-Xmx2g\nmavenPassword=<1>\nsigning.password = <2>\n"},
		{"yarn berry", "npmScopes:\n  corp:\n    npmAuthIdent: \"alice:pw\"\n    npmAuthToken: tok\n",
			"npmScopes:\n  corp:\n    npmAuthIdent: \"<1>\"\n    npmAuthToken: <2>\n"},
		{"not credentials", "registry=https://r/\ntoken-helper-path=/x\nkeyfile=/k\n# password=commented\n",
			"registry=https://r/\ntoken-helper-path=/x\nkeyfile=/k\n# password=commented\n"},
		{"no final newline", "password=pw", "password=<1>"},
	}
	for _, tt := range tests {
		n := 0
		got := Redact([]byte(tt.in), func(secret string) string { n++; return fmt.Sprintf("<%d>", n) })
		if string(got) != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// redactFormats are the lines real tools write a credential V in: npmrc,
// yarn berry, git's http.extraHeader, a URL with user info (git remote,
// url.insteadOf, GOPROXY), yarn v1's space-separated pairs, Maven's XML,
// cargo's TOML.
var redactFormats = []string{
	"//registry.example/:_authToken=V",
	"  npmAuthToken: \"V\"",
	"\textraHeader = Authorization: Bearer V",
	"\turl = https://alice:V@git.example/r.git",
	"[url \"https://V@github.com/\"]",
	"GOPROXY=https://u:V@proxy.example,direct",
	"\"//r.example/:_authToken\" V",
	"<password>V</password>",
	"token = 'V'",
}

// FuzzRedact: the user's configuration files are untrusted in shape (a tool
// may have written them). Whatever surrounds it, a credential the fuzzer
// plants in one of redactFormats never comes out of Redact: the check looks
// for the planted value itself, not for what Redact says it found.
func FuzzRedact(f *testing.F) {
	for i := range redactFormats {
		f.Add([]byte("x=1\n[core]"), uint8(i), "q7Rk2LmZ9w", []byte("# end\n"))
	}
	f.Add([]byte("<password>"), uint8(7), "hunter22", []byte("</password>"))
	f.Add([]byte{}, uint8(2), "Zm9vOmJhcg==", []byte{0xff, '\n'})
	plain := regexp.MustCompile(`^[A-Za-z0-9._~+/=-]{4,64}$`)
	f.Fuzz(func(t *testing.T, before []byte, kind uint8, secret string, after []byte) {
		if !plain.MatchString(secret) || bytes.Contains(before, []byte(secret)) || bytes.Contains(after, []byte(secret)) {
			return
		}
		format := redactFormats[int(kind)%len(redactFormats)]
		if strings.Contains(format, "@") && strings.Contains(secret, "/") {
			return // a '/' ends a URL's authority: V is then its path
		}
		line := strings.ReplaceAll(format, "V", secret)
		if strings.Count(line, secret) != 1 {
			return // the value is part of the format's own text
		}
		in := append(append(append(append([]byte{}, before...), '\n'), line...), '\n')
		in = append(in, after...)
		out := Redact(in, func(string) string { return "[REDACTED:x:1]" })
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("planted %q in %q: still in the output %q", secret, line, out)
		}
	})
}

// Render's copies hold placeholders, never the secrets, and the session's
// vault gives each secret back for its own file only.
func TestRender(t *testing.T) {
	home := t.TempDir()
	npmrc := filepath.Join(home, ".npmrc")
	pip := filepath.Join(home, "pip.conf")
	os.WriteFile(npmrc, []byte("//registry.npmjs.org/:_authToken=plainword\n"), 0o600)
	os.WriteFile(pip, []byte("[global]\nindex-url = https://alice:s3cr3tPassw0rd@pypi.example.com/simple\n"), 0o600)
	sc, err := scrub.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	vault := scrub.NewVault()
	dir := t.TempDir()
	copies, err := Render(&View{Scrubbed: []string{npmrc, pip}}, dir, vault, sc)
	if err != nil || len(copies) != 2 {
		t.Fatalf("%+v %v", copies, err)
	}
	for i, secret := range []string{"plainword", "s3cr3tPassw0rd"} {
		c := copies[i]
		b, err := os.ReadFile(c.Source)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) || !strings.Contains(string(b), "[REDACTED:") || c.Secrets != 1 {
			t.Errorf("copy of %s: %q (%d secrets)", c.Target, b, c.Secrets)
		}
		back, n, _ := vault.Restore(b, c.Target)
		if n != 1 || !strings.Contains(string(back), secret) {
			t.Errorf("vault does not restore %s's secret: %q", c.Target, back)
		}
		if _, n, _ := vault.Restore(b, "/elsewhere"); n != 0 {
			t.Errorf("%s's secret restored for another file", c.Target)
		}
	}
	big := filepath.Join(home, "big")
	os.WriteFile(big, make([]byte, maxConfigFile+1), 0o600)
	if _, err := Render(&View{Scrubbed: []string{big}}, dir, vault, sc); !errors.Is(err, catalog.ErrSandbox) {
		t.Errorf("oversized file: %v", err)
	}
}

// A URL's user info keeps the user name and loses the password (the part the
// egress proxy puts back, with the same placeholder a registry gets); a lone
// token, or a token in the user's place before x-oauth-basic, goes whole.
func TestRedactURLUserinfo(t *testing.T) {
	ph := func(s string) string { return "[REDACTED:t:" + s + "]" }
	for _, tt := range []struct{ in, want string }{
		{"index-url = https://alice:s3cretpass@pypi.corp.example/simple", "index-url = https://alice:[REDACTED:t:s3cretpass]@pypi.corp.example/simple"},
		{"url = https://tok123456789@git.example/r.git", "url = https://[REDACTED:t:tok123456789]@git.example/r.git"},
		{"url = https://tok123456789:x-oauth-basic@github.com/r.git", "url = https://[REDACTED:t:tok123456789:x-oauth-basic]@github.com/r.git"},
		{"url = https://alice:${PASS}@host/", "url = https://alice:${PASS}@host/"},
	} {
		if got := string(Redact([]byte(tt.in), ph)); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
