package scrub

import (
	"bytes"
	"encoding/base64"
	"fmt"
	mrand "math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestScrubber(t testing.TB) *Scrubber {
	t.Helper()
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// goSourceSample returns up to n bytes of Go source from GOROOT (net/http), as ordinary
// text to hide secrets in.
func goSourceSample(t testing.TB, n int) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goroot(t), "src", "net", "http", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go source under GOROOT %q: %v", goroot(t), err)
	}
	sort.Strings(files)
	var b bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		if b.Len() >= n {
			break
		}
	}
	return b.Bytes()
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

var (
	logLevels = []string{"INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	logWords  = []string{"request served", "cache miss", "retrying upstream", "token refreshed for session",
		"key rotation check passed", "secret store reachable", "password policy updated", "job finished",
		"connection reset by peer", "auth ok", "api call", "access granted"}
)

// fakeLogs writes n log lines with what makes logs look random without being secret:
// timestamps, UUIDs, SHA-256 hashes, git commit ids, request ids, base64 payloads.
func fakeLogs(r *mrand.Rand, n int) []byte {
	hexs := func(k int) string {
		const h = "0123456789abcdef"
		b := make([]byte, k)
		for i := range b {
			b[i] = h[r.Intn(16)]
		}
		return string(b)
	}
	uuid := func() string {
		x := hexs(32)
		return x[:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:]
	}
	var b bytes.Buffer
	t := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		t = t.Add(time.Duration(r.Intn(3000)) * time.Millisecond)
		ts := t.Format(time.RFC3339Nano)
		switch r.Intn(8) {
		case 0:
			blob := make([]byte, 24+r.Intn(64))
			r.Read(blob)
			fmt.Fprintf(&b, "%s INFO upload: payload=%s\n", ts, base64.StdEncoding.EncodeToString(blob))
		case 1:
			fmt.Fprintf(&b, "%s INFO deploy: commit %s image sha256:%s\n", ts, hexs(40), hexs(64))
		case 2:
			fmt.Fprintf(&b, `{"ts":"%s","level":"info","msg":"%s","trace_id":"%s","span_id":"%s"}`+"\n", ts, logWords[r.Intn(len(logWords))], hexs(32), hexs(16))
		case 3:
			fmt.Fprintf(&b, "%s WARN git: HEAD is now at %s Merge pull request #%d from acme/feature-%d\n", ts, hexs(7), r.Intn(9000), r.Intn(500))
		case 4:
			fmt.Fprintf(&b, "%s DEBUG cache: key=user:%d:profile etag=\"%s\" ttl=%ds\n", ts, r.Intn(1e6), hexs(32), r.Intn(3600))
		default:
			fmt.Fprintf(&b, "%s %-5s [req=%s] GET /api/v1/items/%d 200 %dms %s\n", ts, logLevels[r.Intn(len(logLevels))], uuid(), r.Intn(1e5), r.Intn(900), logWords[r.Intn(len(logWords))])
		}
	}
	return b.Bytes()
}

func newRand(seed int64) *mrand.Rand { return mrand.New(mrand.NewSource(seed)) }

// mustCompileEncodings is gitleaks' encodings pattern (detect/codec/encodings.go), with
// the end of a line standing for the end of the text.
func mustCompileEncodings() *regexp.Regexp {
	return regexp.MustCompile(`(%[0-9A-Fa-f]{2}(?:.*%[0-9A-Fa-f]{2})?)` +
		`|((?:(?:U\+[a-fA-F0-9]{4}(?:[ \t\r\f]|$))+|(?i)(?:\\{1,2}u[a-fA-F0-9]{4})+))` +
		`|([0-9A-Fa-f]{32,})` +
		`|([\w\/+-]{16,}={0,2})`)
}

func mustParse(t testing.TB, re string) *syntax.Regexp {
	t.Helper()
	tree, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// goroot is `go env GOROOT`: the standard library's source is the ordinary text the
// false-positive tests scan.
func goroot(t testing.TB) string {
	t.Helper()
	gorootOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			gorootErr = err
			return
		}
		gorootDir = strings.TrimSpace(string(out))
	})
	if gorootErr != nil || gorootDir == "" {
		t.Fatalf("go env GOROOT: %v", gorootErr)
	}
	return gorootDir
}

var (
	gorootOnce sync.Once
	gorootDir  string
	gorootErr  error
)
