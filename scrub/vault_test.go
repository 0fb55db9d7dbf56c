package scrub

import (
	"bytes"
	mrand "math/rand"
	"strings"
	"sync"
	"testing"
)

func TestVaultRoundTrip(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(31))}
	var b bytes.Buffer
	for _, fam := range families {
		line, _ := fam.make(f)
		b.WriteString(line)
	}
	b.WriteString(pemKeys()[2])
	orig := b.Bytes()
	v := NewVault()
	scrubbed, fs := v.Scrub(s, orig, "/srv/app/.env")
	if len(fs) < len(families) {
		t.Fatalf("only %d findings", len(fs))
	}
	for _, x := range fs {
		if bytes.Contains(scrubbed, []byte(x.Secret)) {
			t.Fatalf("secret %q still in scrubbed text", x.Secret)
		}
	}
	// The agent edits the file around the placeholders and writes it back.
	edited := append([]byte("# edited by the agent\n"), scrubbed...)
	out, restored, unresolved := v.Restore(edited, "/srv/app/.env")
	if !bytes.Equal(out, append([]byte("# edited by the agent\n"), orig...)) {
		t.Fatalf("restore is not byte-exact:\n%s", out)
	}
	if restored != len(fs) || len(unresolved) != 0 {
		t.Fatalf("restored %d of %d, unresolved %v", restored, len(fs), unresolved)
	}
	// Written to another file, nothing is put back.
	out, restored, unresolved = v.Restore(scrubbed, "/tmp/elsewhere")
	if !bytes.Equal(out, scrubbed) || restored != 0 || len(unresolved) != len(fs) {
		t.Fatalf("foreign source: restored %d, unresolved %d of %d", restored, len(unresolved), len(fs))
	}
}

func TestVaultNumbering(t *testing.T) {
	v := NewVault()
	a := v.Placeholder("github-pat", "ghp_A", "")
	b := v.Placeholder("aws-access-token", "AKIA_B", "f")
	if a != "[REDACTED:github-pat:1]" || b != "[REDACTED:aws-access-token:2]" {
		t.Fatalf("got %s %s", a, b)
	}
	if again := v.Placeholder("generic-api-key", "ghp_A", "g"); again != a {
		t.Fatalf("same secret, new placeholder %s", again)
	}
	if v.Len() != 2 {
		t.Fatalf("Len %d", v.Len())
	}
	// The secret was seen in "" and "g": both may restore it.
	for _, src := range []string{"", "g"} {
		if out, n, _ := v.Restore([]byte("x "+a+" y"), src); string(out) != "x ghp_A y" || n != 1 {
			t.Errorf("source %q: %q", src, out)
		}
	}
	if _, n, un := v.Restore([]byte(a), "f"); n != 0 || len(un) != 1 {
		t.Errorf("source f should not restore %s", a)
	}
	// Rule ids that cannot sit in a placeholder are made to fit.
	if p := v.Placeholder("my rule:v2]", "s3", ""); !IsPlaceholder(p) {
		t.Errorf("%q is not a placeholder", p)
	}
}

func TestVaultUnknownPlaceholders(t *testing.T) {
	v := NewVault()
	p := v.Placeholder("r", "secret-1", "a")
	text := "keep [REDACTED:r:99] and " + p + " and [REDACTED:r:99] and [REDACTED:nope] " + p
	out, n, un := v.Restore([]byte(text), "a")
	want := "keep [REDACTED:r:99] and secret-1 and [REDACTED:r:99] and [REDACTED:nope] secret-1"
	if string(out) != want || n != 2 {
		t.Fatalf("got %q, %d", out, n)
	}
	if len(un) != 1 || un[0] != "[REDACTED:r:99]" {
		t.Fatalf("unresolved %v", un)
	}
}

