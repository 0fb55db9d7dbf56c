//go:build e2e

package e2e

// Attacks on what a call sees of $HOME (issue 25, items 8 and 9), as the
// unprivileged test user against the real user manager and the default
// configuration. Every verdict is read from the host's disk, never from a
// call's (scrubbed) output: the scrubber would hide the very leak.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// attackWorkspace makes (afresh) a workspace of the test user's, with a
// package.json so that the node preset and its npm cache apply, and removes
// it at the end of the test.
func attackWorkspace(t *testing.T, name string) string {
	t.Helper()
	ws := filepath.Join(env.home, name)
	if r := userSh(t, fmt.Sprintf("rm -rf %s && mkdir -p %s/.git ~/.npm && echo '{}' > %s/package.json", shq(ws), shq(ws), shq(ws))); r.code != 0 {
		t.Fatalf("workspace %s: %s", ws, r)
	}
	t.Cleanup(func() { userSh(t, "rm -rf "+shq(ws)) })
	return ws
}

// homeBash runs script through the safe_bash symlink with ws as the working
// directory (and so the workspace), with extra environment words.
func homeBash(t *testing.T, ws string, vars []string, script string) result {
	t.Helper()
	link := filepath.Join(env.project, ".claude", "tools", "safe_bash", "safe_bash")
	return runAs(t, ws, vars, "", link, script)
}

// hostFile reads a file the sandbox wrote, as root from the host.
func hostFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%s not written by the call: %v", p, err)
	}
	return string(b)
}

// homePlant writes files into the test user's home (owned by the user) and puts
// back what was there at the end of the test.
func homePlant(t *testing.T, files map[string]string, links map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(env.home, name)
		old, err := os.ReadFile(p)
		existed := err == nil
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if existed {
				os.WriteFile(p, old, 0o644)
			} else {
				os.Remove(p)
			}
		})
	}
	for name, target := range links {
		p := filepath.Join(env.home, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
	}
	// Everything made here is the user's, as their own tools would make it.
	for _, top := range []string{"src-ctxd-attack", ".npm-global", ".nvm", ".local", ".config", ".gitconfig", ".yarnrc", ".yarnrc.yml"} {
		exec.Command("chown", "-R", fmt.Sprintf("%d:%d", env.uid, env.uid), filepath.Join(env.home, top)).Run()
		exec.Command("chown", "-h", fmt.Sprintf("%d:%d", env.uid, env.uid), filepath.Join(env.home, top)).Run()
	}
	t.Cleanup(func() {
		os.RemoveAll(filepath.Join(env.home, "src-ctxd-attack"))
		os.RemoveAll(filepath.Join(env.home, ".npm-global"))
		os.RemoveAll(filepath.Join(env.home, ".nvm"))
	})
}

