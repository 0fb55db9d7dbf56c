package registries

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/homeview"
)

// discover runs Discover on a fresh home holding files, with env, and no
// system-wide configuration. Every result is checked for secrets in notes.
func discover(t *testing.T, files map[string]string, env map[string]string) (Found, string) {
	t.Helper()
	home := t.TempDir()
	etc := t.TempDir()
	old := etcDir
	etcDir = etc
	t.Cleanup(func() { etcDir = old })
	expanded := map[string]string{}
	for name, content := range files {
		if rest, ok := strings.CutPrefix(name, "/etc/"); ok {
			writeFiles(t, etc, map[string]string{rest: content})
			continue
		}
		expanded[name] = strings.ReplaceAll(content, "$HOME", home)
	}
	writeFiles(t, home, expanded)
	e := map[string]string{}
	for k, v := range env {
		e[k] = strings.ReplaceAll(v, "$HOME", home)
	}
	f := Discover(&homeview.Host{Home: home, Env: e})
	noSecretsInNotes(t, f)
	// Nor the passwords of URLs in the environment, which are no Secret.
	for _, v := range e {
		for _, field := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == '|' }) {
			u, _ := parseURL(field)
			if pw, ok := u.password(); ok && hasNote(f, pw) {
				t.Errorf("a note holds the password of %s: %q", u.hostPort(), f.Notes)
			}
		}
	}
	return f, home
}

func noSecretsInNotes(t *testing.T, f Found) {
	t.Helper()
	for _, n := range f.Notes {
		for _, s := range f.Secrets {
			if strings.Contains(n, s.Value) {
				t.Errorf("note %q holds the secret of %s", n, s.Key)
			}
		}
	}
}

func regs(f Found) []string {
	var out []string
	for _, r := range f.Registries {
		out = append(out, fmt.Sprintf("%s://%s:%d", r.Scheme, r.Host, r.Port))
	}
	return out
}

func hasReg(f Found, hostport string) bool {
	return slices.ContainsFunc(f.Registries, func(r Registry) bool { return fmt.Sprintf("%s:%d", r.Host, r.Port) == hostport })
}

func source(f Found, hostport string) string {
	for _, r := range f.Registries {
		if fmt.Sprintf("%s:%d", r.Host, r.Port) == hostport {
			return r.Source
		}
	}
	return ""
}

func hasNote(f Found, sub string) bool {
	return slices.ContainsFunc(f.Notes, func(n string) bool { return strings.Contains(n, sub) })
}

func secretFor(f Found, key string) (Secret, bool) {
	for _, s := range f.Secrets {
		if s.Key == key {
			return s, true
		}
	}
	return Secret{}, false
}

var defaults = []string{
	"https://registry.npmjs.org:443",
	"https://proxy.golang.org:443",
	"https://sum.golang.org:443",
	"https://pypi.org:443",
	"https://files.pythonhosted.org:443",
	"https://index.crates.io:443",
	"https://static.crates.io:443",
	"https://crates.io:443",
	"https://repo.maven.apache.org:443",
	"https://repo1.maven.org:443",
}

func TestDefaults(t *testing.T) {
	f, _ := discover(t, nil, nil)
	if got := regs(f); !slices.Equal(got, defaults) {
		t.Errorf("registries:\n got %q\nwant %q", got, defaults)
	}
	if len(f.Secrets) != 0 || len(f.Notes) != 0 || len(f.CAFiles) != 0 {
		t.Errorf("secrets %v, notes %q, CAs %q: want none", f.Secrets, f.Notes, f.CAFiles)
	}
	if s := source(f, "registry.npmjs.org:443"); s != "npm default" {
		t.Errorf("source %q", s)
	}
}

// Registries are one per host and port, the first source to name one
// being the one shown.
func TestDedup(t *testing.T) {
	f, _ := discover(t, map[string]string{
		".npmrc":                       "registry=https://Registry.NPMJS.org/\n",
		".config/pip/pip.conf":         "[global]\nextra-index-url = https://pypi.org/simple https://pypi.org:8443/simple\n",
		".config/pypoetry/config.toml": "[repositories.x]\nurl = \"https://pypi.org/legacy/\"\n",
	}, nil)
	seen := map[string]int{}
	for _, r := range regs(f) {
		seen[r]++
		if seen[r] > 1 {
			t.Errorf("%s listed twice", r)
		}
	}
	if !hasReg(f, "pypi.org:8443") || source(f, "registry.npmjs.org:443") != "npm registry (~/.npmrc)" {
		t.Errorf("%+v", f.Registries)
	}
}

