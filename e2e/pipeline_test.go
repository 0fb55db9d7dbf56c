//go:build e2e

package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// randomFrom returns n characters drawn from set.
func randomFrom(t *testing.T, set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			t.Fatal(err)
		}
		b[i] = set[k.Int64()]
	}
	return string(b)
}

const (
	alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	upnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

// plantedSecrets builds a .env-style file with fresh secrets in real formats
// (new ones every run), and returns it with the secret values.
func plantedSecrets(t *testing.T) (string, []string) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	secrets := []string{
		"ghp_" + randomFrom(t, alnum, 36),
		"AKIA" + randomFrom(t, upnum, 16),
		randomFrom(t, alnum, 28),
		randomFrom(t, alnum, 18),
		"xoxb-" + randomFrom(t, "0123456789", 12) + "-" + randomFrom(t, "0123456789", 13) + "-" + randomFrom(t, alnum, 24),
		"glpat-" + randomFrom(t, alnum, 20),
	}
	file := fmt.Sprintf(`# service settings
APP_NAME=billing
GITHUB_TOKEN=%s
AWS_ACCESS_KEY_ID=%s
DB_PASSWORD=%s
DATABASE_URL=postgres://admin:%s@db.internal:5432/app
SLACK_BOT_TOKEN=%s
GITLAB_TOKEN=%s
LOG_LEVEL=info
%s# end
`, secrets[0], secrets[1], secrets[2], secrets[3], secrets[4], secrets[5], pemKey)
	body := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(pemKey, "-----BEGIN RSA PRIVATE KEY-----"), "-----END RSA PRIVATE KEY-----\n"))
	secrets = append(secrets, strings.Split(body, "\n")[3]) // any line of the key body
	return file, secrets
}

// writeProjectFile puts content at rel in the project, as the test user.
func writeProjectFile(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(env.project, rel)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, env.uid, env.uid); err != nil {
		t.Fatal(err)
	}
}

func noSecrets(t *testing.T, what, out string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%s: secret %q leaked:\n%s", what, s, out)
		}
	}
	if !strings.Contains(out, "[REDACTED:") {
		t.Errorf("%s: no placeholder in:\n%s", what, out)
	}
}

// envelope is the proxy's --format json output.
type envelope struct {
	Data       string `json:"data"`
	TokensUsed int64  `json:"tokens_used"`
	HasMore    bool   `json:"has_more"`
	Truncated  bool   `json:"truncated"`
	Continue   string `json:"continue"`
	ExitCode   *int   `json:"exit_code"`
	Warnings   []string
	Error      *struct{ Code, Message string }
}

func jsonTool(t *testing.T, vars []string, name, stdin string, args ...string) envelope {
	t.Helper()
	link := filepath.Join(env.project, ".claude", "tools", name, name)
	r := runAs(t, "", vars, stdin, append([]string{link, "--format", "json"}, args...)...)
	var e envelope
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
		t.Fatalf("%s %v: not an envelope: %v\n%s", name, args, err, r)
	}
	return e
}

// pageThrough fetches the pages from ref on, in order, in one shell run as
// the test user (each runAs costs about 0.4 s of harness, more than a call),
// up to max pages; it stops after a page that has no next one, an error
// included.
func pageThrough(t *testing.T, vars []string, name, ref string, max int) []envelope {
	t.Helper()
	link := filepath.Join(env.project, ".claude", "tools", name, name)
	script := `ref=$1 n=0
while [ -n "$ref" ] && [ "$n" -lt ` + strconv.Itoa(max) + ` ]; do
  out=$("$0" --format json --continue "$ref")
  printf '%s\n' "$out"
  ref=$(printf '%s' "$out" | sed -n 's/.*"continue":"\([^"]*\)".*/\1/p')
  n=$((n+1))
done`
	r := runAs(t, "", vars, "", "bash", "-c", script, link, ref)
	var out []envelope
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e envelope
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("page %d: not an envelope: %v\n%.300s", len(out), err, line)
		}
		out = append(out, e)
	}
	if len(out) == max && out[len(out)-1].Continue != "" {
		t.Fatalf("more than %d pages", max)
	}
	return out
}

