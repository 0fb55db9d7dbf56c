package safeunpack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// writeTree makes a source tree from a table: a path ending in "/" is a
// directory, any other a file with that content and mode 0644.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTreeRefuses(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, src, outside string)
		lim   Limits
		err   error
		inErr string
	}{
		{"symlink out", func(t *testing.T, src, outside string) {
			must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(src, "key")))
		}, Limits{}, ErrLink, `"key"`},
		{"symlink that stays inside", func(t *testing.T, src, _ string) {
			must(t, os.Symlink("main.go", filepath.Join(src, "lib/alias.go")))
		}, Limits{}, ErrLink, `"lib/alias.go"`},
		{"symlinked directory", func(t *testing.T, src, outside string) {
			must(t, os.Symlink(outside, filepath.Join(src, "lib/out")))
		}, Limits{}, ErrLink, `"lib/out"`},
		{"hard link", func(t *testing.T, src, _ string) {
			must(t, os.Link(filepath.Join(src, "main.go"), filepath.Join(src, "lib/second.go")))
		}, Limits{}, ErrLink, "hard link"},
		{"fifo", func(t *testing.T, src, _ string) {
			must(t, unix.Mkfifo(filepath.Join(src, "lib/pipe"), 0o644))
		}, Limits{}, ErrSpecial, `"lib/pipe"`},
		{"control character", func(t *testing.T, src, _ string) {
			must(t, os.WriteFile(filepath.Join(src, "bad\x1bname"), nil, 0o644))
		}, Limits{}, ErrBadName, `bad\x1bname`},
		{"too large", func(t *testing.T, src, _ string) {
			must(t, os.WriteFile(filepath.Join(src, "big"), make([]byte, 2<<20), 0o644))
		}, Limits{MaxBytes: 1 << 20}, ErrTooLarge, `"big"`},
		{"too many", func(t *testing.T, src, _ string) {
			for _, n := range []string{"a", "b", "c", "d"} {
				must(t, os.WriteFile(filepath.Join(src, n), nil, 0o644))
			}
		}, Limits{MaxFiles: 5}, ErrTooMany, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outside := t.TempDir()
			writeTree(t, outside, map[string]string{"secret": "id_rsa"})
			src := t.TempDir()
			writeTree(t, src, map[string]string{"main.go": "package main\n", "lib/": ""})
			tt.plant(t, src, outside)
			if _, err := ScanTree(src, tt.lim); !errors.Is(err, tt.err) || !errors.Is(err, catalog.ErrPolicy) && !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("ScanTree = %v; want %v", err, tt.err)
			}
			parent, dest := sandboxDirs(t)
			_, err := CopyTree(src, dest, tt.lim)
			if !errors.Is(err, tt.err) {
				t.Fatalf("CopyTree = %v; want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.inErr) {
				t.Errorf("error %q does not name %s", err, tt.inErr)
			}
			assertContained(t, parent)
			for p, v := range treeOf(t, dest) {
				if strings.Contains(v, "id_rsa") {
					t.Errorf("%s holds the secret from outside the tree", p)
				}
			}
		})
	}
}

func TestCopyTree(t *testing.T) {
	old := unixUmask(0o022)
	defer unixUmask(old)
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"contextd-tool.toml": "name = \"x\"\n",
		"cmd/tool/main.go":   "package main\n",
		"empty/":             "",
		".git/config":        "[core]\n\thooksPath = /tmp/evil\n",
		"sub/.git":           "gitdir: ../.git/modules/sub\n",
		"sub/file":           "s",
	})
	must(t, os.Chmod(filepath.Join(src, "cmd/tool/main.go"), 0o4777))
	must(t, os.Chmod(filepath.Join(src, "empty"), 0o1777))
	parent, dest := sandboxDirs(t)
	rep, err := CopyTree(src, dest, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	assertContained(t, parent)
	want := map[string]string{
		"contextd-tool.toml": "-rw-r--r-- name = \"x\"\n",
		"cmd/":               "drwxr-xr-x",
		"cmd/tool/":          "drwxr-xr-x",
		"cmd/tool/main.go":   "-rwxr-xr-x package main\n",
		"empty/":             "drwxr-xr-x",
		"sub/":               "drwxr-xr-x",
		"sub/file":           "-rw-r--r-- s",
	}
	got := treeOf(t, dest)
	if len(got) != len(want) {
		t.Errorf("dest holds %q", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if rep != (Report{Files: 3, Dirs: 4, Bytes: int64(len("name = \"x\"\n") + len("package main\n") + 1)}) {
		t.Errorf("report %+v", rep)
	}
	// The re-walk of the copy finds the same, and the source's .git too.
	if again, err := ScanTree(dest, Limits{}); err != nil || again != rep {
		t.Errorf("ScanTree(dest) = %+v, %v; want %+v", again, err, rep)
	}
	if all, err := ScanTree(src, Limits{}); err != nil || all.Files != rep.Files+2 {
		t.Errorf("ScanTree(src) = %+v, %v; want the .git files counted", all, err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