func TestNpm(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		env       map[string]string
		want      []string // host:port present
		notWant   []string
		secrets   map[string]string // key -> host:port
		noSecrets []string
		note      string
	}{
		{
			name:    "environment over file",
			files:   map[string]string{".npmrc": "registry=https://file.example/\n_authToken=tok3nForTheDefault99\n"},
			env:     map[string]string{"npm_config_registry": "https://env.example:8080/"},
			want:    []string{"env.example:8080"},
			notWant: []string{"file.example:443", "registry.npmjs.org:443"},
			// An unscoped token belongs to the registry in force.
			secrets: map[string]string{"_authToken": "env.example:8080"},
		},
		{
			name:    "upper-case user config variable",
			files:   map[string]string{"elsewhere/npmrc": "registry=https://other.example/\n", ".npmrc": "registry=https://home.example/\n"},
			env:     map[string]string{"NPM_CONFIG_USERCONFIG": "$HOME/elsewhere/npmrc"},
			want:    []string{"other.example:443"},
			notWant: []string{"home.example:443"},
		},
		{
			name: "scopes, ports, the last of a key, sections",
			files: map[string]string{".npmrc": `registry=https://first.example/
registry=https://second.example/
@a:registry=http://plain.example/
"@b:registry" = "https://quoted.example:8443/"
//plain.example/:_authToken=plainT0kenValue123
//second.example/npm/:_auth=c2Vjb25kOnBhc3N3b3JkMQ==
[section]
@c:registry=https://in-section.example/
`},
			want:    []string{"second.example:443", "plain.example:80", "quoted.example:8443"},
			notWant: []string{"first.example:443", "in-section.example:443"},
			secrets: map[string]string{"//plain.example/:_authToken": "plain.example:80", "//second.example/npm/:_auth": "second.example:443"},
		},
		{
			name:      "references to the environment",
			files:     map[string]string{".npmrc": "registry=${REG}\n//r.example/:_authToken=${NPM_TOKEN}\n//s.example/:_authToken=pre${X}fix\n@u:registry=${UNSET}\n"},
			env:       map[string]string{"REG": "https://from-env.example/", "X": "y"},
			want:      []string{"from-env.example:443"},
			noSecrets: []string{"//r.example/:_authToken", "//s.example/:_authToken"},
			note:      "@u:registry (~/.npmrc): names an environment variable that is not set",
		},
		{
			name:    "credentials in the registry URL",
			files:   map[string]string{".npmrc": "registry=https://ci:Pa55w0rdXyz@npm.corp.example/\n"},
			secrets: map[string]string{"registry password": "npm.corp.example:443"},
		},
		{
			name:  "not a URL",
			files: map[string]string{".npmrc": "registry=ftp://x.example/\n@a:registry=nonsense\n"},
			want:  []string{"registry.npmjs.org:443"},
			note:  "registry (~/.npmrc): a ftp URL, not http(s); no rule",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := discover(t, tt.files, tt.env)
			checkCase(t, f, tt.want, tt.notWant, tt.secrets, tt.noSecrets, tt.note)
		})
	}
}

func checkCase(t *testing.T, f Found, want, notWant []string, secrets map[string]string, noSecrets []string, note string) {
	t.Helper()
	for _, w := range want {
		if !hasReg(f, w) {
			t.Errorf("no registry %s in %q", w, regs(f))
		}
	}
	for _, w := range notWant {
		if hasReg(f, w) {
			t.Errorf("registry %s in %q", w, regs(f))
		}
	}
	for key, hp := range secrets {
		s, ok := secretFor(f, key)
		if !ok {
			t.Errorf("no secret %s in %+v", key, f.Secrets)
			continue
		}
		if got := fmt.Sprintf("%s:%d", s.Host, s.Port); got != hp {
			t.Errorf("secret %s for %s, want %s", key, got, hp)
		}
		if !filepath.IsAbs(s.File) {
			t.Errorf("secret %s: file %q", key, s.File)
		}
	}
	for _, key := range noSecrets {
		if _, ok := secretFor(f, key); ok {
			t.Errorf("secret %s: want none", key)
		}
	}
	if note != "" && !hasNote(f, note) {
		t.Errorf("no note %q in %q", note, f.Notes)
	}
}