// safe_read and safe_bash never return a planted secret: placeholders only,
// the same placeholder for the same secret.
func TestScrubbedResults(t *testing.T) {
	file, secrets := plantedSecrets(t)
	writeProjectFile(t, "secrets.env", file)

	r := tool(t, "safe_read", "", "secrets.env")
	mustCode(t, r, 0)
	noSecrets(t, "safe_read", r.stdout, secrets)
	if strings.Count(r.stdout, "PRIVATE KEY") > 0 && !strings.Contains(r.stdout, "[REDACTED:private-key") {
		t.Errorf("the PEM key was not replaced whole:\n%s", r.stdout)
	}

	b := tool(t, "safe_bash", "", "cat secrets.env; env")
	mustCode(t, b, 0)
	noSecrets(t, "safe_bash cat; env", b.stdout, secrets)
	ph := regexp.MustCompile(`GITHUB_TOKEN=(\[REDACTED:[^\]]+\])`)
	m1, m2 := ph.FindStringSubmatch(r.stdout), ph.FindStringSubmatch(b.stdout)
	if m1 == nil || m2 == nil {
		t.Fatalf("no GITHUB_TOKEN placeholder:\n%s\n%s", r.stdout, b.stdout)
	}

	// Secrets in a command's own text are not echoed back in errors.
	bad := tool(t, "safe_bash", "", "--timeout", "100000", "--", "echo "+secrets[0])
	noLeak := bad.stdout + bad.stderr
	if strings.Contains(noLeak, secrets[0]) {
		t.Errorf("a refused call echoed its secret: %s", bad)
	}
}

