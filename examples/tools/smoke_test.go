package tools_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/toolmanifest"
)

// binDir holds the Go examples built once for the whole test binary.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "contextd-examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var builds sync.Map // example name -> func() (string, error)

// built builds the Go example name with the repository's module, once.
func built(t *testing.T, name string) string {
	t.Helper()
	f, _ := builds.LoadOrStore(name, sync.OnceValues(func() (string, error) {
		out := filepath.Join(binDir, name)
		msg, err := exec.Command("go", "build", "-o", out, "./"+name).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build ./%s: %v: %s", name, err, msg)
		}
		return out, nil
	}))
	bin, err := f.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func startSmoke(t *testing.T, workspace string) *plugin {
	t.Helper()
	return start(t, built(t, "smoke"), workspace)
}

func TestSmoke(t *testing.T) {
	ws := t.TempDir()
	p := startSmoke(t, ws)
	// A secret for the scrub to find: the e2e suite plants one like it.
	const secret = "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"
	var many strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&many, "line %d of 5000\n", i)
	}
	tests := []struct {
		name, input, text string
		// minFrames bounds how many frames the text came in: more than one
		// shows it streamed, and fewer than its lines that it was batched.
		minFrames, maxFrames int
		lines                float64
	}{
		{"text as given", `{"text": "` + secret + `"}`, secret + "\n", 1, 1, 0},
		{"many lines", `{"lines": 5000}`, many.String(), 2, 100, 5000},
		{"short wait", `{"text": "t", "lines": 1, "sleep_seconds": 0.1}`, "t\nline 1 of 1\nsleeping 0.1s\n", 3, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := p.call(ctx, ws, tt.input, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.final.GetError() != "" || r.final.GetExitCode() != 0 {
				t.Fatalf("the call failed: %q, exit %d", r.final.GetError(), r.final.GetExitCode())
			}
			if r.text != tt.text {
				t.Errorf("text (%d bytes) differs from the %d bytes wanted; it starts %.80q", len(r.text), len(tt.text), r.text)
			}
			if r.frames < tt.minFrames || r.frames > tt.maxFrames {
				t.Errorf("%d frames, want %d to %d", r.frames, tt.minFrames, tt.maxFrames)
			}
			if r.data["lines"] != tt.lines {
				t.Errorf("data %v, want lines %v", r.data, tt.lines)
			}
		})
	}
}

// TestSmokeDeadline: the call's deadline crosses to the plugin, whose wait
// ends with it.
func TestSmokeDeadline(t *testing.T) {
	ws := t.TempDir()
	p := startSmoke(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	began := time.Now()
	r, err := p.call(ctx, ws, `{"sleep_seconds": 600}`, nil)
	// Both ends hold the deadline: the plugin's result may win the race
	// (its Execute returned ctx.Err()), or this side's timer.
	if !errors.Is(err, context.DeadlineExceeded) && (err != nil || !strings.Contains(r.final.GetError(), "deadline exceeded")) {
		t.Fatalf("call: %v, final %v; want the deadline named", err, r.final)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the call took %v past a 1s deadline", d)
	}
}

// TestSmokeOutsideRepo follows smoke's TOOL.md: a copy of the example with a
// module of its own, vendored, is built by its manifest's build command with
// no network, and serves calls.
func TestSmokeOutsideRepo(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "smoke")
	if err := os.CopyFS(dir, os.DirFS("smoke")); err != nil {
		t.Fatal(err)
	}
	// The repository's go.sum holds every sum the copy needs, so no step
	// reaches the module proxy.
	sums, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	steps := [][]string{
		{"go", "mod", "init", "example.com/smoke"},
		{"go", "mod", "edit", "-replace", "github.com/contextd/contextd=" + repo},
		// -e: with no proxy, the tests of the dependencies' own
		// dependencies (gitleaks' testify) cannot be looked up; a user
		// with the network runs a plain tidy, as TOOL.md says.
		{"go", "mod", "tidy", "-e"},
		{"go", "mod", "vendor"},
	}
	for _, argv := range steps {
		run(t, dir, env, argv)
	}
	data, err := os.ReadFile(filepath.Join(dir, toolmanifest.FileName))
	if err != nil {
		t.Fatal(err)
	}
	m, err := toolmanifest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, append(os.Environ(), "GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local"), m.Build.Command)
	p := start(t, filepath.Join(dir, m.Run.Command[0]), t.TempDir())
	r, err := p.call(context.Background(), "", `{"text": "built outside"}`, nil)
	if err != nil || r.text != "built outside\n" {
		t.Fatalf("call: %v, text %q", err, r.text)
	}
}

func run(t *testing.T, dir string, env, argv []string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
}

func TestWordcount(t *testing.T) {
	p := start(t, built(t, "wordcount"), t.TempDir())
	r, err := p.call(context.Background(), "", `{"text": "one two\nthree\n"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.text != "1: 2 words\n2: 1 words\n" || r.data["lines"] != 2.0 || r.data["words"] != 3.0 {
		t.Errorf("text %q data %v", r.text, r.data)
	}
}
