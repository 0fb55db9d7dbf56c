package toolstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolstore"
)

func tree(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.MkdirAll(filepath.Join(d, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "contextd-tool.toml"), []byte("name = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTreeHashSeesEveryChange(t *testing.T) {
	d := tree(t)
	base, err := toolstore.TreeHash(d)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := toolstore.TreeHash(d)
	if again != base {
		t.Fatalf("hash not stable: %s then %s", base, again)
	}
	changes := map[string]func(string) error{
		"content": func(d string) error {
			return os.WriteFile(filepath.Join(d, "bin", "tool"), []byte("#!/bin/sh\nid\n"), 0o755)
		},
		"exec bit":  func(d string) error { return os.Chmod(filepath.Join(d, "bin", "tool"), 0o644) },
		"new file":  func(d string) error { return os.WriteFile(filepath.Join(d, "extra"), nil, 0o644) },
		"empty dir": func(d string) error { return os.Mkdir(filepath.Join(d, "e"), 0o755) },
		"rename": func(d string) error {
			return os.Rename(filepath.Join(d, "bin", "tool"), filepath.Join(d, "bin", "tool2"))
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			d := tree(t)
			if err := change(d); err != nil {
				t.Fatal(err)
			}
			got, err := toolstore.TreeHash(d)
			if err != nil {
				t.Fatal(err)
			}
			if got == base {
				t.Errorf("%s left the hash unchanged", name)
			}
		})
	}
}

func TestTreeHashRefusesLinks(t *testing.T) {
	d := tree(t)
	if err := os.Symlink("/etc/passwd", filepath.Join(d, "bin", "link")); err != nil {
		t.Fatal(err)
	}
	_, err := toolstore.TreeHash(d)
	if !errors.Is(err, catalog.ErrPolicy) {
		t.Fatalf("a symlink in the tree: %v, want ErrPolicy", err)
	}
}

func TestLockUpdateAndVerify(t *testing.T) {
	s := toolstore.Store{Root: t.TempDir()}
	l, err := s.Load()
	if err != nil || len(l.Tools) != 0 {
		t.Fatalf("empty store: %v %v", l, err)
	}
	dir := filepath.Join(s.Root, "hello", "abc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tree(t), filepath.Join(dir, toolstore.TreeDir)); err != nil {
		t.Fatal(err)
	}
	sum, err := toolstore.TreeHash(filepath.Join(dir, toolstore.TreeDir))
	if err != nil {
		t.Fatal(err)
	}
	// Concurrent updates each keep their entry.
	var wg sync.WaitGroup
	for _, n := range []string{"hello", "a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(func(l *toolstore.Lock) error {
				l.Tools[n] = &toolstore.Tool{Name: n, Source: "./x", Checksum: sum, Dir: "hello/abc"}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	l, err = s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Names(); len(got) != 4 {
		t.Fatalf("names after 4 concurrent updates: %v", got)
	}
	h, err := l.Get("hello")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(h); err != nil {
		t.Fatalf("unchanged tree: %v", err)
	}
	if err := os.WriteFile(filepath.Join(s.Tree(h), "bin", "tool"), []byte("#!/bin/sh\nevil\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(h); !errors.Is(err, catalog.ErrPolicy) {
		t.Fatalf("changed tree: %v, want ErrPolicy", err)
	}
	if _, err := l.Get("nope"); !errors.Is(err, toolstore.ErrNotInstalled) {
		t.Fatalf("missing tool: %v", err)
	}
}

func TestLoadRefusesEscapingDir(t *testing.T) {
	s := toolstore.Store{Root: t.TempDir()}
	lock := `{"version":1,"tools":{"x":{"name":"x","source":"s","resolved":"r","checksum":"c","dir":"../../etc"}}}`
	if err := os.WriteFile(filepath.Join(s.Root, toolstore.LockName), []byte(lock), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); !errors.Is(err, catalog.ErrConfig) {
		t.Fatalf("dir leaving the store: %v, want ErrConfig", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, n := range []string{"hello", "log-query", "a1_b"} {
		if err := toolstore.CheckName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"", "Hello", "../x", "safe_bash", "memory_search", "-x", "a b"} {
		if err := toolstore.CheckName(n); !errors.Is(err, catalog.ErrBadInput) {
			t.Errorf("%q: %v, want ErrBadInput", n, err)
		}
	}
}