// Item 8: credentials planted in the formats real tools write them, some
// reached only through PATH (a link into a checkout as `npm link` makes,
// an npm prefix, an nvm node), none shaped like anything a secret scanner
// knows. A safe_bash call copies whatever it can see of $HOME, following
// every link, into a file in its workspace; none of the secrets may be in
// that file on the host's disk. (The walk leaves out the toolchain caches,
// ~/.npm, ~/.cache and ~/go, overlays of the user's own caches where nothing
// is planted, which would only make the dump large.)
func TestAttackHomeViewCopiesEverything(t *testing.T) {
	ws := attackWorkspace(t, "proj-homeview")
	// A Go module too, so that the go preset shows its env file.
	if r := userSh(t, "echo 'module x' > "+shq(filepath.Join(ws, "go.mod"))); r.code != 0 {
		t.Fatal(r)
	}
	tag := make([]byte, 6)
	rand.Read(tag)
	sec := func(name string) string { return name + hex.EncodeToString(tag) }
	secrets := []string{sec("envTok"), sec("treeTok"), sec("npmGlobal"), sec("nvmAuth"), sec("hdrBearer"), sec("insteadTok"),
		sec("urlPass"), sec("xdgHdr"), sec("pnpmTok"), sec("goProxyPass"), sec("yarnOne"), sec("yarnBerry"), sec("envTwo")}
	src := "src-ctxd-attack"
	nvm := ".nvm/versions/node/v20.11.0"
	homePlant(t, map[string]string{
		src + "/tool/.env":                   "API_TOKEN=" + secrets[0] + "\n",
		src + "/tool/.git/config":            "[remote \"origin\"]\n\turl = https://bob:" + secrets[1] + "@git.corp.example/tool.git\n",
		src + "/tool/cli.js":                 "#!/usr/bin/env node\nconsole.log('ctxd-attack-tool')\n",
		src + "/tool/package.json":           "{\"name\":\"tool\",\"bin\":\"cli.js\"}\n",
		src + "/tool2/bin/tool2":             "#!/bin/sh\necho ctxd-attack-tool2\n",
		src + "/tool2/.env":                  "SECRET_KEY=" + secrets[12] + "\n",
		".npm-global/etc/npmrc":              "//npm.corp.example/:_authToken=" + secrets[2] + "\n",
		".npm-global/lib/node_modules/.keep": "",
		nvm + "/bin/nodeish":                 "#!/bin/sh\n",
		nvm + "/etc/npmrc":                   "//registry.npmjs.org/:_auth=" + secrets[3] + "\n",
		nvm + "/lib/node_modules/.keep":      "",
		".gitconfig": "[user]\n\tname = ctxd-attack\n[http \"https://git.corp.example/\"]\n\textraHeader = Authorization: Bearer " + secrets[4] + "\n" +
			"[url \"https://" + secrets[5] + "@github.com/\"]\n\tinsteadOf = https://github.com/\n" +
			"[remote \"x\"]\n\turl = https://alice:" + secrets[6] + "@git.corp.example/r.git\n",
		".config/git/config": "[http]\n\textraheader = AUTHORIZATION: basic " + secrets[7] + "\n",
		".config/pnpm/rc":    "//npm.pkg.example/:_authToken=" + secrets[8] + "\n",
		".config/go/env":     "GOPROXY=https://gouser:" + secrets[9] + "@proxy.corp.example,direct\nGONOSUMDB=corp.example\n",
		".yarnrc":            "registry \"https://registry.yarnpkg.com\"\n\"//npm.corp.example/:_authToken\" " + secrets[10] + "\n",
		".yarnrc.yml":        "npmRegistries:\n  \"https://npm.corp.example\":\n    npmAuthToken: " + secrets[11] + "\n",
	}, map[string]string{
		".npm-global/lib/node_modules/tool": filepath.Join(env.home, src, "tool"),
		".npm-global/bin/tool":              "../lib/node_modules/tool/cli.js",
		".local/bin/ctxd-attack-tool2":      filepath.Join(env.home, src, "tool2/bin/tool2"),
	})
	path := strings.Join([]string{filepath.Join(env.home, ".npm-global/bin"), filepath.Join(env.home, ".local/bin"),
		"/usr/local/bin", "/usr/bin", "/bin", filepath.Join(env.home, nvm, "bin")}, ":")
	script := `out="$PWD/dump.txt"
{
  find -L ~ /home \( -path "$PWD" -o -path ~/.npm -o -path ~/.cache -o -path ~/go \) -prune -o -type f -size -1000k -print0 2>/dev/null | xargs -0 cat 2>/dev/null
  for d in $(echo "$PATH" | tr : ' '); do case "$d" in "$HOME"/*) ls -laL "$d"; cat "$d"/* 2>/dev/null;; esac; done
  cat ~/.gitconfig ~/.config/git/config ~/.config/go/env ~/.config/pnpm/rc ~/.yarnrc ~/.yarnrc.yml ~/.npm-global/etc/npmrc \
      ~/` + nvm + `/etc/npmrc ~/` + src + `/tool/.env ~/` + src + `/tool/.git/config ~/` + src + `/tool2/.env
  grep -r . ~/.config ~/.npm-global ~/.nvm ~/` + src + `
  git config --global --list
  ctxd-attack-tool2
} > "$out" 2>&1
echo dumped $(wc -c < "$out")`
	r := homeBash(t, ws, []string{"PATH=" + path}, script)
	if r.code != 0 || !strings.Contains(r.stdout, "dumped") {
		t.Fatalf("the dump did not run: %s", r)
	}
	dump := hostFile(t, filepath.Join(ws, "dump.txt"))
	defer func() {
		if t.Failed() {
			os.WriteFile("/tmp/contextd-e2e-attack-home-dump.txt", []byte(dump), 0o600)
			t.Log("the dump is kept in /tmp/contextd-e2e-attack-home-dump.txt")
		}
	}()
	for _, s := range secrets {
		if strings.Contains(dump, s) {
			i := strings.Index(dump, s)
			t.Errorf("secret %s is in the dump on the host's disk: ...%q...", s, dump[max(0, i-200):min(len(dump), i+40)])
		}
	}
	// The dump saw what the view shows, so the check above could fail: the
	// linked programs, the copies with placeholders, git's identity.
	for _, want := range []string{"ctxd-attack-tool2", "console.log('ctxd-attack-tool')", "[REDACTED:", "name = ctxd-attack", "GONOSUMDB=corp.example"} {
		if !strings.Contains(dump, want) {
			t.Errorf("the dump lacks %q: the view hides more than it should, or the attack saw nothing (%d bytes)", want, len(dump))
		}
	}
}

