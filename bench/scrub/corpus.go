// Package scrubbench compares contextd's scrubber (package scrub) with the gitleaks CLI on
// one multi-megabyte corpus: Go source, logs and config files with fake secrets planted
// in real formats. Run it with
//
//	go test ./bench/scrub -run '^$' -bench Scrub -benchtime 1x -v
package scrubbench

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
	"io/fs"
	mrand "math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Planted is a secret put into the corpus, with where it is.
type Planted struct {
	Kind       string
	Start, End int
}

// Corpus is the generated text and what was planted in it.
type Corpus struct {
	Text    []byte
	Planted []Planted
	Parts   map[string]int // bytes per part (go, logs, configs)
}

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper2 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	hexLow = "0123456789abcdef"
	b64url = alnum + "-_"
)

type gen struct {
	r   *mrand.Rand
	out bytes.Buffer
	pl  []Planted
	// keys are generated PEM private keys, reused round-robin (RSA generation is slow).
	keys []string
	nkey int
}

func (g *gen) pick(set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[g.r.Intn(len(set))]
	}
	return string(b)
}

func (g *gen) w(format string, a ...any) { fmt.Fprintf(&g.out, format, a...) }

// plant writes before + secret + after and records the secret's span.
func (g *gen) plant(kind, before, secret, after string) {
	g.out.WriteString(before)
	s := g.out.Len()
	g.out.WriteString(secret)
	g.pl = append(g.pl, Planted{kind, s, g.out.Len()})
	g.out.WriteString(after)
}

// Secret makers, in the formats the services issue.
func (g *gen) aws() string    { return "AKIA" + g.pick(upper2, 16) }
func (g *gen) awsSec() string { return g.pick(alnum+"/+", 40) }
func (g *gen) ghp() string    { return "ghp_" + g.pick(alnum, 36) }
func (g *gen) ghFine() string {
	return "github_pat_" + g.pick(alnum, 22) + "_" + g.pick(alnum, 59)
}
func (g *gen) slack() string {
	return "xoxb-" + g.pick("0123456789", 12) + "-" + g.pick("0123456789", 13) + "-" + g.pick(alnum, 24)
}
func (g *gen) stripe() string { return "sk_live_" + g.pick(alnum, 24) }
func (g *gen) glpat() string  { return "glpat-" + g.pick(b64url, 20) }
func (g *gen) gapi() string   { return "AIza" + g.pick(b64url, 35) }
func (g *gen) npm() string    { return "npm_" + g.pick(alnum, 36) }
func (g *gen) anthropic() string {
	return "sk-ant-api03-" + g.pick(b64url, 93) + "AA"
}
func (g *gen) password() string { return g.pick(alnum+"!#%^*", 12+g.r.Intn(12)) }
func (g *gen) token() string    { return g.pick(alnum, 32+g.r.Intn(16)) }

func (g *gen) jwt() string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT"})
	p, _ := json.Marshal(map[string]any{"sub": g.pick(hexLow, 12), "name": "user" + g.pick("0123456789", 4), "iat": 1700000000 + g.r.Intn(1e6)})
	sig := make([]byte, 32)
	g.r.Read(sig)
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "." + enc.EncodeToString(sig)
}

func (g *gen) pemKey() string {
	k := g.keys[g.nkey%len(g.keys)]
	g.nkey++
	return k
}

// genKeys makes real private keys with crypto/rand: two RSA, a few EC and Ed25519.
func genKeys() ([]string, error) {
	var out []string
	enc := func(typ string, der []byte) {
		out = append(out, strings.TrimSuffix(string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})), "\n"))
	}
	for i := 0; i < 2; i++ {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k))
	}
	for i := 0; i < 3; i++ {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		enc("EC PRIVATE KEY", der)
	}
	_, ek, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(ek)
	if err != nil {
		return nil, err
	}
	enc("PRIVATE KEY", der)
	return out, nil
}

