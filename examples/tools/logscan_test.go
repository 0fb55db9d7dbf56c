package tools_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// python is the interpreter the sandbox and logscan.py's #! line name; the
// python3 on PATH may be another one, without Debian's grpc module.
const python = "/usr/bin/python3"

// needPython fails the test, saying how to fix it, when Debian's grpc and
// protobuf modules are missing.
func needPython(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import grpc, google.protobuf").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import grpc and protobuf (%v: %s); run `make deps` (scripts/deps.sh installs python3-grpcio and python3-protobuf)", python, err, bytes.TrimSpace(out))
	}
}

func startLogscan(t *testing.T, workspace string) *plugin {
	t.Helper()
	needPython(t)
	return start(t, filepath.Join(exampleDir(t, "logscan-py"), "logscan.py"), workspace)
}

// appLog is a service's log with errors of three kinds, one of them
// recurring with different numbers.
const appLog = `2026-12-07T10:00:00Z INFO starting api on :8080
2026-12-07T10:00:01Z ERROR upstream timeout after 30s on conn 81
2026-12-07T10:00:02Z INFO request ok
2026-12-07T10:00:03Z ERROR upstream timeout after 31s on conn 82
2026-12-07T10:00:04Z WARN slow query
2026-12-07T10:00:05Z FATAL cannot open /var/lib/api/db: permission denied
2026-12-07T10:00:06Z ERROR upstream timeout after 29s on conn 7
`

