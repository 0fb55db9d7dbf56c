package scrub

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	mrand "math/rand"
	"strings"
	"sync"
	"testing"
)

// fakes makes random secrets in the formats services issue.
type fakes struct{ r *mrand.Rand }

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	base32U = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	urlSafe = alnum + "-_"
)

func (f fakes) pick(set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[f.r.Intn(len(set))]
	}
	return string(b)
}

func (f fakes) digits(n int) string { return f.pick("0123456789", n) }

func (f fakes) jwt() string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": f.pick(alnum, 8)})
	p, _ := json.Marshal(map[string]any{"sub": f.pick(alnum, 10), "iat": 1700000000 + f.r.Intn(1e7), "scope": "read write"})
	sig := make([]byte, 64)
	f.r.Read(sig)
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "." + enc.EncodeToString(sig)
}

// pemKeys are real private keys, made once per test binary.
var pemKeys = sync.OnceValue(func() []string {
	var out []string
	add := func(typ string, der []byte) {
		out = append(out, string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})))
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	add("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk))
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, _ := x509.MarshalECPrivateKey(ek)
	add("EC PRIVATE KEY", der)
	_, dk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	der, _ = x509.MarshalPKCS8PrivateKey(dk)
	add("PRIVATE KEY", der)
	return out
})

// family is one kind of secret: make returns the line it appears in and the secret.
type family struct {
	name string
	rule string // the rule Find must name it with ("" for any)
	make func(f fakes) (line, secret string)
}

var families = []family{
	{"aws access key", "aws-access-token", func(f fakes) (string, string) {
		s := "AKIA" + f.pick(base32U, 16)
		return "aws_access_key_id = " + s + "\n", s
	}},
	{"github classic pat", "github-pat", func(f fakes) (string, string) {
		s := "ghp_" + f.pick(alnum, 36)
		return "git clone https://" + s + "@github.com/acme/app.git\n", s
	}},
	{"github fine-grained pat", "github-fine-grained-pat", func(f fakes) (string, string) {
		s := "github_pat_" + f.pick(alnum, 22) + "_" + f.pick(alnum, 59)
		return `GH_TOKEN="` + s + `"` + "\n", s
	}},
	{"slack bot token", "slack-bot-token", func(f fakes) (string, string) {
		s := "xoxb-" + f.digits(12) + "-" + f.digits(13) + "-" + f.pick(alnum, 24)
		return `{"slack": {"bot_token": "` + s + `"}}` + "\n", s
	}},
	{"stripe live key", "stripe-access-token", func(f fakes) (string, string) {
		s := "sk_live_" + f.pick(alnum, 24+f.r.Intn(70))
		return "stripe.api_key = '" + s + "'\n", s
	}},
	{"gitlab pat", "gitlab-pat", func(f fakes) (string, string) {
		s := "glpat-" + f.pick(urlSafe, 20)
		return "  GITLAB_TOKEN: " + s + "\n", s
	}},
	{"google api key", "gcp-api-key", func(f fakes) (string, string) {
		s := "AIza" + f.pick(urlSafe, 35)
		return "maps.googleapis.com/maps/api/js?key=" + s + "\n", s
	}},
	{"npm token", "npm-access-token", func(f fakes) (string, string) {
		s := "npm_" + f.pick(alnum, 36)
		return "//registry.npmjs.org/:_authToken=" + s + "\n", s
	}},
	{"jwt", "jwt", func(f fakes) (string, string) {
		s := f.jwt()
		return "Authorization: Bearer " + s + "\n", s
	}},
	{"anthropic key", "anthropic-api-key", func(f fakes) (string, string) {
		s := "sk-ant-api03-" + f.pick(urlSafe, 93) + "AA"
		return "ANTHROPIC_API_KEY=" + s + "\n", s
	}},
	{"openai project key", "openai-api-key", func(f fakes) (string, string) {
		s := "sk-proj-" + f.pick(urlSafe, 74) + "T3BlbkFJ" + f.pick(urlSafe, 74)
		return "openai.api_key = \"" + s + "\"\n", s
	}},
	{"digitalocean pat", "digitalocean-pat", func(f fakes) (string, string) {
		s := "dop_v1_" + f.pick("0123456789abcdef", 64)
		return "export DIGITALOCEAN_TOKEN=" + s + "\n", s
	}},
	{"sendgrid key", "sendgrid-api-token", func(f fakes) (string, string) {
		s := "SG." + f.pick(urlSafe, 22) + "." + f.pick(urlSafe, 43)
		return "SENDGRID_API_KEY=" + s + "\n", s
	}},
	{"url password", RuleURLCredential, func(f fakes) (string, string) {
		s := f.pick(alnum, 10) + f.digits(3)
		return "DATABASE_URL=postgres://app:" + s + "@db.internal:5432/prod\n", s
	}},
	{"url password, no user", RuleURLCredential, func(f fakes) (string, string) {
		s := f.pick(alnum, 20) + f.digits(2)
		return "connecting to redis://:" + s + "@cache:6379/0\n", s
	}},
	{"env password", "", func(f fakes) (string, string) {
		s := f.pick(alnum+"!#%", 14) + f.digits(2)
		return "export DB_PASSWORD=\"" + s + "\"\n", s
	}},
	{"yaml client secret", "", func(f fakes) (string, string) {
		s := f.pick(alnum, 32)
		return "oauth:\n  client_secret: " + s + "\n", s
	}},
}