// Generate builds a corpus of about size bytes: roughly half Go source from GOROOT, the
// rest logs and config files. The same seed gives the same text except for the PEM keys,
// which are generated fresh.
func Generate(size int, seed int64) (*Corpus, error) {
	keys, err := genKeys()
	if err != nil {
		return nil, err
	}
	g := &gen{r: mrand.New(mrand.NewSource(seed)), keys: keys}
	parts := map[string]int{}
	goSrc, err := goSource(size / 2)
	if err != nil {
		return nil, err
	}
	// Interleave: a slice of Go source, a log burst, a config file, until full.
	for off := 0; g.out.Len() < size; {
		n := min(len(goSrc)-off, 16<<10+g.r.Intn(32<<10))
		if n > 0 {
			// Cut at a line end.
			if i := bytes.IndexByte(goSrc[off+n:], '\n'); i >= 0 {
				n += i + 1
			} else {
				n = len(goSrc) - off
			}
			g.out.Write(goSrc[off : off+n])
			parts["go"] += n
			off += n
		}
		before := g.out.Len()
		g.logs(60 + g.r.Intn(120))
		parts["logs"] += g.out.Len() - before
		before = g.out.Len()
		g.config()
		parts["configs"] += g.out.Len() - before
	}
	return &Corpus{Text: g.out.Bytes(), Planted: g.pl, Parts: parts}, nil
}

// goSource concatenates GOROOT's .go files (outside testdata) in path order.
func goSource(limit int) ([]byte, error) {
	root := os.Getenv("GOROOT")
	if root == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return nil, fmt.Errorf("go env GOROOT: %w", err)
		}
		root = strings.TrimSpace(string(out))
	}
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var b bytes.Buffer
	// Spread over the tree: every 7th file, so the sample is not all of archive/.
	for i := 0; i < len(files) && b.Len() < limit; i += 7 {
		data, err := os.ReadFile(files[i])
		if err != nil {
			return nil, err
		}
		b.Write(data)
	}
	return b.Bytes(), nil
}

var (
	logPaths  = []string{"/api/v1/items", "/api/v1/users", "/healthz", "/metrics", "/api/v2/orders", "/login", "/static/app.js"}
	logLevels = []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	logMsgs   = []string{"request served", "cache miss", "retrying upstream", "connection reset by peer", "job finished", "scheduled compaction", "token refreshed for session", "key rotation check passed", "secret store reachable", "password policy updated"}
)