func TestYarn(t *testing.T) {
	f, home := discover(t, map[string]string{".yarnrc.yml": `npmRegistryServer: "${YARN_REG}"
npmAuthToken: "${NPM_TOKEN}"
npmRegistries:
  "//npm.private.example":
    npmAuthToken: privT0kenAbcdef12345
npmScopes:
  s:
    npmAuthIdent: "user:pa55word"
httpsCaFilePath: $HOME/ca.pem
`, "ca.pem": "pem"}, map[string]string{"YARN_REG": "https://yarn.corp.example"})
	checkCase(t, f, []string{"yarn.corp.example:443"}, []string{"registry.yarnpkg.com:443"},
		map[string]string{"npmRegistries[//npm.private.example:443].npmAuthToken": "npm.private.example:443", "npmScopes.s.npmAuthIdent": "yarn.corp.example:443"},
		[]string{"npmAuthToken"}, "")
	if !slices.Equal(f.CAFiles, []string{filepath.Join(home, "ca.pem")}) {
		t.Errorf("CAs %q", f.CAFiles)
	}

	// With no server named, yarn's own default.
	f, _ = discover(t, map[string]string{".yarnrc.yml": "npmAuthToken: dfltT0kenAbcdef12345\n"}, nil)
	checkCase(t, f, []string{"registry.yarnpkg.com:443"}, nil, map[string]string{"npmAuthToken": "registry.yarnpkg.com:443"}, nil, "")
}

func TestGo(t *testing.T) {
	goenv := ".config/go/env"
	tests := []struct {
		name    string
		files   map[string]string
		env     map[string]string
		want    []string
		notWant []string
		note    string
	}{
		{
			name:    "environment over the go env file",
			files:   map[string]string{goenv: "GOPROXY=https://file-proxy.example\n"},
			env:     map[string]string{"GOPROXY": "https://env-proxy.example|goproxy.io,direct"},
			want:    []string{"env-proxy.example:443", "goproxy.io:443", "sum.golang.org:443"},
			notWant: []string{"file-proxy.example:443", "proxy.golang.org:443"},
			note:    "GOPROXY (environment): \"direct\"",
		},
		{
			name:    "the go env file, at XDG_CONFIG_HOME",
			files:   map[string]string{"xdg/go/env": "# comment\nGOPROXY=http://athens.local:3000,off\nGOSUMDB=off\nGOPRIVATE=github.com/corp/*,gitlab.corp.example\n"},
			env:     map[string]string{"XDG_CONFIG_HOME": "$HOME/xdg"},
			want:    []string{"athens.local:3000"},
			notWant: []string{"proxy.golang.org:443", "sum.golang.org:443"},
			note:    "GOPRIVATE (~/xdg/go/env): modules matching github.com/corp/* gitlab.corp.example",
		},
		{
			name:    "GOENV=off",
			files:   map[string]string{goenv: "GOPROXY=https://file-proxy.example\n"},
			env:     map[string]string{"GOENV": "off", "GOPROXY": "off"},
			notWant: []string{"file-proxy.example:443", "proxy.golang.org:443"},
			note:    "GOPROXY (environment): \"off\"",
		},
		{
			name:    "checksum database forms",
			env:     map[string]string{"GOSUMDB": "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8 https://sum.golang.google.cn", "GOPROXY": "file:///srv/mods,https://p.example"},
			want:    []string{"sum.golang.google.cn:443", "p.example:443"},
			notWant: []string{"sum.golang.org:443"},
		},
		{
			name:    "credentials in the go env file, which is shown as it is",
			files:   map[string]string{goenv: "GOPROXY=https://ci:Sup3rS3cretPw@goproxy.corp.example:8443/x\n"},
			want:    []string{"goproxy.corp.example:8443"},
			notWant: []string{"proxy.golang.org:443"},
			note:    "GOPROXY (~/.config/go/env): the URL holds a credential for goproxy.corp.example:8443, and the file is shown as it is",
		},
		{
			name:  "a relative XDG_CONFIG_HOME: no go env file",
			files: map[string]string{goenv: "GOPROXY=https://file-proxy.example\n"},
			env:   map[string]string{"XDG_CONFIG_HOME": "relative"},
			want:  []string{"proxy.golang.org:443"},
			note:  "XDG_CONFIG_HOME (environment): not an absolute path",
		},
		{
			name: "credentials in GOPROXY",
			env:  map[string]string{"GOPROXY": "https://ci:Sup3rS3cretPw@goproxy.corp.example"},
			want: []string{"goproxy.corp.example:443"},
			note: "GOPROXY (environment): the URL holds a credential for goproxy.corp.example:443",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := discover(t, tt.files, tt.env)
			checkCase(t, f, tt.want, tt.notWant, nil, nil, tt.note)
			if len(f.Secrets) != 0 {
				t.Errorf("secrets from go's settings: %+v", f.Secrets)
			}
			for _, n := range f.Notes {
				if strings.Contains(n, "Sup3rS3cretPw") {
					t.Errorf("note %q", n)
				}
			}
		})
	}
}