func TestFamilies(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(42))}
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			for i := 0; i < 25; i++ {
				line, secret := fam.make(f)
				text := "ok: build started\n" + line + "ok: build finished\n"
				fs := s.Find([]byte(text))
				start := strings.Index(text, secret)
				var hit *Finding
				for k := range fs {
					if fs[k].Start <= start && start+len(secret) <= fs[k].End {
						hit = &fs[k]
					}
				}
				if hit == nil {
					t.Fatalf("secret %q not covered in %q: %+v", secret, text, fs)
				}
				if fam.rule != "" && hit.Rule != fam.rule {
					t.Errorf("rule %q, want %q for %q", hit.Rule, fam.rule, line)
				}
				if hit.Secret != text[hit.Start:hit.End] {
					t.Errorf("Secret %q is not the span %q", hit.Secret, text[hit.Start:hit.End])
				}
				// No more than the secret and its quoting or prefix is hidden.
				if hit.End-hit.Start > len(secret)+8 {
					t.Errorf("span %q much larger than secret %q", hit.Secret, secret)
				}
			}
		})
	}
}

func TestPrivateKeys(t *testing.T) {
	s := newTestScrubber(t)
	for _, key := range pemKeys() {
		text := "deploy key:\n" + key + "done\n"
		fs := s.Find([]byte(text))
		if len(fs) != 1 {
			t.Fatalf("want 1 finding, got %+v", fs)
		}
		block := strings.TrimSuffix(key, "\n")
		if fs[0].Rule != "private-key" || fs[0].Secret != block {
			t.Errorf("want the whole block as private-key, got %s %q", fs[0].Rule, fs[0].Secret)
		}
		out := string(Replace([]byte(text), fs, nil))
		if out != "deploy key:\n[REDACTED:private-key:1]\ndone\n" {
			t.Errorf("replaced: %q", out)
		}
	}
}

func TestFindSortedNonOverlapping(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(1))}
	var b bytes.Buffer
	for i := 0; i < 400; i++ {
		line, _ := families[i%len(families)].make(f)
		b.WriteString(line)
		b.Write(fakeLogs(f.r, 3))
	}
	// Overlaps on purpose: a GitHub token that is also a URL password and a generic value.
	b.WriteString("api_token = https://user:ghp_" + f.pick(alnum, 36) + "@github.com\n")
	fs := s.Find(b.Bytes())
	if len(fs) < 400 {
		t.Fatalf("only %d findings", len(fs))
	}
	for i, x := range fs {
		if x.Start >= x.End || x.Secret != b.String()[x.Start:x.End] {
			t.Fatalf("bad finding %+v", x)
		}
		if i > 0 && fs[i-1].End > x.Start {
			t.Fatalf("findings overlap or are unsorted: %+v %+v", fs[i-1], x)
		}
	}
	last := fs[len(fs)-1]
	if last.Rule != "github-pat" {
		t.Errorf("overlap should be named after the most specific rule, got %+v", last)
	}
}

