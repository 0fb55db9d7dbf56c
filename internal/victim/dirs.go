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

// WriteFiles makes the files below root (relative names, directories made
// on the way) with their content, readable by all: a test's home or
// workspace in one table.
func WriteFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
