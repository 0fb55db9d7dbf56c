package tools_test

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/toolmanifest"
)

// TestManifests: each example's manifest parses, asks for no more than the
// default configuration allows, and names files the tree has: its schema,
// its doc, and a program to run (built by its build command, or a script
// whose #! interpreter exists).
func TestManifests(t *testing.T) {
	found, err := filepath.Glob(filepath.Join("*", toolmanifest.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 3 {
		t.Fatalf("manifests %v, want one per example", found)
	}
	for _, path := range found {
		dir := filepath.Dir(path)
		t.Run(dir, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := toolmanifest.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := toolmanifest.DefaultPolicy().Check(m); err != nil {
				t.Error(err)
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			if _, err := m.InputSchema(root.FS()); err != nil {
				t.Errorf("schema: %v", err)
			}
			if _, err := root.Stat(m.Doc); err != nil {
				t.Errorf("doc: %v", err)
			}
			prog := m.Run.Command[0]
			if m.Build != nil {
				if i := slices.Index(m.Build.Command, "-o"); i < 0 || i+1 == len(m.Build.Command) || m.Build.Command[i+1] != prog {
					t.Errorf("build %q does not write run's program %q", m.Build.Command, prog)
				}
				return
			}
			checkScript(t, root, prog)
		})
	}
}

// checkScript checks that prog is executable and that its #! line names an
// interpreter by an absolute path that exists.
func checkScript(t *testing.T, root *os.Root, prog string) {
	t.Helper()
	fi, err := root.Stat(prog)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s is not executable", prog)
	}
	f, err := root.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first, _ := bufio.NewReader(f).ReadString('\n')
	interp, ok := strings.CutPrefix(strings.TrimSpace(first), "#!")
	if fields := strings.Fields(interp); !ok || len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		t.Fatalf("%s starts %q, want #! and an absolute interpreter", prog, first)
	} else if _, err := os.Stat(fields[0]); err != nil {
		t.Errorf("%s's interpreter: %v", prog, err)
	}
}
