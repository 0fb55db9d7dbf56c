package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/internal/syncbuf"
	"github.com/contextd/contextd/sandboxinfo"
)

// auditLog writes n calls to a log in a new directory. Every third call is a
// safe_read of session s2; the others are safe_bash of session s1.
func auditLog(t *testing.T, n int) (string, *audit.Log) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := audit.Open(&audit.Options{Dir: dir, Journal: audit.JournalOff, MaxFileSize: 4000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := 1; i <= n; i++ {
		appendCall(t, l, i)
	}
	return dir, l
}

func appendCall(t *testing.T, l *audit.Log, i int) {
	t.Helper()
	r := &audit.Record{
		PeerPID: 100, PeerUID: 1000, PeerExe: "/usr/bin/agent",
		Session: "s1", Tool: "safe_bash", Args: json.RawMessage(fmt.Sprintf(`{"command":"echo %d"}`, i)),
		Cwd: "/w", Workspace: "/w",
		Sandbox:    audit.Sandbox{Layers: sandboxinfo.Layers{Namespaces: true, Seccomp: "safe_bash", ScopeNote: "no systemd user manager"}},
		DurationMS: 5, BytesProduced: 10, TokensReturned: 3,
		Findings: map[string]int{"github-pat": 2},
	}
	if i%3 == 0 {
		r.Tool, r.Session = "safe_read", "s2"
	}
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
}

// runAudit runs `contextd audit ARGS...` through the real command tree.
func runAudit(ctx context.Context, stdout, stderr *syncbuf.Buffer, args ...string) error {
	root := Command()
	if c, _, err := root.Find([]string{"audit"}); err != nil || c == root {
		root.AddCommand(auditCommand()) // until app.go adds it
	}
	root.SetArgs(append([]string{"audit"}, args...))
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut syncbuf.Buffer
	err := runAudit(context.Background(), &out, &errOut, args...)
	return out.String(), errOut.String(), err
}

func TestAuditVerify(t *testing.T) {
	dir, l := auditLog(t, 30)
	out, _, err := run(t, "verify", "--dir", dir)
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "ok  "+dir+": 30 records, seq 1-30 in ") {
		t.Errorf("verify output: %q", out)
	}
	l.Close()

	// Edit one record: verify fails, naming the file and line.
	files, _ := filepath.Glob(filepath.Join(dir, "audit-*.jsonl"))
	b, _ := os.ReadFile(files[1])
	lines := strings.SplitAfter(string(b), "\n")
	lines[1] = strings.Replace(lines[1], "echo", "curl", 1)
	os.WriteFile(files[1], []byte(strings.Join(lines, "")), 0o600)

	out, _, err = run(t, "verify", "--dir", dir)
	if !errors.Is(err, errAuditDamaged) || catalog.ExitCode(err) == 0 {
		t.Fatalf("verify of an edited log = %v", err)
	}
	where := filepath.Base(files[1]) + ":2: seq "
	if !strings.Contains(err.Error(), where) || !strings.Contains(out, "FAIL     "+where) || !strings.Contains(out, "the record was changed") {
		t.Errorf("error %q / output %q do not name %s", err, out, where)
	}

	// Delete the last line: verify says records are missing at the end.
	dir2, l2 := auditLog(t, 5)
	l2.Close()
	files, _ = filepath.Glob(filepath.Join(dir2, "audit-*.jsonl"))
	b, _ = os.ReadFile(files[len(files)-1])
	b = b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1]
	os.WriteFile(files[len(files)-1], b, 0o600)
	out, _, err = run(t, "verify", "--dir", dir2)
	if !errors.Is(err, errAuditDamaged) || !strings.Contains(out, "head.json records seq 5: record 5 deleted or lost at the end") {
		t.Errorf("verify after deleting the last line = %v\n%s", err, out)
	}
}

func TestAuditErrors(t *testing.T) {
	dir, _ := auditLog(t, 1)
	tests := []struct {
		args []string
		want *catalog.Class
	}{
		{[]string{"verify", "--dir", filepath.Join(dir, "none")}, catalog.ErrNotFound},
		{[]string{"tail", "--dir", filepath.Join(dir, "none")}, catalog.ErrNotFound},
		{[]string{"show", "--dir", filepath.Join(dir, "none")}, catalog.ErrNotFound},
		{[]string{"show", "--dir", dir, "--since", "yesterday-ish"}, catalog.ErrUsage},
		{[]string{"show", "--dir", dir, "x12"}, catalog.ErrUsage},
		{[]string{"tail", "--dir", dir, "-n", "-1"}, catalog.ErrUsage},
		{[]string{"verify", "--dir", dir, "extra"}, catalog.ErrUsage},
		{[]string{"frobnicate"}, catalog.ErrUsage},
		{[]string{"tail", "-n", "many"}, catalog.ErrUsage},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := run(t, tt.args...)
			if !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %s", err, tt.want.Code)
			}
		})
	}
}