func TestPip(t *testing.T) {
	xdg, legacy := ".config/pip/pip.conf", ".pip/pip.conf"
	tests := []struct {
		name      string
		files     map[string]string
		env       map[string]string
		want      []string
		notWant   []string
		secrets   map[string]string
		noSecrets []string
		note      string
	}{
		{
			name:    "environment over files",
			files:   map[string]string{xdg: "[global]\nindex-url = https://file.example/simple\n"},
			env:     map[string]string{"PIP_INDEX_URL": "https://env.example/simple", "PIP_EXTRA_INDEX_URL": "https://x1.example/ https://x2.example/"},
			want:    []string{"env.example:443", "x1.example:443", "x2.example:443"},
			notWant: []string{"file.example:443", "pypi.org:443"},
		},
		{
			name: "credentials in the environment",
			env:  map[string]string{"PIP_INDEX_URL": "https://ci:Sup3rS3cretPw@env.example/simple"},
			want: []string{"env.example:443"},
			note: "PIP_INDEX_URL (environment): the URL holds a credential for env.example:443; it is not in a scrubbed file",
		},
		{
			name: "[install] over [global], the XDG file over the legacy one, over /etc",
			files: map[string]string{
				"/etc/pip.conf": "[install]\nindex-url = https://etc-install.example/\n",
				legacy:          "[global]\nindex-url = https://legacy.example/\n",
				xdg:             "[global]\nindex_url = https://xdg.example/\n[install]\nINDEX-URL : https://xdg-install.example/\n",
			},
			want:    []string{"xdg-install.example:443"},
			notWant: []string{"etc-install.example:443", "legacy.example:443", "xdg.example:443", "pypi.org:443"},
		},
		{
			name: "PIP_CONFIG_FILE leaves out the user's files",
			files: map[string]string{
				xdg:        "[global]\nindex-url = https://user:An0therPass@xdg.example/\n",
				"pip.conf": "[global]\nindex-url = https://own.example/\n",
			},
			env:     map[string]string{"PIP_CONFIG_FILE": "$HOME/pip.conf"},
			want:    []string{"own.example:443"},
			notWant: []string{"xdg.example:443"},
		},
		{
			name:    "PIP_CONFIG_FILE=/dev/null: no files at all",
			files:   map[string]string{xdg: "[global]\nindex-url = https://xdg.example/\n"},
			env:     map[string]string{"PIP_CONFIG_FILE": "/dev/null"},
			want:    []string{"pypi.org:443", "files.pythonhosted.org:443"},
			notWant: []string{"xdg.example:443"},
		},
		{
			name: "passwords in URLs, overridden or not",
			files: map[string]string{
				legacy: "[global]\nindex-url = https://old:0ldPassw0rd@old.example/simple\n",
				xdg:    "[global]\nindex-url = https://u:p%40ss%3Aw0rd@new.example:8443/simple\nextra-index-url =\n  https://${USER}:${PW}@ref.example/\n  https://__token__:abcdefghijklmnop@tok.example/\n",
			},
			want:      []string{"new.example:8443", "ref.example:443", "tok.example:443"},
			notWant:   []string{"old.example:443"},
			secrets:   map[string]string{"index-url password": "", "extra-index-url password": "tok.example:443"},
			noSecrets: nil,
		},
		{
			name:  "malformed",
			files: map[string]string{xdg: "index-url = https://u:S3cretPassw0rd@x.example/\n[global\n"},
			want:  []string{"pypi.org:443"},
			note:  "~/.config/pip/pip.conf: does not parse as pip configuration (line 1)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, home := discover(t, tt.files, tt.env)
			secrets := map[string]string{}
			for k, v := range tt.secrets {
				if v != "" {
					secrets[k] = v
				}
			}
			checkCase(t, f, tt.want, tt.notWant, secrets, tt.noSecrets, tt.note)
			if tt.name == "passwords in URLs, overridden or not" {
				var got []string
				for _, s := range f.Secrets {
					got = append(got, fmt.Sprintf("%s@%s:%d in %s", s.Value, s.Host, s.Port, strings.TrimPrefix(s.File, home)))
				}
				slices.Sort(got)
				want := []string{
					"0ldPassw0rd@old.example:443 in /.pip/pip.conf",
					"abcdefghijklmnop@tok.example:443 in /.config/pip/pip.conf",
					// As written: the scrubber replaces the escaped form.
					"p%40ss%3Aw0rd@new.example:8443 in /.config/pip/pip.conf",
				}
				if !slices.Equal(got, want) {
					t.Errorf("secrets:\n got %q\nwant %q", got, want)
				}
			}
		})
	}

	f, _ := discover(t, map[string]string{xdg: "[global]\ncert = $HOME/corp.pem\n", "corp.pem": "pem"}, map[string]string{"PIP_CERT": "$HOME/missing.pem"})
	if len(f.CAFiles) != 0 || !hasNote(f, "pip cert (environment): ~/missing.pem is not a readable file") {
		t.Errorf("PIP_CERT over the file's cert: %q %q", f.CAFiles, f.Notes)
	}
}

