package victim

import (
	"os"
	"path/filepath"
	"testing"
)

// Home is the user's home directory, canonical (a sandbox mounts it by that
// path).
func Home(t testing.TB) string {
	t.Helper()
	h, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return canonical(t, h)
}

// Workspace makes a workspace directory under $TMPDIR, canonical.
func Workspace(t testing.TB) string {
	t.Helper()
	return canonical(t, t.TempDir())
}

// HomeWorkspace makes a workspace directory inside $HOME, where real ones
// are, and removes it after the test.
func HomeWorkspace(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp(Home(t), "ctxd-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func canonical(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
