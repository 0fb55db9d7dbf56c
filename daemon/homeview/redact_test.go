package homeview

import (
	"fmt"
	"strings"
	"testing"
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

// FuzzRedact: the user's configuration files are untrusted in shape (a tool
// may have written them); Redact never panics, keeps every line without a
// credential as it was, and never lets a credential value through.
func FuzzRedact(f *testing.F) {
	f.Add([]byte("//r/:_authToken=abc\nx=1\n"))
	f.Add([]byte("<password>p</password>"))
	f.Add([]byte("token = 'q'\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var secrets []string
		out := Redact(b, func(s string) string { secrets = append(secrets, s); return "[REDACTED:x:1]" })
		for _, s := range secrets {
			if len(s) >= 4 && strings.Contains(string(out), s) && !strings.Contains("[REDACTED:x:1]", s) {
				// The same text may appear elsewhere in the file, outside
				// any credential key: only check it left its own place.
				if strings.Count(string(out), s) >= strings.Count(string(b), s) {
					t.Fatalf("secret %q still in %q", s, out)
				}
			}
		}
	})
}
