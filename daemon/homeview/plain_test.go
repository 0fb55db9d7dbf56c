package homeview

import (
	"io/fs"
	"maps"
	"math/rand"
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

// shaped makes secrets in the formats the services issue them, the ones
// the scanner's (gitleaks') rules know by shape, so that the file is
// caught by the scanner were it a copy and only the view's layout rules
// can let it through as itself. They are made at run time from a fixed
// seed: the same every run, and none written in the repository.
type shaped struct{ r *rand.Rand }

func (s shaped) pick(set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[s.r.Intn(len(set))]
	}
	return string(b)
}

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	base32U = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

// The shaped secrets, each with the file it is planted in.
var (
	sh             = shaped{rand.New(rand.NewSource(20261207))}
	awsKeyID       = "AKIA" + sh.pick(base32U, 16)
	awsSecretKey   = sh.pick(alnum+"+/", 40)
	pipIndexPass   = sh.pick(alnum, 24)
	pipSrcGhToken  = "ghp_" + sh.pick(alnum, 36)
	pyenvGhToken   = "ghp_" + sh.pick(alnum, 36)
	pluginGhToken  = "github_" + "pat_" + sh.pick(alnum, 22) + "_" + sh.pick(alnum, 59)
	nvmNpmToken    = "npm_" + sh.pick(alnum, 36)
	voltaNpmToken  = "npm_" + sh.pick(alnum, 36)
	checkoutGlpat  = "glpat-" + sh.pick(alnum, 20)
	checkoutEnvKey = "sk_" + "live_" + sh.pick(alnum, 24)
	monoEnvKey     = "sk_" + "live_" + sh.pick(alnum, 24)
	submoduleTok   = "ghp_" + sh.pick(alnum, 36)
)

func shapedSecrets() []string {
	return []string{awsKeyID, awsSecretKey, pipIndexPass, pipSrcGhToken, pyenvGhToken, pluginGhToken, nvmNpmToken, voltaNpmToken, checkoutGlpat, checkoutEnvKey, monoEnvKey, submoduleTok}
}

// shapedFiles lay out, as each tool does on disk, what a developer's
// machine holds besides: a pipx app, a pyenv clone with its Pythons and
// plugins, a second nvm node, volta, and a checkout whose program ~/bin
// links to. plantHome puts their bin directories on PATH.
var shapedFiles = map[string]string{
	// pipx (~/.local/pipx before pipx 1.3 moved it to ~/.local/share): one
	// venv per app, the app linked from ~/.local/bin. pip reads a venv's
	// own pip.conf; a .env beside it is what a developer leaves there.
	".local/pipx/venvs/httpie/pyvenv.cfg":                                 "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.1\n",
	".local/pipx/venvs/httpie/bin/httpie":                                 "#!/home/u/.local/pipx/venvs/httpie/bin/python\n",
	".local/pipx/venvs/httpie/lib/python3.12/site-packages/httpie/cli.py": "print('http')\n",
	".local/pipx/venvs/httpie/.env":                                       "AWS_ACCESS_KEY_ID=" + awsKeyID + "\nAWS_SECRET_ACCESS_KEY=" + awsSecretKey + "\n",
	".local/pipx/venvs/httpie/pip.conf":                                   "[global]\nindex-url = https://deploy:" + pipIndexPass + "@pypi.corp.example/simple/\n",
	// `pipx inject -e git+URL` (pip's editable VCS install) clones into the
	// venv's src/.
	".local/pipx/venvs/httpie/src/httpie-plugin/.git/config": "[remote \"origin\"]\n\turl = https://" + pipSrcGhToken + "@github.com/corp/httpie-plugin.git\n",
	// pyenv is a git clone, and pyenv-installer clones its plugins into
	// plugins/: each remembers the URL it was cloned from.
	".pyenv/bin/pyenv":                                     "#!/usr/bin/env bash\n",
	".pyenv/libexec/pyenv":                                 "#!/usr/bin/env bash\n",
	".pyenv/shims/python":                                  "#!/usr/bin/env bash\n",
	".pyenv/versions/3.12.1/bin/python3.12":                "ELF",
	".pyenv/versions/3.12.1/lib/python3.12/os.py":          "import abc\n",
	".pyenv/.git/config":                                   "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://x-access-token:" + pyenvGhToken + "@github.com/pyenv/pyenv.git\n",
	".pyenv/plugins/pyenv-virtualenv/bin/pyenv-virtualenv": "#!/usr/bin/env bash\n",
	".pyenv/plugins/pyenv-virtualenv/.git/config":          "[remote \"origin\"]\n\turl = https://" + pluginGhToken + "@github.com/pyenv/pyenv-virtualenv.git\n",
	// A second nvm node, with npm's global config of that prefix.
	".nvm/versions/node/v22.2.0/bin/node":                          "ELF",
	".nvm/versions/node/v22.2.0/lib/node_modules/npm/package.json": "{}",
	".nvm/versions/node/v22.2.0/etc/npmrc":                         "//registry.npmjs.org/:_authToken=" + nvmNpmToken + "\n",
	// volta: shims in ~/.volta/bin, node images below tools/image; npm's
	// global config is the image's etc/npmrc (its prefix).
	".volta/bin/volta":                         "ELF",
	".volta/bin/node":                          "ELF",
	".volta/tools/image/node/20.11.0/bin/node": "ELF",
	".volta/tools/image/node/20.11.0/lib/node_modules/npm/x.js": "x",
	".volta/tools/image/node/20.11.0/etc/npmrc":                 "//registry.npmjs.org/:_authToken=" + voltaNpmToken + "\n",
	// A checkout with its dependencies installed, its program linked from
	// ~/bin (on PATH).
	"src/tool3/bin/tool3":                     "#!/usr/bin/env node\n",
	"src/tool3/lib/node_modules/dep/index.js": "module.exports = 1\n",
	"src/tool3/.git/config":                   "[remote \"origin\"]\n\turl = https://oauth2:" + checkoutGlpat + "@gitlab.com/corp/tool3.git\n",
	"src/tool3/.env":                          "STRIPE_KEY=" + checkoutEnvKey + "\n",
	// A submodule of pyenv's clone remembers its remote too.
	".pyenv/.git/modules/plugins/config": "[remote \"origin\"]\n\turl = https://" + submoduleTok + "@github.com/corp/p.git\n",
	// nodenv, a git clone like pyenv: its node versions are install
	// prefixes though a .git lies above them.
	".nodenv/.git/HEAD":                                  "ref: refs/heads/master\n",
	".nodenv/versions/20.11.0/bin/node":                  "ELF",
	".nodenv/versions/20.11.0/lib/node_modules/npm/x.js": "x",
	// A package of a monorepo, dependencies installed, its program linked
	// from ~/bin: its own directory has no .git, the repository's has.
	"src/mono/.git/HEAD":                                  "ref: refs/heads/main\n",
	"src/mono/packages/cli/bin/cli":                       "#!/usr/bin/env node\n",
	"src/mono/packages/cli/lib/node_modules/dep/index.js": "module.exports = 1\n",
	"src/mono/packages/cli/.env":                          "STRIPE_KEY=" + monoEnvKey + "\n",
}