// An agent reads a .env, edits one line and writes it back: the secrets it
// never saw are back on disk, byte for byte; a placeholder from elsewhere is
// written as it is, with a warning.
func TestRedactionRoundTrip(t *testing.T) {
	file, secrets := plantedSecrets(t)
	writeProjectFile(t, "app.env", file)
	sess := []string{"CONTEXTD_SESSION=e2e-roundtrip"}
	e := jsonTool(t, sess, "safe_read", "", "app.env")
	noSecrets(t, "safe_read", e.Data, secrets)
	var plain strings.Builder
	for _, line := range strings.SplitAfter(e.Data, "\n") {
		if _, rest, ok := strings.Cut(line, "\t"); ok {
			plain.WriteString(rest)
		}
	}
	edited := strings.Replace(plain.String(), "LOG_LEVEL=info", "LOG_LEVEL=debug", 1)
	w := jsonTool(t, sess, "safe_write", edited, "app.env")
	if w.Error != nil {
		t.Fatalf("safe_write: %+v", w.Error)
	}
	got, err := os.ReadFile(filepath.Join(env.project, "app.env"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(file, "LOG_LEVEL=info", "LOG_LEVEL=debug", 1); string(got) != want {
		t.Fatalf("round trip not byte-exact:\n%q\nwant\n%q", got, want)
	}

	// The same placeholders written to another file stay placeholders.
	w = jsonTool(t, sess, "safe_write", edited, "copy.env")
	out, _ := os.ReadFile(filepath.Join(env.project, "copy.env"))
	noSecrets(t, "copy.env", string(out), secrets)
	if len(w.Warnings) == 0 {
		t.Errorf("no warning about placeholders written as they are: %+v", w)
	}
}

// A 10 MB output comes back within the budget, with its head, a marker and
// its tail; the pages, fetched one by one, reassemble it exactly.
func TestLargeOutputPages(t *testing.T) {
	const n = 1500000 // seq 1..n is 10.9 MB
	// The harness runs each call from a new process: the calls name their
	// session, as an agent's calls share theirs.
	sess := []string{"CONTEXTD_SESSION=e2e-pages"}
	first := jsonTool(t, sess, "safe_bash", "", fmt.Sprintf("seq 1 %d", n))
	if !first.Truncated || !first.HasMore || first.Continue == "" {
		t.Fatalf("10 MB output not truncated: truncated=%v has_more=%v continue=%q", first.Truncated, first.HasMore, first.Continue)
	}
	if first.TokensUsed <= 0 || first.TokensUsed > 100000 {
		t.Fatalf("tokens_used %d, budget 100000", first.TokensUsed)
	}
	if !strings.HasPrefix(first.Data, "1\n2\n3\n") || !strings.HasSuffix(first.Data, fmt.Sprintf("%d\n", n)) || !strings.Contains(first.Data, "--continue") {
		t.Fatalf("first response is not head, marker, tail: %q … %q", first.Data[:40], first.Data[len(first.Data)-40:])
	}
	var all strings.Builder
	pages := 0
	for _, p := range pageThrough(t, sess, "safe_bash", first.Continue, 500) {
		if p.Error != nil {
			t.Fatalf("page %d: %+v", pages, p.Error)
		}
		if p.TokensUsed > 100000 {
			t.Fatalf("page %d: %d tokens, over budget", pages, p.TokensUsed)
		}
		all.WriteString(p.Data)
		pages++
	}
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if all.String() != want.String() {
		t.Fatalf("%d pages reassemble to %d bytes, want %d", pages, all.Len(), want.Len())
	}
	t.Logf("10.9 MB: first response %d tokens, %d pages", first.TokensUsed, pages)

	// Another session cannot read them.
	other := jsonTool(t, []string{"CONTEXTD_SESSION=e2e-intruder"}, "safe_bash", "", "--continue", first.Continue)
	if other.Error == nil || other.Error.Code != "CTXD-E040" {
		t.Fatalf("another session read the pages: %+v", other)
	}
}

// safe_read of a long file: the first response is head, marker and tail
// within the default budget; the middle never left the sandbox, and its pages
// are read again from the file in the sandbox, scrubbed, and reassemble to
// the numbered file with placeholders for the planted secrets. Once the
// middle of the file changes, its pages are refused with the reason.
func TestLongReadPages(t *testing.T) {
	secretsFile, secrets := plantedSecrets(t)
	var b strings.Builder
	for i := 0; b.Len() < 150<<10; i++ {
		fmt.Fprintf(&b, "%d: request served in %d ms\n", i, i%113)
		if i == 2000 {
			b.WriteString(secretsFile) // the middle: in no first response
		}
	}
	file := b.String()
	writeProjectFile(t, "long-read.txt", file)
	sess := []string{"CONTEXTD_SESSION=e2e-long-read"}
	first := jsonTool(t, sess, "safe_read", "", "long-read.txt")
	if first.Error != nil || !first.Truncated || first.Continue == "" || first.TokensUsed > 2000 {
		t.Fatalf("first response: %+v", first.Error)
	}
	if !strings.HasPrefix(first.Data, "     1\t0: request") || !strings.Contains(first.Data, "left out ... the full output, page by page: safe_read --continue "+first.Continue) {
		t.Fatalf("first response is not head and marker:\n%.300s", first.Data)
	}
	lines := strings.Split(strings.TrimSuffix(file, "\n"), "\n")
	if last := fmt.Sprintf("%6d\t%s\n", len(lines), lines[len(lines)-1]); !strings.HasSuffix(first.Data, last) {
		t.Fatalf("first response does not end with %q", last)
	}
	var all strings.Builder
	pages := 0
	for _, p := range pageThrough(t, sess, "safe_read", first.Continue, 200) {
		if p.Error != nil || p.TokensUsed > 2000 {
			t.Fatalf("page %d: %d tokens, %+v", pages, p.TokensUsed, p.Error)
		}
		all.WriteString(p.Data)
		pages++
	}
	noSecrets(t, "the pages of a long read", all.String(), secrets)
	var want strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&want, "%6d\t%s\n", i+1, l)
	}
	got := regexp.MustCompile(`\[REDACTED:[a-z0-9-]+:[0-9]+\]`).ReplaceAllString(all.String(), "<secret>")
	wantMasked := want.String()
	for _, s := range secrets[:6] {
		wantMasked = strings.ReplaceAll(wantMasked, s, "<secret>")
	}
	// The key's placeholder stands for all its numbered lines.
	wantMasked = regexp.MustCompile(`(?s)-----BEGIN RSA PRIVATE KEY-----.*?-----END RSA PRIVATE KEY-----`).ReplaceAllString(wantMasked, "<secret>")
	if got != wantMasked {
		g, w := strings.Split(got, "\n"), strings.Split(wantMasked, "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("%d pages: line %d is %q, want %q", pages, i+1, g[i], w[i])
			}
		}
		t.Fatalf("%d pages: %d lines, want %d", pages, len(g), len(w))
	}
	t.Logf("%d bytes, %d lines: first response %d tokens, %d pages", len(file), len(lines), first.TokensUsed, pages)

	// A page of the middle after the middle changed: refused, and why.
	second := jsonTool(t, sess, "safe_read", "", "long-read.txt")
	mustCode(t, userSh(t, "sed -i 's/^3000: request/3000: REQUEST/' "+shq(filepath.Join(env.project, "long-read.txt"))), 0)
	var refused *struct{ Code, Message string }
	for _, p := range pageThrough(t, sess, "safe_read", second.Continue, 200) { // through the head, into the middle
		if p.Error != nil {
			refused = p.Error
		}
	}
	if refused == nil || refused.Code != "CTXD-E040" || !strings.Contains(refused.Message, "changed since it was read") {
		t.Fatalf("the pages of a file changed in the middle: %+v", refused)
	}
}