func TestUvPoetry(t *testing.T) {
	f, _ := discover(t, map[string]string{
		".config/uv/uv.toml":           "index-url = \"https://uv.example/simple\"\nextra-index-url = [\"https://uv-extra.example/simple\"]\n[pip]\nextra-index-url = [\"https://uv-pip.example/\"]\n",
		".config/pypoetry/config.toml": "[http-basic.nowhere]\npassword = \"Zt7qLp2Xw9\"\n[pypi-token]\npypi = \"${PYPI_TOKEN}\"\n",
	}, map[string]string{"UV_INDEX": "named=https://uv-named.example/simple https://uv-bare.example/simple", "PIP_INDEX_URL": "https://pip.example/"})
	checkCase(t, f, []string{"uv.example:443", "uv-extra.example:443", "uv-pip.example:443", "uv-named.example:443", "uv-bare.example:443"},
		[]string{"pypi.org:443"}, nil, []string{"http-basic.nowhere.password", "pypi-token.pypi"},
		"http-basic.nowhere.password (~/.config/pypoetry/config.toml): no registry of that name with a known host")

	f, _ = discover(t, nil, map[string]string{"UV_DEFAULT_INDEX": "https://uv-default.example/", "PIP_INDEX_URL": "https://pip.example/"})
	checkCase(t, f, []string{"uv-default.example:443"}, []string{"pypi.org:443"}, nil, nil, "")

	// uv's default, PyPI, only for a user who has uv.
	f, home := discover(t, map[string]string{".config/pip/pip.conf": "[global]\nindex-url = https://pip.example/\n"}, nil)
	checkCase(t, f, []string{"pip.example:443"}, []string{"pypi.org:443"}, nil, nil, "")
	writeFiles(t, home, map[string]string{"bin/uv": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(home, "bin/uv"), 0o755); err != nil {
		t.Fatal(err)
	}
	f = Discover(&homeview.Host{Home: home, Env: map[string]string{"PATH": "relative:" + filepath.Join(home, "bin")}})
	checkCase(t, f, []string{"pip.example:443", "pypi.org:443"}, nil, nil, nil, "")
	if s := source(f, "pypi.org:443"); s != "uv default" {
		t.Errorf("source %q", s)
	}

	f, _ = discover(t, map[string]string{".config/uv/uv.toml": "index-url = [\n"}, nil)
	checkCase(t, f, []string{"pypi.org:443"}, nil, nil, nil, "~/.config/uv/uv.toml: does not parse as TOML (line 1)")
}

func TestCargo(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		env       map[string]string
		want      []string
		notWant   []string
		secrets   map[string]string
		noSecrets []string
		note      string
		cas       int
	}{
		{
			name: "a mirror in place of crates.io",
			files: map[string]string{
				".cargo/config.toml":      "[source.crates-io]\nreplace-with = \"corp\"\n[source.corp]\nregistry = \"sparse+https://mirror.corp.example/index/\"\n[http]\ncainfo = \".cargo/ca.pem\"\n",
				".cargo/ca.pem":           "pem",
				".cargo/credentials.toml": "[registries.gone]\ntoken = \"Zt7qLp2Xw9Ab\"\n[registries.crates-io]\ntoken = \"cioZt7qLp2Xw9Ab\"\n",
			},
			want:      []string{"mirror.corp.example:443"},
			notWant:   []string{"index.crates.io:443", "static.crates.io:443"},
			secrets:   map[string]string{"registries.crates-io.token": "crates.io:443"},
			noSecrets: []string{"registries.gone.token"},
			note:      "registries.gone.token (~/.cargo/credentials.toml): no registry of that name with a known host",
			cas:       1,
		},
		{
			name: "CARGO_HOME, the legacy file names, the git protocol",
			files: map[string]string{
				"ch/config":           "[registries.crates-io]\nprotocol = \"git\"\n[registries.a]\nindex = \"ssh://git@git.corp.example/index.git\"\n",
				"ch/config.toml":      "[registries.b]\nindex = \"https://ignored.example/index\"\n",
				"ch/credentials":      "[registry]\ntoken = \"cioLegacyT0kenAbc123\"\n",
				"ch/credentials.toml": "[registry]\ntoken = \"cioIgnoredT0kenAbc123\"\n",
			},
			env:     map[string]string{"CARGO_HOME": "$HOME/ch", "CARGO_REGISTRIES_ENVREG_INDEX": "sparse+https://env-reg.example/"},
			want:    []string{"github.com:443", "static.crates.io:443", "env-reg.example:443"},
			notWant: []string{"index.crates.io:443", "ignored.example:443"},
			secrets: map[string]string{"registry.token": "crates.io:443"},
			note:    "registries.a.index (~/ch/config): a git index fetched over ssh",
		},
		{
			name:    "malformed",
			files:   map[string]string{".cargo/credentials.toml": "[registry]\ntoken = \"Bearer unterminated\n"},
			want:    []string{"index.crates.io:443"},
			note:    "~/.cargo/credentials.toml: does not parse as TOML (line 2)",
			secrets: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := discover(t, tt.files, tt.env)
			checkCase(t, f, tt.want, tt.notWant, tt.secrets, tt.noSecrets, tt.note)
			if len(f.CAFiles) != tt.cas {
				t.Errorf("CAs %q", f.CAFiles)
			}
			for _, s := range f.Secrets {
				if strings.Contains(s.Value, "Ignored") {
					t.Errorf("secret from the file cargo does not read: %+v", s)
				}
			}
		})
	}
}