func TestAuditTail(t *testing.T) {
	dir, _ := auditLog(t, 12)
	out, _, err := run(t, "tail", "--dir", dir, "-n", "3")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("tail -n 3 printed %q", out)
	}
	for i, want := range []string{`#10 safe_bash exit=0 5ms 10B 3tok findings=github-pat:2 session=s1 args={"command":"echo 10"}`, "#11 safe_bash", "#12 safe_read"} {
		if !strings.Contains(lines[i], "  "+want) {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}

	out, _, err = run(t, "tail", "--dir", dir, "-n", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil || len(r.Hash) != 64 {
			t.Errorf("--json line %q: %v", line, err)
		}
		seqs = append(seqs, r.Seq)
	}
	if !slices.Equal(seqs, []uint64{11, 12}) {
		t.Errorf("tail -n 2 --json printed records %v, want [11 12]:\n%s", seqs, out)
	}
}

func TestAuditTailFollow(t *testing.T) {
	dir, l := auditLog(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- runAudit(ctx, &out, &errOut, "tail", "--dir", dir, "-n", "1", "-f") }()
	for !strings.Contains(out.String(), "#2 ") && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	for i := 3; i <= 4; i++ {
		appendCall(t, l, i)
	}
	for !strings.Contains(out.String(), "#4 ") && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("tail -f ended with %v", err)
	}
	got := out.String()
	if strings.Contains(got, "#1 ") || !strings.Contains(got, "#2 ") || !strings.Contains(got, "#3 ") || !strings.Contains(got, "#4 ") {
		t.Errorf("tail -n 1 -f printed %q", got)
	}
}

func TestAuditShow(t *testing.T) {
	dir, _ := auditLog(t, 9)
	tests := []struct {
		args []string
		want []string // "#N " headers, in order
	}{
		{[]string{"--tool", "safe_read"}, []string{"#3 ", "#6 ", "#9 "}},
		{[]string{"--session", "s1", "--tool", "safe_read"}, nil},
		{[]string{"4", "#7"}, []string{"#4 ", "#7 "}},
		{[]string{"--since", "1h", "--tool", "safe_read"}, []string{"#3 ", "#6 ", "#9 "}},
		{[]string{"--until", "1h"}, nil},
		{[]string{"--since", time.Now().Add(time.Hour).Format(time.RFC3339)}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, err := run(t, append([]string{"show", "--dir", dir}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "#") {
					got = append(got, line[:strings.IndexByte(line, ' ')+1])
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("show %v: got %v, want %v\n%s", tt.args, got, tt.want, out)
			}
			if len(tt.want) == 0 && !strings.Contains(errOut, "no matching record") {
				t.Errorf("no notice of an empty result: %q", errOut)
			}
		})
	}

	out, _, err := run(t, "show", "--dir", dir, "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  caller      pid 100, uid 1000, /usr/bin/agent\n",
		`  args        {"command":"echo 2"}` + "\n",
		"  sandbox     namespaces, seccomp safe_bash, no scope (no systemd user manager), network none\n",
		"  result      exit 0, 5ms, 10 bytes produced, 3 tokens returned\n",
		"  scrubbed    github-pat ×2\n",
		"  at          audit-000000000001-",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show 2 lacks %q:\n%s", want, out)
		}
	}

	out, _, err = run(t, "show", "--dir", dir, "--json", "--tool", "safe_read")
	if err != nil || strings.Count(out, "\n") != 3 || !strings.HasPrefix(out, `{"v":1,"seq":3,`) {
		t.Errorf("show --json = %q, %v", out, err)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local)
	tests := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"", time.Time{}, false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"2026-02-01", time.Date(2026, 2, 1, 0, 0, 0, 0, time.Local), false},
		{"2026-02-01 14:30", time.Date(2026, 2, 1, 14, 30, 0, 0, time.Local), false},
		{"2026-02-01T14:30:00Z", time.Date(2026, 2, 1, 14, 30, 0, 0, time.UTC), false},
		{"-5m", time.Time{}, true},
		{"last week", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := parseWhen(tt.in, now)
		if (err != nil) != tt.bad || !got.Equal(tt.want) {
			t.Errorf("parseWhen(%q) = %v, %v", tt.in, got, err)
		}
	}
}