// logWorkspace is a workspace with logs/app.log, logs/worker.log and, for
// the calls that name one file, app.log at its root.
func logWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{
		"app.log":         appLog,
		"logs/app.log":    appLog,
		"logs/worker.log": "job 1 done\njob 2 panic: nil map\njob 3 done\n",
		"logs/notes.txt":  "error in a file no glob names\n",
	}
	for name, text := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func TestLogscan(t *testing.T) {
	ws := logWorkspace(t)
	p := startLogscan(t, ws)
	tests := []struct {
		name  string
		input string
		// want are lines of the text, in order; "" skips the check.
		want    []string
		matches float64
		// topShape and topCount are the most frequent kind of line.
		topShape  string
		topCount  float64
		truncated bool
		refs      []string
	}{
		{
			name:  "default pattern over a glob",
			input: `{"path": "logs/*.log"}`,
			want: []string{
				"logs/app.log:2: 2026-12-07T10:00:01Z ERROR upstream timeout after 30s on conn 81",
				"logs/app.log:4: 2026-12-07T10:00:03Z ERROR upstream timeout after 31s on conn 82",
				"logs/app.log:6: 2026-12-07T10:00:05Z FATAL cannot open /var/lib/api/db: permission denied",
				"logs/app.log:7: 2026-12-07T10:00:06Z ERROR upstream timeout after 29s on conn 7",
				"logs/worker.log:2: job 2 panic: nil map",
			},
			matches: 5, topShape: "ERROR upstream timeout after <n>s on conn <n>", topCount: 3,
			refs: []string{"logs/app.log", "logs/worker.log"},
		},
		{
			name:    "own pattern",
			input:   `{"path": "app.log", "pattern": "WARN|INFO"}`,
			matches: 3, topShape: "INFO starting api on :<n>", topCount: 1,
			refs: []string{"app.log"},
		},
		{
			name:    "recursive glob, output cut by max_lines",
			input:   `{"path": "**/*.log", "max_lines": 1, "top": 1}`,
			want:    []string{"app.log:2: 2026-12-07T10:00:01Z ERROR upstream timeout after 30s on conn 81"},
			matches: 9, topShape: "ERROR upstream timeout after <n>s on conn <n>", topCount: 6,
			truncated: true, refs: []string{"app.log", "logs/app.log", "logs/worker.log"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := p.call(ctx, ws, tt.input, nil)
			if err != nil {
				t.Fatal(err)
			}
			if e := r.final.GetError(); e != "" {
				t.Fatalf("the call failed: %s", e)
			}
			if tt.want != nil {
				if got := strings.Split(strings.TrimSuffix(r.text, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
					t.Errorf("text:\n%s\nwant:\n%s", r.text, strings.Join(tt.want, "\n"))
				}
			}
			if r.data["matches"] != tt.matches {
				t.Errorf("matches = %v, want %v (%v)", r.data["matches"], tt.matches, r.data)
			}
			top, _ := r.data["top"].([]any)
			if len(top) == 0 {
				t.Fatalf("no top kinds in %v", r.data)
			}
			first := top[0].(map[string]any)
			if first["shape"] != tt.topShape || first["count"] != tt.topCount {
				t.Errorf("top kind = %v, want %q ×%v", first, tt.topShape, tt.topCount)
			}
			if r.final.GetTruncated() != tt.truncated {
				t.Errorf("truncated = %v, want %v", r.final.GetTruncated(), tt.truncated)
			}
			if strings.Join(r.final.GetRefs(), " ") != strings.Join(tt.refs, " ") {
				t.Errorf("refs = %v, want %v", r.final.GetRefs(), tt.refs)
			}
		})
	}
}

// TestLogscanRefuses: input logscan cannot use fails the call with its
// reason, and the plugin goes on serving.
func TestLogscanRefuses(t *testing.T) {
	ws := logWorkspace(t)
	outside := filepath.Join(filepath.Dir(ws), "outside.log")
	if err := os.WriteFile(outside, []byte("error outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(outside) })
	if err := os.Symlink(outside, filepath.Join(ws, "link.log")); err != nil {
		t.Fatal(err)
	}
	p := startLogscan(t, ws)
	tests := []struct{ name, input, want string }{
		{"no path", `{}`, `"path" is required`},
		{"absolute", `{"path": "/etc/passwd"}`, "relative to the workspace"},
		{"dot-dot", `{"path": "../outside.log"}`, "leaves the workspace"},
		{"symlink out", `{"path": "link.log"}`, "leaves the workspace"},
		{"nothing matches", `{"path": "logs/*.gz"}`, "no file in the workspace matches"},
		{"bad pattern", `{"path": "app.log", "pattern": "("}`, "not a Python regular expression"},
		{"bad number", `{"path": "app.log", "max_lines": -1}`, "max_lines"},
		{"not an object", `[1]`, "must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := p.call(context.Background(), ws, tt.input, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.final.GetError(), tt.want) || r.final.GetExitCode() != 2 {
				t.Errorf("error %q exit %d, want one containing %q, exit 2", r.final.GetError(), r.final.GetExitCode(), tt.want)
			}
			if r.text != "" {
				t.Errorf("a refused call printed %q", r.text)
			}
		})
	}
}

// TestLogscanFollow: a following call streams lines appended after its scan
// as they come, and a cancel reaches the plugin.
func TestLogscanFollow(t *testing.T) {
	ws := logWorkspace(t)
	p := startLogscan(t, ws)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var frames []string
	_, err := p.call(ctx, ws, `{"path": "app.log", "follow_seconds": 600}`, func(text string) {
		frames = append(frames, text)
		if len(frames) == 1 {
			f, err := os.OpenFile(filepath.Join(ws, "app.log"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				cancel()
				return
			}
			// Half a line first: only a whole line is matched.
			f.WriteString("2026-12-07T10:01:00Z ERROR disk ")
			f.Sync()
			time.Sleep(300 * time.Millisecond)
			f.WriteString("full\n")
			f.Close()
		}
		if strings.Contains(text, "disk full") {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v, want context.Canceled", err)
	}
	if len(frames) < 2 || frames[len(frames)-1] != "app.log:8: 2026-12-07T10:01:00Z ERROR disk full\n" {
		t.Errorf("frames %q, want the appended line alone in the last", frames)
	}
	p.waitFor(t, "cancelled by the caller")
}

// TestLogscanDeadline: following stops short of the call's deadline, so the
// result still arrives in time.
func TestLogscanDeadline(t *testing.T) {
	ws := logWorkspace(t)
	p := startLogscan(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	began := time.Now()
	r, err := p.call(ctx, ws, `{"path": "app.log", "follow_seconds": 600}`, nil)
	if err != nil {
		t.Fatalf("call: %v, want its result before the deadline", err)
	}
	if d := time.Since(began); d < time.Second || d > 3*time.Second {
		t.Errorf("the call took %v, want about 2s (the deadline less a second)", d)
	}
	if r.data["matches"] != 4.0 {
		t.Errorf("data %v, want 4 matches", r.data)
	}
}

// TestLogscanByHand: run without contextd's handshake, it explains itself.
func TestLogscanByHand(t *testing.T) {
	needPython(t)
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(exampleDir(t, "logscan-py"), "logscan.py"))
	cmd.Env = []string{"PYTHONDONTWRITEBYTECODE=1"}
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("run by hand: %v, want exit status 1", err)
	}
	if len(out) != 0 || !strings.Contains(stderr.String(), "contextd tool plugin") {
		t.Errorf("stdout %q stderr %q, want only an explanation on stderr", out, stderr.String())
	}
}

// TestLogscanStubsCurrent: the committed Python modules are what protoc
// makes of toolplugin.proto today (go generate ./examples/tools).
func TestLogscanStubsCurrent(t *testing.T) {
	for _, tool := range []string{"protoc", "grpc_python_plugin"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed; run `make deps` (scripts/deps.sh installs protobuf-compiler and protobuf-compiler-grpc)", tool)
		}
	}
	grpcPlugin, _ := exec.LookPath("grpc_python_plugin")
	out := t.TempDir()
	cmd := exec.Command("protoc", "-I", filepath.Join("..", "..", "wire", "toolplugin"),
		"--python_out="+out, "--grpc_python_out="+out, "--plugin=protoc-gen-grpc_python="+grpcPlugin, "toolplugin.proto")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v: %s", err, msg)
	}
	for _, name := range []string{"toolplugin_pb2.py", "toolplugin_pb2_grpc.py"} {
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("logscan-py", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("logscan-py/%s is stale; run `go generate ./examples/tools`", name)
		}
	}
}

// exampleDir is the absolute path of an example's directory.
func exampleDir(t *testing.T, name string) string {
	t.Helper()
	d, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
