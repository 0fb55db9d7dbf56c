package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/sandboxinfo"
)

// testOptions is a log in a fresh directory, without the journal, logging to
// the test's output.
func testOptions(t testing.TB) *Options {
	return &Options{
		Dir:     filepath.Join(t.TempDir(), "audit"),
		Journal: JournalOff,
		Logger:  slog.New(slog.NewTextHandler(t.Output(), nil)),
	}
}

// call is a plausible record of the i-th call.
func call(i int) *Record {
	return &Record{
		PeerPID: 4000 + int32(i), PeerUID: 1000, PeerExe: "/usr/bin/claude",
		Session: "s1", Tool: "safe_bash",
		Args: json.RawMessage(fmt.Sprintf(`{"command":"make test && echo %d > out.txt"}`, i)),
		Cwd:  "/home/u/proj/sub", Workspace: "/home/u/proj",
		Sandbox:  Sandbox{Layers: sandboxinfo.Layers{Namespaces: true, Seccomp: "safe_bash", Scope: fmt.Sprintf("contextd-safe_bash-%d.scope", i)}},
		ExitCode: i % 3, DurationMS: int64(10 + i), BytesProduced: 2048, TokensReturned: 300,
		Findings:  map[string]int{"aws-access-token": 1},
		Truncated: i%2 == 0,
	}
}

// openTest opens o, failing the test on error.
func openTest(t testing.TB, o *Options) *Log {
	t.Helper()
	l, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// fill appends calls first..last and fails the test on error.
func fill(t testing.TB, l *Log, first, last int) {
	t.Helper()
	for i := first; i <= last; i++ {
		if err := l.Append(call(i)); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
}

// logNames lists the log files of dir in chain order.
func logNames(t testing.TB, dir string) []string {
	t.Helper()
	fs, err := listFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.name)
	}
	return out
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeLines(t testing.TB, path string, ls []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(ls, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// kinds lists the kinds of problems as "kind@file:line" for comparison, the
// file given by its index in names ("-" when it is not a file's).
func kinds(ps []Problem, names []string) []string {
	var out []string
	for _, p := range ps {
		f := "-"
		for i, n := range names {
			if n == p.File {
				f = fmt.Sprint(i)
			}
		}
		if p.File == headName {
			f = "head"
		}
		out = append(out, fmt.Sprintf("%s@%s:%d", p.Kind, f, p.Line))
	}
	return out
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