func TestMaven(t *testing.T) {
	settings := func(body string) map[string]string {
		return map[string]string{".m2/settings.xml": "<settings xmlns=\"http://maven.apache.org/SETTINGS/1.0.0\">\n" + body + "</settings>\n"}
	}
	tests := []struct {
		name      string
		files     map[string]string
		env       map[string]string
		want      []string
		notWant   []string
		secrets   map[string]string
		noSecrets []string
		note      string
	}{
		{
			name: "mirror of central, repositories, properties",
			files: settings(`<mirrors><mirror><id>m</id><mirrorOf>central</mirrorOf><url>https://mirror.example/maven2</url></mirror></mirrors>
<profiles><profile><id>p</id>
<repositories><repository><id>r</id><url>${env.REPO_URL}/releases</url></repository></repositories>
<pluginRepositories><pluginRepository><id>pr</id><url>http://plugins.example:8081/</url></pluginRepository></pluginRepositories>
</profile></profiles>
<servers><server><id>r</id><password>
    Wn4xRt8q
  </password></server><server><id>pr</id><password>${env.PW}</password></server></servers>
`),
			env:       map[string]string{"REPO_URL": "https://repo.corp.example"},
			want:      []string{"mirror.example:443", "repo.corp.example:443", "plugins.example:8081"},
			notWant:   []string{"repo.maven.apache.org:443"},
			secrets:   map[string]string{"servers/server[id=r]/password": "repo.corp.example:443"},
			noSecrets: []string{"servers/server[id=pr]/password"},
		},
		{
			name:      "a server no mirror or repository names, an encrypted password",
			files:     settings(`<mirrors><mirror><id>m</id><mirrorOf>*,!central</mirrorOf><url>https://mirror.example/</url></mirror></mirrors><servers><server><id>orphan</id><password>lemonade</password></server><server><id>m</id><password>{COQLCE6DU6GtcS5P=}</password></server></servers>`),
			want:      []string{"mirror.example:443", "repo.maven.apache.org:443"},
			noSecrets: []string{"servers/server[id=orphan]/password", "servers/server[id=m]/password"},
			note:      "servers/server[id=orphan] (~/.m2/settings.xml): no mirror or repository in settings.xml has this id",
		},
		{
			name:  "malformed",
			files: settings("<servers><server><password>lemonade</server>"),
			want:  []string{"repo.maven.apache.org:443"},
			note:  "~/.m2/settings.xml: does not parse as XML (line 2)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := discover(t, tt.files, tt.env)
			checkCase(t, f, tt.want, tt.notWant, tt.secrets, tt.noSecrets, tt.note)
		})
	}
	f, _ := discover(t, settings(`<servers><server><id>m</id><password>{COQLCE6DU6GtcS5P=}</password></server></servers><mirrors><mirror><id>m</id><url>https://m.example/</url></mirror></mirrors>`), nil)
	if !hasNote(f, "encrypted with Maven's master password") {
		t.Errorf("notes %q", f.Notes)
	}
}