// TestFindConcurrent runs Find from many goroutines on inputs big enough to use the
// workers (run with -race).
func TestFindConcurrent(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(3))}
	var b bytes.Buffer
	for b.Len() < parallelMin+100<<10 {
		line, _ := families[f.r.Intn(len(families))].make(f)
		b.WriteString(line)
		b.Write(fakeLogs(f.r, 20))
	}
	want := fmt.Sprint(s.Find(b.Bytes()))
	fresh := newTestScrubber(t) // compiles rules concurrently below
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := fmt.Sprint(fresh.Find(b.Bytes())); got != want {
				t.Error("concurrent Find differs")
			}
		}()
	}
	wg.Wait()
}

func TestIdempotent(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(5))}
	var b bytes.Buffer
	for _, fam := range families {
		line, _ := fam.make(f)
		b.WriteString(line)
	}
	for _, k := range pemKeys() {
		b.WriteString(k)
	}
	v := NewVault()
	once, fs := v.Scrub(s, b.Bytes(), "")
	if len(fs) < len(families) {
		t.Fatalf("only %d findings", len(fs))
	}
	if again := s.Find(once); len(again) != 0 {
		t.Fatalf("Find on scrubbed text found %+v in\n%s", again, once)
	}
	twice, _ := v.Scrub(s, once, "")
	if !bytes.Equal(once, twice) {
		t.Fatal("scrubbing twice changed the text")
	}
}

func TestPlaceholdersAreNotSecrets(t *testing.T) {
	s := newTestScrubber(t)
	for _, text := range []string{
		"API_KEY=[REDACTED:generic-api-key:1]",
		`"clientSecret": "[REDACTED:contextd-env-credential:12]"`,
		"postgres://app:[REDACTED:contextd-url-credential:3]@db/x",
		"token: [REDACTED:github-pat:7]\npassword = [REDACTED:contextd-env-credential:123456]",
		"secret_key = '[REDACTED:generic-api-key:99999999]'",
	} {
		if fs := s.Find([]byte(text)); len(fs) != 0 {
			t.Errorf("%q: placeholders reported: %+v", text, fs)
		}
	}
	// A secret glued to a placeholder is still found, without the placeholder.
	text := "token=[REDACTED:x:1]ghp_" + fakes{mrand.New(mrand.NewSource(9))}.pick(alnum, 36)
	fs := s.Find([]byte(text))
	if len(fs) != 1 || fs[0].Start != strings.Index(text, "ghp_") {
		t.Errorf("got %+v", fs)
	}
}

func TestReplace(t *testing.T) {
	b := []byte("a=SECRET1 b=SECRET2 c")
	fs := []Finding{{Rule: "r", Start: 2, End: 9, Secret: "SECRET1"}, {Rule: "q", Start: 12, End: 19, Secret: "SECRET2"}}
	if got := string(Replace(b, fs, nil)); got != "a=[REDACTED:r:1] b=[REDACTED:q:2] c" {
		t.Errorf("default names: %q", got)
	}
	if got := string(Replace(b, fs, func(f Finding) string { return "<" + f.Rule + ">" })); got != "a=<r> b=<q> c" {
		t.Errorf("custom names: %q", got)
	}
	if got := string(Replace(b, nil, nil)); got != string(b) {
		t.Errorf("no findings: %q", got)
	}
}

// benchText is typical tool output: logs, some Go source and a few secrets.
func benchText(b *testing.B, size int) []byte {
	f := fakes{mrand.New(mrand.NewSource(99))}
	src := goSourceSample(b, size/2)
	var buf bytes.Buffer
	for off := 0; buf.Len() < size; {
		n := min(len(src)-off, 2000)
		buf.Write(src[off : off+n])
		off = (off + n) % (len(src) - 1)
		buf.Write(fakeLogs(f.r, 10))
		line, _ := families[f.r.Intn(len(families))].make(f)
		buf.WriteString(line)
	}
	return buf.Bytes()[:size]
}

func BenchmarkFind(b *testing.B) {
	for _, size := range []int{2 << 10, 64 << 10, 4 << 20} {
		for _, workers := range []int{1, 0} {
			text := benchText(b, size)
			s, err := New(&Options{Workers: workers})
			if err != nil {
				b.Fatal(err)
			}
			s.Find(text)
			b.Run(fmt.Sprintf("%dKiB/workers=%d", size>>10, s.workers), func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for i := 0; i < b.N; i++ {
					s.Find(text)
				}
			})
		}
	}
}

func BenchmarkNew(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := New(nil); err != nil {
			b.Fatal(err)
		}
	}
}
