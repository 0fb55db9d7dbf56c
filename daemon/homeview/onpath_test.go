package homeview

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
