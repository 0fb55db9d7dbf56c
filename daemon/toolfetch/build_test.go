package toolfetch

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
)

const goManifest = `name = "hello-go"
version = "0.1"
description = "Built with Go at install."
schema = '{"type":"object"}'
[build]
command = ["go", "build", "-trimpath", "-o", "bin/hello", "."]
[run]
command = ["bin/hello"]
`

// TestInstallBuildsGo installs a Go tool from a local directory: its build
// runs in the tool_build sandbox, offline, with the local toolchain, its
// vendor directory and a fresh build cache, and the binary it writes is
// part of the checksummed tree.
func TestInstallBuildsGo(t *testing.T) {
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Skip("no Go toolchain at /usr/local/go: the build sandbox's PATH has none")
	}
	in, _ := installer(t)
	src := filepath.Join(t.TempDir(), "hello-go")
	writeTree(t, src, map[string]string{
		"contextd-tool.toml": goManifest,
		"TOOL.md":            "# hello-go\n",
		"go.mod":             "module example.com/hello\n\ngo 1.22\n",
		"main.go":            "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := in.Install(ctx, Request{Source: src})
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	if !strings.HasPrefix(out.Tool.Resolved, "tree:") {
		t.Errorf("resolved %q, want the fetched tree's hash", out.Tool.Resolved)
	}
	bin := filepath.Join(in.Store.Tree(out.Tool), "bin", "hello")
	got, err := exec.Command(bin).Output()
	if err != nil || strings.TrimSpace(string(got)) != "hello from go" {
		t.Fatalf("the built binary: %q, %v", got, err)
	}
	if err := in.Store.Verify(out.Tool); err != nil {
		t.Errorf("verify: %v", err)
	}
	if _, err := os.Stat(filepath.Join(in.Store.Path(out.Tool), "home")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the build's home was kept in the store: %v", err)
	}

	// A build that fails is reported with its output, and installs nothing.
	bad := filepath.Join(t.TempDir(), "bad")
	writeTree(t, bad, map[string]string{
		"contextd-tool.toml": strings.Replace(goManifest, `name = "hello-go"`, `name = "bad"`, 1),
		"TOOL.md":            "# bad\n",
		"go.mod":             "module example.com/bad\n\ngo 1.22\n",
		"main.go":            "package main\n\nfunc main() { undefined() }\n",
	})
	_, err = in.Install(ctx, Request{Source: bad})
	if !errors.Is(err, catalog.ErrLaunch) || !strings.Contains(err.Error(), "undefined") {
		t.Fatalf("a failing build: %v, want %v with the compiler's message", err, catalog.ErrLaunch)
	}
	if l, _ := in.Store.Load(); l.Tools["bad"] != nil {
		t.Error("a tool whose build failed is in the lock")
	}
}
