package homeview

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/scrub"
)

// plantedSecrets are credentials in the formats real tools write them, none
// of which a secret scanner recognises by shape: only the view's own rules
// (which files are copies, which keys and URL parts are redacted) keep them
// out.
var plantedSecrets = map[string]string{
	"src/tool/.env":                                             "API_TOKEN=envTok3nVal\n",
	"src/tool/.git/config":                                      "[remote \"origin\"]\n\turl = https://bob:gitTreeTok@git.corp.example/tool.git\n",
	"src/tool/cli.js":                                           "#!/usr/bin/env node\nconsole.log('tool')\n",
	"src/tool/package.json":                                     "{\"name\":\"tool\",\"bin\":\"cli.js\"}\n",
	"src/tool2/bin/tool2":                                       "#!/bin/sh\necho tool2\n",
	"src/tool2/.env":                                            "SECRET_KEY=envTwoSecretVal\n",
	".npm-global/etc/npmrc":                                     "//npm.corp.example/:_authToken=npmGlobalTok\n",
	".npm-global/lib/node_modules/x/x.js":                       "x",
	".nvm/versions/node/v20.11.0/bin/node":                      "ELF",
	".nvm/versions/node/v20.11.0/etc/npmrc":                     "//registry.npmjs.org/:_auth=bnZtQXV0aFZhbA==\n",
	".nvm/versions/node/v20.11.0/lib/node_modules/npm/index.js": "n",
	".gitconfig": "[user]\n\tname = T\n[http \"https://git.corp.example/\"]\n\textraHeader = Authorization: Bearer hdrBearerVal\n" +
		"[url \"https://insteadTokVal@github.com/\"]\n\tinsteadOf = https://github.com/\n" +
		"[remote \"x\"]\n\turl = https://alice:urlPassVal@git.corp.example/r.git\n",
	".config/git/config": "[http]\n\textraheader = AUTHORIZATION: basic xdgHdrVal\n",
	".config/git/ignore": "*.o\n",
	".config/pnpm/rc":    "//npm.pkg.example/:_authToken=pnpmRcTok\n",
	".config/go/env":     "GOPROXY=https://gouser:goProxyPassVal@proxy.corp.example,direct\nGONOSUMDB=corp.example\nGOFLAGS=-mod=mod\n",
	".yarnrc":            "registry \"https://registry.yarnpkg.com\"\n\"//npm.corp.example/:_authToken\" yarnOneTokVal\n",
	".yarnrc.yml":        "npmRegistries:\n  \"https://npm.corp.example\":\n    npmAuthToken: yarnBerryTokVal\n",
	"ws/package.json":    "{}",
	"ws/go.mod":          "module x\n",
}

// plantHome writes plantedSecrets into a new home and links its PATH the
// way `npm link`, nvm and a hand-made link into a checkout do.
func plantHome(t *testing.T) (home, ws string, h *Host) {
	t.Helper()
	home = t.TempDir()
	for name, content := range plantedSecrets {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		".npm-global/lib/node_modules/tool": filepath.Join(home, "src/tool"),
		".npm-global/bin/tool":              "../lib/node_modules/tool/cli.js",
		".local/bin/tool2":                  filepath.Join(home, "src/tool2/bin/tool2"),
	}
	for name, target := range links {
		p := filepath.Join(home, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	path := strings.Join([]string{filepath.Join(home, ".npm-global/bin"), filepath.Join(home, ".nvm/versions/node/v20.11.0/bin"),
		filepath.Join(home, ".local/bin"), "/usr/bin"}, ":")
	return home, filepath.Join(home, "ws"), &Host{Home: home, Workspace: filepath.Join(home, "ws"), Env: map[string]string{"PATH": path}}
}

// secretsIn lists the planted secret values that occur in b.
func secretsIn(b []byte) []string {
	var out []string
	for _, v := range []string{"envTok3nVal", "gitTreeTok", "envTwoSecretVal", "npmGlobalTok", "bnZtQXV0aFZhbA==", "hdrBearerVal",
		"insteadTokVal", "urlPassVal", "xdgHdrVal", "pnpmRcTok", "goProxyPassVal", "yarnOneTokVal", "yarnBerryTokVal"} {
		if strings.Contains(string(b), v) {
			out = append(out, v)
		}
	}
	return out
}

// Every byte a call could read of the home, as the view would mount it,
// read from the host's disk: the shown paths (whole trees, not following
// links, which lead to shown paths or nowhere inside), minus the masks,
// with each scrubbed file replaced by its rendered copy. No planted
// credential may be in any of it.
func TestNoPlainCredentials(t *testing.T) {
	home, _, h := plantHome(t)
	v, err := Resolve(h, Options{SystemDirs: []string{"/usr"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scrub.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	copies, err := Render(v, t.TempDir(), scrub.NewVault(), sc)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string][]byte{}
	for _, root := range v.ReadOnly {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatalf("walk %s: %v", p, err)
			}
			if slices.ContainsFunc(v.Masks, func(m string) bool { return within(p, m) }) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				shown[p] = b
			}
			return nil
		})
	}
	for _, c := range copies {
		b, err := os.ReadFile(c.Source)
		if err != nil {
			t.Fatal(err)
		}
		shown[c.Target] = b
	}
	for p, b := range shown {
		if s := secretsIn(b); len(s) > 0 {
			t.Errorf("%s is shown holding %v", strings.TrimPrefix(p, home+"/"), s)
		}
	}
	// What the programs on PATH need is still there: the linked program
	// itself (not its checkout), the npm prefix, nvm's node.
	for _, want := range []string{"src/tool/cli.js", "src/tool2/bin/tool2", ".npm-global/lib/node_modules/x/x.js",
		".nvm/versions/node/v20.11.0/bin/node", ".config/git/ignore", ".gitconfig", ".yarnrc.yml"} {
		if _, ok := shown[filepath.Join(home, want)]; !ok {
			t.Errorf("%s is not shown", want)
		}
	}
	for _, tree := range []string{"src/tool", "src/tool2", "src/tool2/bin", "src"} {
		if slices.Contains(v.ReadOnly, filepath.Join(home, tree)) {
			t.Errorf("the checkout %s is shown whole", tree)
		}
	}
}