func (g *gen) uuid() string {
	h := g.pick(hexLow, 32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

// logs writes n log lines: timestamps, UUIDs, hashes, commit ids and base64 blobs that
// are not secrets, and now and then one that leaks a credential.
func (g *gen) logs(n int) {
	t := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(g.r.Intn(1e6)) * time.Second)
	for i := 0; i < n; i++ {
		t = t.Add(time.Duration(g.r.Intn(5000)) * time.Millisecond)
		ts := t.Format("2006-01-02T15:04:05.000Z")
		switch g.r.Intn(40) {
		case 0:
			g.plant("jwt", ts+" DEBUG auth: Authorization: Bearer ", g.jwt(), "\n")
		case 1:
			g.plant("url-credential", ts+" INFO db: connecting to postgres://app:", g.password()+g.pick("0123456789", 2), "@db.internal:5432/prod?sslmode=require\n")
		case 2:
			g.plant("github-pat", ts+" WARN git: remote https://x-access-token:", g.ghp(), "@github.com/acme/app.git rejected\n")
		case 3:
			g.plant("aws-access-token", ts+" ERROR s3: InvalidAccessKeyId for key ", g.aws(), " (request "+g.uuid()+")\n")
		case 4:
			g.plant("env-credential", ts+" DEBUG env: API_TOKEN=", g.token(), "\n")
		case 5, 6:
			blob := make([]byte, 48+g.r.Intn(64))
			g.r.Read(blob)
			g.w("%s INFO upload: chunk=%d payload=%s\n", ts, g.r.Intn(900), base64.StdEncoding.EncodeToString(blob))
		case 7:
			g.w(`{"ts":"%s","level":"info","msg":"%s","trace_id":"%s","span_id":"%s","duration_ms":%d}`+"\n",
				ts, logMsgs[g.r.Intn(len(logMsgs))], g.pick(hexLow, 32), g.pick(hexLow, 16), g.r.Intn(2000))
		case 8:
			g.w("%s INFO deploy: commit %s image sha256:%s\n", ts, g.pick(hexLow, 40), g.pick(hexLow, 64))
		default:
			g.w("%s %-5s [req=%s] %s %s/%d %d %dms user=%s %s\n", ts, logLevels[g.r.Intn(len(logLevels))], g.uuid(),
				[]string{"GET", "POST", "PUT"}[g.r.Intn(3)], logPaths[g.r.Intn(len(logPaths))], g.r.Intn(10000),
				[]int{200, 200, 200, 201, 304, 404, 500}[g.r.Intn(7)], g.r.Intn(900), []string{"alice", "bob", "carol", "svc-ci"}[g.r.Intn(4)],
				logMsgs[g.r.Intn(len(logMsgs))])
		}
	}
}

// config writes one config file with a few planted secrets.
func (g *gen) config() {
	switch g.r.Intn(6) {
	case 0: // .env
		g.w("# .env for the %s service\nNODE_ENV=production\nPORT=%d\nLOG_LEVEL=info\n", []string{"billing", "search", "auth"}[g.r.Intn(3)], 3000+g.r.Intn(100))
		g.plant("aws-access-token", "AWS_ACCESS_KEY_ID=", g.aws(), "\n")
		g.plant("env-credential", "AWS_SECRET_ACCESS_KEY=", g.awsSec(), "\n")
		g.plant("stripe-access-token", "STRIPE_SECRET_KEY=", g.stripe(), "\n")
		g.plant("env-credential", "export DB_PASSWORD=\"", g.password()+"7", "\"\n")
		g.w("DATABASE_HOST=db.internal\nFEATURE_FLAGS=search,checkout\nSESSION_TTL=3600\n\n")
	case 1: // docker-compose / k8s YAML
		g.w("version: \"3.9\"\nservices:\n  app:\n    image: ghcr.io/acme/app:%d.%d.%d\n    environment:\n", g.r.Intn(3), g.r.Intn(20), g.r.Intn(50))
		g.plant("env-credential", "      REDIS_PASSWORD: ", g.password()+"3", "\n")
		g.plant("gitlab-pat", "      GITLAB_TOKEN: ", g.glpat(), "\n")
		g.plant("url-credential", "      CACHE_URL: redis://:", g.token(), "@cache:6379/0\n")
		g.w("    ports:\n      - \"8080:8080\"\n    healthcheck:\n      test: [\"CMD\", \"curl\", \"-f\", \"http://localhost:8080/healthz\"]\n\n")
	case 2: // JSON settings
		g.w("{\n  \"name\": \"acme-web\",\n  \"version\": \"1.%d.0\",\n", g.r.Intn(30))
		g.plant("gcp-api-key", "  \"googleMapsApiKey\": \"", g.gapi(), "\",\n")
		g.plant("slack-bot-token", "  \"slackBotToken\": \"", g.slack(), "\",\n")
		g.plant("env-credential", "  \"clientSecret\": \"", g.token(), "\",\n")
		g.w("  \"retries\": %d,\n  \"endpoints\": [\"https://api.acme.test\", \"https://cdn.acme.test\"]\n}\n\n", g.r.Intn(5))
	case 3: // .npmrc and a TOML file
		g.plant("npm-access-token", "//registry.npmjs.org/:_authToken=", g.npm(), "\n")
		g.w("[server]\nhost = \"0.0.0.0\"\nport = %d\n\n[auth]\n", 8000+g.r.Intn(100))
		g.plant("env-credential", "secret_key = '", g.token(), "'\n")
		g.plant("github-fine-grained-pat", "github_token = \"", g.ghFine(), "\"\n\n")
	case 4: // a private key in a deploy file
		g.w("# deploy key for %s\n", []string{"staging", "production"}[g.r.Intn(2)])
		g.plant("private-key", "", g.pemKey(), "\n\n")
	default: // INI and a script
		g.w("[database]\nhost = db.internal\nuser = app\n")
		g.plant("env-credential", "password = ", g.password()+"9", "\n")
		g.plant("anthropic-api-key", "\n#!/bin/sh\nexport ANTHROPIC_API_KEY=", g.anthropic(), "\n")
		g.w("curl -s -H \"Content-Type: application/json\" https://api.acme.test/v1/ping\n\n")
	}
}