// The audit log verifies; an edited or a deleted record makes it fail.
func TestAuditVerify(t *testing.T) {
	// Three records of this test's own, found by their session: the edits
	// below change what surely is there, wherever the log's files begin.
	sess := "e2e-audit-" + randomFrom(t, "abcdefghij", 8)
	link := filepath.Join(env.project, ".claude/tools/safe_bash/safe_bash")
	for range 3 {
		mustCode(t, runAs(t, "", []string{"CONTEXTD_SESSION=" + sess}, "", link, "true"), 0)
	}
	ok := runAs(t, env.home, nil, "", env.bin+"/contextd", "audit", "verify")
	mustCode(t, ok, 0)

	for _, c := range []struct{ name, pick, edit string }{
		// The last of the three: its tool.
		{"edited", "tail -1", `sed -i "${n}s/\"tool\":\"safe_bash\"/\"tool\":\"safe_write\"/" "$f"`},
		// The middle one, whole.
		{"deleted", "sed -n 2p", `sed -i "${n}d" "$f"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp := userSh(t, `set -e; d=$(mktemp -d); echo "$d"
cp -r ~/.local/state/contextd/audit/. "$d"
IFS=: read -r f n _ < <(grep -HnF '"session":"`+sess+`"' "$d"/*.jsonl | `+c.pick+`)
was=$(sha256sum < "$f")
`+c.edit+`
if [ "$(sha256sum < "$f")" = "$was" ]; then echo "the edit changed nothing in $f" >&2; exit 3; fi`)
			dir := strings.TrimSpace(strings.SplitN(cp.stdout, "\n", 2)[0])
			if strings.HasPrefix(dir, "/tmp/") {
				t.Cleanup(func() { userSh(t, "rm -rf "+shq(dir)) })
			}
			mustCode(t, cp, 0)
			r := runAs(t, env.home, nil, "", env.bin+"/contextd", "audit", "verify", "--dir", dir)
			if r.code == 0 {
				t.Fatalf("verify passed after a record was %s:\n%s", c.name, r)
			}
		})
	}
}
