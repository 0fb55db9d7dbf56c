package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/workspace"
)

// WriteFileOver replaces the file it is told to and no other: each swap an
// attacker can make between a read and a write (a link put in its place, its
// directory replaced by a link, the file replaced under the same name, the
// file removed) refuses the write, and the disk keeps what it held.
func TestWriteFileOverRefusesAnotherFile(t *testing.T) {
	const secret = "SECRET=s3cr3t\n"
	swaps := []struct {
		name string
		swap func(t *testing.T, dir string)
		// where the write would land, and what it must still hold
		victim, keep string
	}{
		{"link swapped in", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "a/.env"), filepath.Join(dir, "a/.env.orig")))
			must(t, os.Symlink("../public/index.html", filepath.Join(dir, "a/.env")))
		}, "public/index.html", "page\n"},
		{"directory swapped for a link", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "a-old")))
			must(t, os.Symlink("public", filepath.Join(dir, "a")))
		}, "public/.env", ""},
		{"file replaced under its name", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "a/.env"), filepath.Join(dir, "env.orig")))
			must(t, os.WriteFile(filepath.Join(dir, "a/.env"), []byte("PUBLIC=1\n"), 0o644))
		}, "a/.env", "PUBLIC=1\n"},
		{"file removed", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "a/.env"), filepath.Join(dir, "env.orig")))
		}, "a/.env", ""},
	}
	for _, c := range swaps {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
			must(t, os.MkdirAll(filepath.Join(dir, "public"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "a/.env"), []byte(secret), 0o600))
			must(t, os.WriteFile(filepath.Join(dir, "public/index.html"), []byte("page\n"), 0o644))
			root, err := workspace.Open(dir)
			must(t, err)
			defer root.Close()
			f, err := root.OpenRead("a/.env")
			must(t, err)
			id, err := workspace.Identify(f)
			f.Close()
			must(t, err)
			if id.Path != filepath.Join(dir, "a/.env") || id.Ino == 0 {
				t.Fatalf("Identify: %+v", id)
			}
			c.swap(t, dir)
			_, err = root.WriteFileOver("a/.env", []byte(secret), id.Key())
			if !errors.Is(err, workspace.ErrNotThatFile) || !errors.Is(err, catalog.ErrPolicy) {
				t.Fatalf("write after the swap: %v, want ErrNotThatFile and ErrPolicy", err)
			}
			got, err := os.ReadFile(filepath.Join(dir, c.victim))
			if c.keep == "" {
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s was created (%q, %v)", c.victim, got, err)
				}
			} else if string(got) != c.keep {
				t.Fatalf("%s holds %q, want %q", c.victim, got, c.keep)
			}
		})
	}
}

// The file read is replaced, and the FileID returned is the new file's: a
// second write over it succeeds. (Whether the first FileID is refused then
// is up to the file system: the inode number it freed may be the one the
// second write's file got, under the same path; see FileID.)
func TestWriteFileOverSameFile(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, ".env"), []byte("A=1\n"), 0o600))
	root, err := workspace.Open(dir)
	must(t, err)
	defer root.Close()
	f, err := root.OpenRead(".env")
	must(t, err)
	id, err := workspace.Identify(f)
	f.Close()
	must(t, err)
	res, err := root.WriteFileOver(".env", []byte("A=2\n"), id.Key())
	must(t, err)
	if res.File.Key() == "" || res.File.Key() == id.Key() || res.File.Path != id.Path {
		t.Fatalf("the new file's FileID %+v (the old one %+v)", res.File, id)
	}
	if _, err := root.WriteFileOver(".env", []byte("A=3\n"), res.File.Key()); err != nil {
		t.Fatalf("second write over the new file: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ".env")); string(got) != "A=3\n" {
		t.Fatalf(".env holds %q", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
