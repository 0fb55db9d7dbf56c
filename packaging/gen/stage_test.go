package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
)

// repoRoot is the module's root, where go build runs.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// buildProxy builds the real contextd-proxy as the Makefile does, with the
// version stamped and cgo as asked.
func buildProxy(t *testing.T, version, cgo string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "contextd-proxy")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags",
		"-X github.com/contextd/contextd/proxy.Version="+version, "-o", out, "./cmd/contextd-proxy")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestCheckProxyBinary(t *testing.T) {
	static := buildProxy(t, "1.2.3", "0")
	if err := checkVersion(static, []string{"version"}, "contextd-proxy 1.2.3"); err != nil {
		t.Errorf("the right version refused: %v", err)
	}
	if err := checkVersion(static, []string{"version"}, "contextd-proxy 1.2.4"); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("a wrong version: want ErrBadInput, got %v", err)
	}
	if err := checkStaticProxy(static); err != nil {
		t.Errorf("static proxy refused: %v", err)
	}
	if err := checkStaticProxy(buildProxy(t, "1.2.3", "1")); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("a cgo build of the proxy: want ErrBadInput, got %v", err)
	}
	notGo := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(notGo, []byte("#!/bin/sh\necho contextd-proxy 1.2.3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkStaticProxy(notGo); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("a program without Go build information: want ErrBadInput, got %v", err)
	}
	static2, err := staticPrograms([]string{static})
	if err != nil || len(static2) != 1 || static2[0] != "contextd-proxy" {
		t.Errorf("staticPrograms = %v, %v", static2, err)
	}
}

func TestPrograms(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("contextd", 0o755)
	if _, err := programs(dir); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("without contextd-proxy: want ErrBadInput, got %v", err)
	}
	write("contextd-proxy", 0o755)
	got, err := programs(dir)
	if err != nil || len(got) != 2 {
		t.Errorf("programs = %v, %v", got, err)
	}
	write("notes.txt", 0o644)
	if _, err := programs(dir); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("with a non-program: want ErrBadInput, got %v", err)
	}
	if _, err := programs(filepath.Join(dir, "none")); !errors.Is(err, catalog.ErrIO) {
		t.Errorf("missing dir: want ErrIO, got %v", err)
	}
}

func TestEmptyDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := emptyDir(dir); err != nil {
		t.Fatalf("new dir: %v", err)
	}
	if err := emptyDir(dir); err != nil {
		t.Fatalf("existing empty dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := emptyDir(dir); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("dir with an old file: want ErrConflict, got %v", err)
	}
}

func TestPackagedUnits(t *testing.T) {
	units, err := packagedUnits()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if strings.Contains(u.Content, "ExecStart=") && !strings.Contains(u.Content, "\nExecStart=/usr/bin/contextd serve\n") {
			t.Errorf("%s: ExecStart is not the packaged binary:\n%s", u.Name, u.Content)
		}
	}
}

// dpkg's own parser reads the changelog, with the version and date given.
func TestChangelog(t *testing.T) {
	when := time.Date(2026, 11, 22, 19, 16, 37, 0, time.UTC)
	p := filepath.Join(t.TempDir(), "changelog")
	if err := os.WriteFile(p, Changelog("0.0.1~e2e1-1", "v0.0.1-0-gabc", when), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("dpkg-parsechangelog", "-l", p).Output()
	if err != nil {
		t.Fatalf("dpkg-parsechangelog: %v", err)
	}
	for _, want := range []string{"Source: contextd", "Version: 0.0.1~e2e1-1", "Distribution: unstable",
		"Maintainer: " + Maintainer, "Date: Sun, 22 Nov 2026 19:16:37 +0000", "v0.0.1-0-gabc"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("changelog lacks %q:\n%s", want, out)
		}
	}
}

func TestCopyright(t *testing.T) {
	c := string(Copyright(2026, []Module{{"github.com/a/b", "v1.2.3"}, {"golang.org/x/sys", "v0.49.0"}}))
	paras := strings.Split(strings.TrimSpace(c), "\n\n")
	if len(paras) != 3 {
		t.Fatalf("want 3 paragraphs (header, Files, License), got %d:\n%s", len(paras), c)
	}
	for i, want := range [][]string{
		{"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n", "Upstream-Name: contextd\n",
			"  github.com/a/b v1.2.3\n", "  golang.org/x/sys v0.49.0\n"},
		{"Files: *\n", "Copyright: 2026 contextd developers\n", "License: Apache-2.0"},
		{"License: Apache-2.0\n", "/usr/share/common-licenses/Apache-2.0"},
	} {
		for _, w := range want {
			if !strings.Contains(paras[i]+"\n", w) {
				t.Errorf("paragraph %d lacks %q:\n%s", i, w, paras[i])
			}
		}
	}
	// Continuation lines start with a space; no line is empty inside a paragraph.
	for _, p := range paras {
		for _, l := range strings.Split(p, "\n")[1:] {
			if l != "" && !strings.HasPrefix(l, " ") && !strings.Contains(l, ": ") {
				t.Errorf("line %q is neither a field nor a continuation", l)
			}
		}
	}
}

func TestLintianOverrides(t *testing.T) {
	o := string(LintianOverrides([]string{"contextd-proxy", "contextd-proxy-mcp"}))
	for _, w := range []string{"contextd: statically-linked-binary [usr/bin/contextd-proxy]\n",
		"contextd: statically-linked-binary [usr/bin/contextd-proxy-mcp]\n", "contextd: initial-upload-closes-no-bugs\n"} {
		if !strings.Contains(o, w) {
			t.Errorf("overrides lack %q:\n%s", w, o)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(o), "\n") {
		if !strings.HasPrefix(l, "# ") && !strings.HasPrefix(l, "contextd: ") {
			t.Errorf("line %q is neither a reason nor an override", l)
		}
	}
}

func TestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, catalog.ExitUsage, ""},
		{[]string{"frobnicate"}, catalog.ExitUsage, ""},
		{[]string{"check-version", "0.0.1~e2e1"}, 0, ""},
		{[]string{"check-version", "v1"}, catalog.ExitDataErr, ""},
		{[]string{"check-version"}, catalog.ExitUsage, ""},
		{[]string{"stage", "-out", t.TempDir()}, catalog.ExitUsage, ""},
		{[]string{"version", "-C", repoRoot(t)}, 0, "\n"},
		{[]string{"version", "-C", t.TempDir()}, catalog.ExitConfig, ""},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tt.args, &out, &errb)
		if code != tt.code || !strings.Contains(out.String(), tt.out) {
			t.Errorf("gen %q: exit %d, out %q, err %q; want exit %d, out with %q", tt.args, code, out.String(), errb.String(), tt.code, tt.out)
		}
	}
}