// homeProbe is a minimal MCP server (JSON-RPC over stdio, no dependencies)
// that, before it answers anything, writes to server-saw.json in its
// working directory which of the paths it was given it finds below its
// $HOME, and plants its own entries in its scratch home and npm cache.
const homeProbe = `import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
const home = process.env.HOME;
const saw = {};
for (const p of process.argv.slice(2)) {
  try { saw[p] = fs.readFileSync(path.join(home, p), 'utf8'); } catch (e) { saw[p] = null; }
}
fs.writeFileSync(path.join(process.cwd(), 'server-saw.json'), JSON.stringify(saw));
fs.writeFileSync(path.join(home, 'server-plant'), 'server');
fs.mkdirSync(path.join(home, '.npm/_npx/serverplanted'), { recursive: true });
fs.writeFileSync(path.join(home, '.npm/_npx/serverplanted/package.json'), '{}');
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  let result;
  if (m.method === 'initialize') {
    result = { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'homeprobe', version: '1.0.0' } };
  } else if (m.method === 'tools/list') {
    result = { tools: [] };
  } else if (m.method === 'ping') {
    result = {};
  }
  const answer = result ? { jsonrpc: '2.0', id: m.id, result } : { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } };
  process.stdout.write(JSON.stringify(answer) + '\n');
});
`

// Item 9: safe_bash and a wrapped MCP server of the same workspace plant
// for each other through their scratch home and npm cache; a workspace made
// again at its path inherits its predecessor's. Neither may happen.
func TestAttackLayersPerSandbox(t *testing.T) {
	ws := attackWorkspace(t, "proj-layers")
	bashPlants := []string{".npmrc", "bash-plant", ".npm/_npx/bashplanted/package.json"}
	r := homeBash(t, ws, nil, `printf 'node-options=--require=/tmp/ctxd-evil.js\n' > ~/.npmrc && echo bash > ~/bash-plant &&
mkdir -p ~/.npm/_npx/bashplanted && echo '{}' > ~/.npm/_npx/bashplanted/package.json && echo planted`)
	if r.code != 0 || !strings.Contains(r.stdout, "planted") {
		t.Fatalf("safe_bash could not plant in its own home: %s", r)
	}

	probe := filepath.Join(ws, "homeprobe.mjs")
	if err := os.WriteFile(probe, []byte(homeProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(probe, env.uid, env.uid)
	w := startWrapIn(t, ws, "homeprobe", nil, append([]string{"node", probe}, bashPlants...)...)
	w.close()
	var saw map[string]*string
	if err := json.Unmarshal([]byte(hostFile(t, filepath.Join(ws, "server-saw.json"))), &saw); err != nil {
		t.Fatal(err)
	}
	for _, p := range bashPlants {
		if v, ok := saw[p]; !ok || v != nil {
			t.Errorf("the wrapped server found safe_bash's ~/%s (%v)", p, ok)
		}
	}

	// And the other way round; safe_bash's own plant is still there, so
	// the check can fail.
	check := `for p in server-plant .npm/_npx/serverplanted/package.json bash-plant; do test -e ~/"$p" && echo "seen $p"; done > "$PWD/bash-saw.txt"; echo checked`
	if r := homeBash(t, ws, nil, check); r.code != 0 || !strings.Contains(r.stdout, "checked") {
		t.Fatalf("check: %s", r)
	}
	got := hostFile(t, filepath.Join(ws, "bash-saw.txt"))
	if got != "seen bash-plant\n" {
		t.Errorf("safe_bash after the server saw %q, want only its own bash-plant", got)
	}

	// The workspace deleted and made again at its path starts empty.
	if r := userSh(t, fmt.Sprintf("rm -rf %s && mkdir -p %s/.git && echo '{}' > %s/package.json", shq(ws), shq(ws), shq(ws))); r.code != 0 {
		t.Fatal(r)
	}
	if r := homeBash(t, ws, nil, check); r.code != 0 || !strings.Contains(r.stdout, "checked") {
		t.Fatalf("check: %s", r)
	}
	if got := hostFile(t, filepath.Join(ws, "bash-saw.txt")); got != "" {
		t.Errorf("a workspace made again at %s sees the old one's layers: %q", ws, got)
	}
}