// plantHome writes plantedSecrets into a new home and links its PATH the
// way `npm link`, nvm and a hand-made link into a checkout do.
func plantHome(t *testing.T) (home, ws string, h *Host) {
	t.Helper()
	home = t.TempDir()
	files := maps.Clone(plantedSecrets)
	maps.Copy(files, shapedFiles)
	for name, content := range files {
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
		// pipx links each app of a venv into ~/.local/bin.
		".local/bin/httpie": filepath.Join(home, ".local/pipx/venvs/httpie/bin/httpie"),
		// A hand-made link to a program inside a checkout.
		"bin/tool3": filepath.Join(home, "src/tool3/bin/tool3"),
		"bin/cli":   filepath.Join(home, "src/mono/packages/cli/bin/cli"),
	}
	for name, target := range links {
		p := filepath.Join(home, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	var dirs []string
	for _, d := range []string{".npm-global/bin", ".nvm/versions/node/v20.11.0/bin", ".local/bin",
		// What `pyenv init` and a `pyenv shell` put on PATH, nvm's other
		// node, volta's shims, a ~/bin of links.
		".pyenv/bin", ".pyenv/shims", ".pyenv/versions/3.12.1/bin", ".nvm/versions/node/v22.2.0/bin", ".volta/bin", "bin",
		".nodenv/versions/20.11.0/bin"} {
		dirs = append(dirs, filepath.Join(home, d))
	}
	path := strings.Join(append(dirs, "/usr/bin"), ":")
	return home, filepath.Join(home, "ws"), &Host{Home: home, Workspace: filepath.Join(home, "ws"), Env: map[string]string{"PATH": path}}
}

// secretsIn lists the planted secret values that occur in b.
func secretsIn(b []byte) []string {
	var out []string
	for _, v := range append(shapedSecrets(), "envTok3nVal", "gitTreeTok", "envTwoSecretVal", "npmGlobalTok", "bnZtQXV0aFZhbA==", "hdrBearerVal",
		"insteadTokVal", "urlPassVal", "xdgHdrVal", "pnpmRcTok", "goProxyPassVal", "yarnOneTokVal", "yarnBerryTokVal") {
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
	// Each shaped secret is one the scanner knows by its shape, as it would
	// be on a real machine; the password of pip's index URL has no shape,
	// and Redact takes it out of the URL.
	for name, content := range shapedFiles {
		for _, sec := range secretsIn([]byte(content)) {
			if !slices.ContainsFunc(sc.Find([]byte(content)), func(f scrub.Finding) bool { return strings.Contains(f.Secret, sec) }) && sec != pipIndexPass {
				t.Errorf("%s: the scanner does not know %.8s... by its shape", name, sec)
			}
		}
	}
	// The check proves something only where the view reaches: each
	// directory holding a planted credential is shown (or, for the
	// checkout, the program linked into it is).
	reached := func(p string) bool {
		p = filepath.Join(home, p)
		return slices.ContainsFunc(v.ReadOnly, func(r string) bool { return within(p, r) })
	}
	for _, dir := range []string{".local/pipx/venvs/httpie", ".local/pipx/venvs/httpie/src/httpie-plugin", ".pyenv", ".pyenv/plugins/pyenv-virtualenv",
		".nvm/versions/node/v22.2.0/etc", ".volta/tools/image/node/20.11.0/etc", "src/tool3/bin/tool3", "src/mono/packages/cli/bin/cli",
		".nodenv/versions/20.11.0/lib/node_modules"} {
		if !reached(dir) {
			t.Errorf("%s is not shown: the planted credentials near it are not tested", dir)
		}
	}
	for _, tree := range []string{"src/tool", "src/tool2", "src/tool2/bin", "src", "src/tool3", "src/tool3/bin", "src/mono/packages/cli", "src/mono/packages/cli/bin"} {
		if slices.Contains(v.ReadOnly, filepath.Join(home, tree)) {
			t.Errorf("the checkout %s is shown whole", tree)
		}
	}
}