func TestGradleGit(t *testing.T) {
	f, home := discover(t, map[string]string{
		".gradle/gradle.properties": "org.gradle.jvmargs=-Xmx2g\nartifactoryPassword=Zt7qLp2Xw9Ab\nnexus.token = tangerine\n",
		".gitconfig":                "[http]\n\tsslCAInfo = ~/ca/git.pem\n[http \"https://ghe.corp.example\"]\n\tsslcainfo = \"/nonexistent/ghe.pem\" ; ghe\n",
		".config/git/config":        "[HTTP] SSLCAINFO = $HOME/ca/xdg.pem\n",
		"ca/git.pem":                "pem",
		"ca/xdg.pem":                "pem",
	}, nil)
	if len(f.Secrets) != 0 {
		t.Errorf("secrets %+v", f.Secrets)
	}
	if !hasNote(f, "~/.gradle/gradle.properties: artifactoryPassword, nexus.token hold credentials") {
		t.Errorf("notes %q", f.Notes)
	}
	for _, n := range f.Notes {
		if strings.Contains(n, "Zt7qLp2Xw9Ab") || strings.Contains(n, "tangerine") {
			t.Errorf("note %q", n)
		}
	}
	want := []string{filepath.Join(home, "ca/xdg.pem"), filepath.Join(home, "ca/git.pem")}
	if !slices.Equal(f.CAFiles, want) {
		t.Errorf("CAs %q, want %q", f.CAFiles, want)
	}
	if !hasNote(f, "/nonexistent/ghe.pem is not a readable file") {
		t.Errorf("notes %q", f.Notes)
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		in, want, pw string
	}{
		{"https://Reg.Example.COM/", "https reg.example.com 443", ""},
		{"http://10.0.0.1:8081/x", "http 10.0.0.1 8081", ""},
		{"https://[::1]:4873", "https ::1 4873", ""},
		{"https://[fe80::1]/", "https fe80::1 443", ""},
		{"https://u:p@ss#w?rd@h.example/x", "https h.example 443", "p@ss#w?rd"},
		{"https://user:@h.example/", "https h.example 443", ""},
		{"https://abcdefghijklmnopqrstuvwx@h.example/", "https h.example 443", "abcdefghijklmnopqrstuvwx"},
		{"https://user@h.example/", "https h.example 443", ""},
		{"https://u:${PW}@h.example/", "https h.example 443", ""},
		{"https://h.example:0/", "", ""},
		{"https://h.example:99999/", "", ""},
		{"https://bad!host/", "", ""},
		{"https://[::1/", "", ""},
		{"ssh://git@h.example/", "", ""},
		{"h.example", "", ""},
	}
	for _, tt := range tests {
		u, why := parseURL(tt.in)
		got := ""
		if why == "" {
			got = fmt.Sprintf("%s %s %d", u.scheme, u.host, u.port)
		}
		pw, _ := u.password()
		if got != tt.want || pw != tt.pw {
			t.Errorf("%q: got %q pw %q (%s), want %q pw %q", tt.in, got, pw, why, tt.want, tt.pw)
		}
	}
}
