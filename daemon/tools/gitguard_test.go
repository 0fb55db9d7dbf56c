package tools

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/workspace"
)

// guardGit puts back what the call planted for the host's git, says so in
// the outcome's warnings (which the audit record carries), and refuses a
// call whose fingerprint cannot be taken.
func TestGuardGit(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	env := &Env{Place: workspace.Place{Root: root, Cwd: root, LogicalRoot: root}}
	hook := filepath.Join(root, ".git/hooks/pre-commit")
	o := guardGit("safe_bash", env, gitguard.Find(root), func() Outcome {
		os.WriteFile(hook, []byte("#!/bin/sh\ntouch /tmp/pwned\n"), 0o755)
		return Outcome{Warnings: []string{"the call's own"}}
	})
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	if _, err := os.Lstat(hook); err == nil {
		t.Error("the planted hook is still there")
	}
	if len(o.Warnings) != 2 || o.Warnings[0] != "the call's own" || !strings.Contains(o.Warnings[1], ".git/hooks/pre-commit") {
		t.Errorf("warnings %q", o.Warnings)
	}

	// A fingerprint that cannot be taken (more hooks than the guard
	// watches): the call does not run.
	for i := 0; i < 4100; i++ {
		os.WriteFile(filepath.Join(root, ".git/hooks", "h"+strconv.Itoa(i)), nil, 0o644)
	}
	ran := false
	o = guardGit("safe_bash", env, gitguard.Find(root), func() Outcome { ran = true; return Outcome{} })
	if ran || !errors.Is(o.Err, catalog.ErrIO) {
		t.Errorf("no fingerprint: ran %v, err %v", ran, o.Err)
	}
}