func TestVaultConcurrent(t *testing.T) {
	v := NewVault()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				secret := strings.Repeat("x", i%50+1)
				p := v.Placeholder("r", secret, "")
				if out, _, _ := v.Restore([]byte(p), ""); string(out) != secret {
					t.Errorf("%s -> %q", p, out)
				}
			}
		}()
	}
	wg.Wait()
	if v.Len() != 50 {
		t.Fatalf("Len %d, want 50", v.Len())
	}
}

func TestPlaceholderSyntax(t *testing.T) {
	for s, want := range map[string]bool{
		"[REDACTED:github-pat:1]":    true,
		"[REDACTED:a.b_c-d:1234]":    true,
		"[REDACTED:github-pat:0]":    false,
		"[REDACTED:github-pat:]":     false,
		"[REDACTED::1]":              false,
		"[REDACTED:github pat:1]":    false,
		"[REDACTED:github-pat:1":     false,
		"x[REDACTED:github-pat:1]":   false,
		"[REDACTED:github-pat:1] ":   false,
		"[redacted:github-pat:1]":    false,
		"[REDACTED:github-pat:12x]":  false,
		"[REDACTED:r:1234567890123]": false,
		"[REDACTED:r:123456789012]":  true,
		"[REDACTED:private-key:7]":   true,
		"[REDACTED:private-key:7]\n": false,
		"":                           false,
	} {
		if got := IsPlaceholder(s); got != want {
			t.Errorf("IsPlaceholder(%q) = %v", s, got)
		}
	}
	rule, n, ok := ParsePlaceholder("[REDACTED:a:b:12]")
	if ok {
		t.Errorf("parsed an invalid placeholder: %s %d", rule, n)
	}
	rule, n, ok = ParsePlaceholder("[REDACTED:aws-access-token:12]")
	if !ok || rule != "aws-access-token" || n != 12 {
		t.Errorf("got %s %d %v", rule, n, ok)
	}
	text := []byte("a [REDACTED:x:1][REDACTED:y:2] [REDACTED:bad b [REDACTED:z:3]")
	if got := FindPlaceholders(text); len(got) != 3 || string(text[got[2][0]:got[2][1]]) != "[REDACTED:z:3]" {
		t.Errorf("FindPlaceholders: %v", got)
	}
}

// RestoreFile puts back only secrets tied to the file named, nothing for
// "" (a file the vault knows no identity of), and says which it put back;
// Bind and Opened carry them to the file a write made.
func TestVaultRestoreFile(t *testing.T) {
	v := NewVault()
	a := v.Placeholder("r", "secret-a", "1:10:/w/.env")
	b := v.Placeholder("r", "secret-b", "") // seen in command output
	text := []byte(a + " " + b + " " + a)
	if out, put, un := v.RestoreFile(text, ""); string(out) != string(text) || len(put) != 0 || len(un) != 2 {
		t.Fatalf("no file: %q put %v unresolved %v", out, put, un)
	}
	out, put, un := v.RestoreFile(text, "1:10:/w/.env")
	if string(out) != "secret-a "+b+" secret-a" || len(put) != 1 || put[0] != a || len(un) != 1 || un[0] != b {
		t.Fatalf("the file read: %q put %v unresolved %v", out, put, un)
	}
	if out, put, _ := v.RestoreFile(text, "1:11:/w/.env"); string(out) != string(text) || len(put) != 0 {
		t.Fatalf("another inode under the same path: %q put %v", out, put)
	}
	v.Opened("/w/.env", "1:10:/w/.env")
	if got := v.FileOf("/w/.env"); got != "1:10:/w/.env" {
		t.Fatalf("FileOf: %q", got)
	}
	v.Bind(put, "1:12:/w/.env")
	if out, _, _ := v.RestoreFile([]byte(a), "1:12:/w/.env"); string(out) != "secret-a" {
		t.Fatalf("after Bind: %q", out)
	}
	if out, _, _ := v.RestoreFile([]byte(b), "1:12:/w/.env"); string(out) != b {
		t.Fatalf("Bind gave the new file a secret it was not given: %q", out)
	}
}
