//go:build linux

package ns_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/contextd/contextd/ns"
)

// A pinned directory keeps its place: it can be neither renamed, nor
// exchanged, nor removed, while what is in it stays writable; a read-only
// file inside stays read-only. (Unpinned, the same directory is renamed:
// the control.)
func TestPins(t *testing.T) {
	ws := workspace(t)
	for _, d := range []string{".git", "free"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
		os.WriteFile(filepath.Join(ws, d, "config"), []byte("orig\n"), 0o644)
	}
	s := spec(t, ws, "sh", "-c", `mv .git .git-moved 2>/dev/null && echo renamed
mkdir other && mv -T .git other 2>/dev/null && echo replaced
rmdir .git 2>/dev/null && echo removed
echo x > .git/config 2>/dev/null && echo config-written
touch .git/index && echo index-written
mv free free-moved && echo control-renamed`)
	s.Pins = []string{filepath.Join(ws, ".git")}
	s.ReadOnly = append(append([]string(nil), ns.DefaultReadOnly...), filepath.Join(ws, ".git/config"))
	out := mustRun(t, s)
	if got := strings.Join(lines(out), ","); got != "index-written,control-renamed" {
		t.Errorf("inside: %q, want only the index written and the control renamed", got)
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".git/config")); err != nil || string(b) != "orig\n" {
		t.Errorf(".git/config on the host: %q %v", b, err)
	}
}

// A pin that resolves outside the workspace when the sandbox opens it (a
// link planted on its way) stops the setup: it must not show anything else
// read-write.
func TestPinOutsideRefused(t *testing.T) {
	ws := workspace(t)
	outside := workspace(t)
	os.MkdirAll(filepath.Join(outside, "sub"), 0o755)
	os.Symlink(outside, filepath.Join(ws, "link"))
	marker := filepath.Join(outside, "sub", "written")
	s := spec(t, ws, "sh", "-c", "touch "+marker)
	s.Pins = []string{filepath.Join(ws, "link", "sub")}
	r := run(t, s)
	var se *ns.SetupError
	if !errors.As(r.err, &se) || !errors.Is(r.err, syscall.EXDEV) {
		t.Fatalf("want a setup error with EXDEV, got %v (code %d)", r.err, r.code)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran and wrote outside the workspace")
	}
}

// A read-only or read-write path listed below the workspace (a protected
// path, a directory on its way) that a concurrent call turned into a link
// out of it is refused, not bound: read-write it would hand the sandbox the
// outside directory, read-only it would show it (a ~/.claude with its
// credentials).
func TestListedPathOutsideRefused(t *testing.T) {
	for _, rw := range []bool{false, true} {
		ws := workspace(t)
		outside := workspace(t)
		os.MkdirAll(filepath.Join(outside, ".config"), 0o755)
		os.Symlink(outside, filepath.Join(ws, "x"))
		marker := filepath.Join(outside, ".config", "written")
		s := spec(t, ws, "sh", "-c", "touch "+marker+"; ls "+outside)
		p := filepath.Join(ws, "x", ".config")
		if rw {
			s.ReadWrite = []string{p}
		} else {
			s.ReadOnly = []string{p}
		}
		r := run(t, s)
		var se *ns.SetupError
		if !errors.As(r.err, &se) || !errors.Is(r.err, syscall.EXDEV) {
			t.Fatalf("read-write %v: want a setup error with EXDEV, got %v (code %d)", rw, r.err, r.code)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("read-write %v: the command ran and wrote outside the workspace", rw)
		}
	}
}
