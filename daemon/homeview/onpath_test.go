package homeview

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/scrub"
)

// npmToken is the credential of the user's ~/.npmrc in the tests below.
const npmToken = "npm_OnPathT0kenQ7kRt2XvB9mLpZ4wYc1Nd"

// goOnlyHome is a Go repository's world: the workspace holds go.mod and no
// package.json, the user's ~/.npmrc names a private registry with a token,
// and npm has a cache. bin is a directory outside the home holding the
// programs named, as a system or toolchain manager's bin would.
func goOnlyHome(t *testing.T, programs ...string) (h *Host, bin string) {
	t.Helper()
	home := t.TempDir()
	for name, content := range map[string]string{
		".npmrc":              "registry=https://npm.corp.test/\n//npm.corp.test/:_authToken=" + npmToken + "\n",
		".npm/_cacache/index": "i",
		"ws/go.mod":           "module x\n",
		"ws/main.go":          "package main\n",
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bin = t.TempDir()
	for _, p := range programs {
		if err := os.WriteFile(filepath.Join(bin, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &Host{Home: home, Workspace: filepath.Join(home, "ws"), Env: map[string]string{"PATH": bin}}, bin
}

// npm run in a Go repository reads the user's ~/.npmrc as it does outside
// the sandbox: with npm on PATH, the view shows its scrubbed copy (the token
// a placeholder) though no package.json selects the node preset; the npm
// cache, which follows the markers, stays out. With no node program on
// PATH, the file stays out too.
func TestToolchainConfigFollowsPath(t *testing.T) {
	t.Run("npm only in the workspace", func(t *testing.T) {
		// The agent writes the workspace: a file named npm it made in
		// node_modules/.bin, named by an absolute PATH entry, selects nothing.
		h, _ := goOnlyHome(t, "go")
		wsBin := filepath.Join(h.Workspace, "node_modules/.bin")
		if err := os.MkdirAll(wsBin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wsBin, "npm"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		h.Env["PATH"] = wsBin + string(filepath.ListSeparator) + h.Env["PATH"]
		v, err := Resolve(h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(v.ConfigOnly, "node") {
			t.Errorf("a program the workspace holds selected the node preset: configuration only %v", v.ConfigOnly)
		}
	})
	t.Run("npm on PATH", func(t *testing.T) {
		h, _ := goOnlyHome(t, "npm", "go")
		v, err := Resolve(h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		npmrc := filepath.Join(h.Home, ".npmrc")
		if !slices.Contains(v.Scrubbed, npmrc) {
			t.Fatalf("~/.npmrc is not shown with npm on PATH in a workspace without package.json; scrubbed: %v, presets %v", v.Scrubbed, v.Presets)
		}
		if !slices.Equal(v.Presets, []string{"git", "go"}) || !slices.Equal(v.ConfigOnly, []string{"node"}) {
			t.Errorf("presets %v, configuration only %v; want git,go and node", v.Presets, v.ConfigOnly)
		}
		for _, c := range v.Caches {
			if c.Preset == "node" {
				t.Errorf("cache %s (%s) shown without a package.json", c.Name, c.Path)
			}
		}
		sc, err := scrub.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		copies, err := Render(v, t.TempDir(), scrub.NewVault(), sc)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(copies, func(c Copy) bool { return c.Target == npmrc })
		if i < 0 {
			t.Fatalf("no copy rendered for %s: %+v", npmrc, copies)
		}
		b, err := os.ReadFile(copies[i].Source)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), npmToken) || !strings.Contains(string(b), "_authToken=[REDACTED:") ||
			!strings.Contains(string(b), "registry=https://npm.corp.test/") {
			t.Errorf("the copy of ~/.npmrc should keep the registry and hold a placeholder for the token:\n%s", b)
		}
	})
	t.Run("no node program on PATH", func(t *testing.T) {
		h, _ := goOnlyHome(t, "go", "nodeish", "npm.d")
		if err := os.Mkdir(filepath.Join(h.Env["PATH"], "npx"), 0o755); err != nil {
			t.Fatal(err) // a directory by a program's name is no program
		}
		v, err := Resolve(h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(v.Scrubbed, filepath.Join(h.Home, ".npmrc")) {
			t.Errorf("~/.npmrc shown with no node program on PATH: %v", v.Scrubbed)
		}
	})
	t.Run("npm a link in a system directory", func(t *testing.T) {
		// Debian's /usr/bin/npm is a link into /usr/share/nodejs; the
		// system directories are not shown from PATH, but what they hold
		// runs inside all the same.
		h, bin := goOnlyHome(t)
		if err := os.Symlink("../share/nodejs/npm/bin/npm-cli.js", filepath.Join(bin, "npm")); err != nil {
			t.Fatal(err)
		}
		v, err := Resolve(h, Options{SystemDirs: []string{bin}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(v.Scrubbed, filepath.Join(h.Home, ".npmrc")) {
			t.Errorf("~/.npmrc not shown with npm a link in a system directory: %v", v.Scrubbed)
		}
	})
	t.Run("npm only in a deny-listed directory", func(t *testing.T) {
		h, _ := goOnlyHome(t)
		ssh := filepath.Join(h.Home, ".ssh")
		os.MkdirAll(ssh, 0o700)
		os.WriteFile(filepath.Join(ssh, "npm"), []byte("#!/bin/sh\n"), 0o755)
		h.Env["PATH"] = ssh
		v, err := Resolve(h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(v.Scrubbed, filepath.Join(h.Home, ".npmrc")) {
			t.Errorf("~/.npmrc shown for an npm the sandbox hides (~/.ssh on PATH): %v", v.Scrubbed)
		}
	})
	t.Run("npm on PATH, node turned off", func(t *testing.T) {
		h, _ := goOnlyHome(t, "npm")
		v, err := Resolve(h, Options{PresetsOff: []string{"node"}})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(v.Scrubbed, filepath.Join(h.Home, ".npmrc")) {
			t.Errorf("~/.npmrc shown with the node preset turned off: %v", v.Scrubbed)
		}
	})
}

// What a PATH directory holds is kept while the directory is unchanged:
// adding or removing a program is seen on the next call, and a directory
// changed just now is scanned again rather than trusted.
func TestProgramsInKept(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	age := func(d time.Duration) {
		t.Helper()
		if err := os.Chtimes(dir, old.Add(d), old.Add(d)); err != nil {
			t.Fatal(err)
		}
	}
	has := func() bool { return programsIn([]string{dir})["npm"] }

	age(0)
	if has() {
		t.Fatal("npm found in an empty directory")
	}
	npm := filepath.Join(dir, "npm")
	if err := os.WriteFile(npm, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !has() {
		t.Fatal("npm added to a PATH directory is not seen")
	}
	if !has() {
		t.Fatal("npm in a directory changed just now is not seen the second time")
	}
	os.Remove(npm)
	age(time.Minute)
	if has() {
		t.Fatal("npm removed from a PATH directory is still seen")
	}
	// The scan of an unchanged directory is kept, and used again.
	pathCache.Lock()
	kept := pathCache.m[dir]
	pathCache.Unlock()
	if kept == nil || !slices.Equal(kept.stamps, []dirStamp{stampOf(dir)}) {
		t.Fatal("the scan of an unchanged directory was not kept")
	}
	// A program planted with the directory's modification time set back
	// (as tar -p and cp -a do) is seen: the change time moved.
	os.WriteFile(npm, []byte("#!/bin/sh\n"), 0o755)
	age(time.Minute)
	if !has() {
		t.Fatal("npm planted behind a set-back modification time is not seen")
	}
}

// BenchmarkOnPath is the lookup's cost for one call when no program of any
// preset is on PATH (every name looked up in every directory), ten
// directories of 50 files each: cached (the directories unchanged since the
// last call, the everyday case) and scanned (the cache emptied each time),
// side by side.
func BenchmarkOnPath(b *testing.B) {
	old := time.Now().Add(-time.Hour)
	var dirs []string
	for i := 0; i < 10; i++ {
		d := b.TempDir()
		for j := 0; j < 50; j++ {
			os.WriteFile(filepath.Join(d, fmt.Sprintf("tool%d", j)), nil, 0o755)
		}
		os.Chtimes(d, old, old) // not racy: the scan may be kept
		dirs = append(dirs, d)
	}
	r := &resolver{h: &Host{Home: b.TempDir(), Env: map[string]string{"PATH": strings.Join(dirs, ":")}}}
	r.deny = DenyList(r.h)
	var ps []Preset
	for _, p := range Presets {
		if len(p.Programs) > 0 {
			ps = append(ps, p)
		}
	}
	for _, mode := range []string{"cached", "scanned"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				if mode == "scanned" {
					pathCache.Lock()
					pathCache.m = nil
					pathCache.Unlock()
				}
				if got := r.onPath(ps); len(got) != 0 {
					b.Fatalf("found %v", got)
				}
			}
		})
	}
}

// BenchmarkResolve is Resolve for a Go repository with the caller's PATH
// this process has, system directories as ns shows them.
func BenchmarkResolve(b *testing.B) {
	home := b.TempDir()
	ws := filepath.Join(home, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module x\n"), 0o644)
	h := &Host{Home: home, Workspace: ws, Env: map[string]string{"PATH": os.Getenv("PATH")}}
	o := Options{SystemDirs: []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"}}
	for b.Loop() {
		if _, err := Resolve(h, o); err != nil {
			b.Fatal(err)
		}
	}
}
