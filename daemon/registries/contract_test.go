package registries

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/scrub"
)

// writeFiles creates files below root (relative names) with their content.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// contractHome is a home with a realistic configuration for every
// toolchain, each holding credentials in the forms people write them.
var contractHome = map[string]string{
	".npmrc": `registry=https://registry.npmjs.org/
@corp:registry=https://registry.example.com:4873/
//registry.example.com:4873/:_authToken=npm_Q7kRt2XvB9mLpZ4wYc1NdHs8FjGa3EuK6oTi
//legacy.example.org/:_auth=ZGVwbG95OmNvcnJlY3Rob3JzZTQy
//legacy.example.org/:username=deploy
//legacy.example.org/:_password="Y29ycmVjdGhvcnNlNDI="
//env.example.org/:_authToken=${NPM_TOKEN}
; a comment
cafile=~/certs/corp.pem
`,
	".yarnrc.yml": `npmRegistryServer: "https://npm.corp.example"
npmAuthToken: yarnTok3nAbCdEf1234567890
npmScopes:
  acme:
    npmRegistryServer: https://npm.acme.example
    npmAuthToken: "acmeT0kenXyZ987654321qq"
`,
	".config/pip/pip.conf": `[global]
index-url = https://user:s3cr3tPass@pypi.corp.example/simple
extra-index-url =
    https://pypi.org/simple
    https://__token__:Zq8vN3rT6wYb1LmX4cPa@pkgs.corp.example:8443/pypi/simple
cert = /etc/ssl/certs/ca-certificates.crt
`,
	".config/uv/uv.toml": `[[index]]
name = "corp"
url = "https://alice:Xy9vQ2pLm4rT@uv.corp.example/simple"
default = true
`,
	".config/pypoetry/config.toml": `[repositories.corp]
url = "https://poetry.corp.example/simple/"

[http-basic.corp]
username = "bob"
password = "tangerine"

[pypi-token]
pypi = "pypi-AgEIcHlwaS5vcmcCJGQ3NmE0ZmM2LWFhZjMtNGU4Ny1iMzE3LTQ1YzE2ZGRmN2Q0NgACKlszLCJlYWJkMmNiZi0xZjJlLTQ3Y2QtYWQ2NC0wNTIwZjJkOWUxYWEiXQAABiDmYeOb3A"
`,
	".cargo/config.toml": `[registries.my-reg]
index = "sparse+https://cargo.corp.example/index/"

[registries.kellnr]
index = "https://git.corp.example/kellnr-index.git"

[registry]
default = "my-reg"
`,
	".cargo/credentials.toml": `[registry]
token = "cioAbCdEfGhIjKlMnOpQrStUvWxYz0123456"

[registries.my-reg]
token = "Bearer abcDEF123ghiJKL456mnoPQR789"

[registries.kellnr]
token = 'Kq2Zr8WvN5bTx1Yp'  # ci
`,
	".m2/settings.xml": `<?xml version="1.0" encoding="UTF-8"?>
<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <servers>
    <server>
      <id>nexus</id>
      <username>deploy</username>
      <password>marmalade</password>
    </server>
    <server>
      <id>gitlab-maven</id>
      <configuration>
        <httpHeaders>
          <property>
            <name>Private-Token</name>
            <value>glpat-Xa9bC3dE5fG7hJ1kL2mN</value>
          </property>
        </httpHeaders>
      </configuration>
    </server>
  </servers>
  <mirrors>
    <mirror>
      <id>nexus</id>
      <mirrorOf>*</mirrorOf>
      <url>https://nexus.corp.example/repository/maven-public/</url>
    </mirror>
  </mirrors>
  <profiles>
    <profile>
      <id>gitlab</id>
      <repositories>
        <repository>
          <id>gitlab-maven</id>
          <url>https://gitlab.corp.example/api/v4/projects/42/packages/maven</url>
        </repository>
      </repositories>
    </profile>
  </profiles>
</settings>
`,
	"certs/corp.pem": "-----BEGIN CERTIFICATE-----\n",
	// Markers, so that Resolve applies every preset.
	"ws/go.mod":          "module x\n",
	"ws/package.json":    "{}\n",
	"ws/pyproject.toml":  "[project]\n",
	"ws/Cargo.toml":      "[package]\n",
	"ws/pom.xml":         "<project/>\n",
	"ws/.keep-the-order": "",
}

// TestContract is the proxy's contract with homeview: for every Secret
// Discover returns, the placeholder the session vault gives its Value is
// in the scrubbed copy of its File, and the Value itself is in no copy.
// The copies come from homeview's real path: Resolve with every preset on,
// then Render with the real scrubber.
func TestContract(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, home, contractHome)
	old := etcDir
	etcDir = t.TempDir()
	t.Cleanup(func() { etcDir = old })
	h := &homeview.Host{Home: home, Workspace: filepath.Join(home, "ws"), Env: map[string]string{"PATH": "/usr/bin"}}

	found := Discover(h)

	v, err := homeview.Resolve(h, homeview.Options{SystemDirs: []string{"/usr"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scrub.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	vault := scrub.NewVault()
	copies, err := homeview.Render(v, t.TempDir(), vault, sc)
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[string]string{}
	for _, c := range copies {
		b, err := os.ReadFile(c.Source)
		if err != nil {
			t.Fatal(err)
		}
		rendered[c.Target] = string(b)
	}

	n := vault.Len()
	for _, s := range found.Secrets {
		copy, ok := rendered[s.File]
		if !ok {
			t.Errorf("%s (%s): homeview does not render %s", s.Key, s.Host, s.File)
			continue
		}
		ph := vault.Placeholder(homeview.RuleConfigCredential, s.Value, s.File)
		if !strings.Contains(copy, ph) {
			t.Errorf("%s (%s): placeholder %s is not in the copy of %s:\n%s", s.Key, s.Host, ph, s.File, copy)
		}
		for target, c := range rendered {
			if strings.Contains(c, s.Value) {
				t.Errorf("%s: its value is in the copy of %s", s.Key, target)
			}
		}
	}
	if vault.Len() != n {
		t.Errorf("Discover returned %d values the rendering never replaced", vault.Len()-n)
	}

	// Every placeholder in a copy stands for a secret Discover tied to a
	// host, so that the proxy can put each back.
	values := map[string]bool{}
	for _, s := range found.Secrets {
		values[s.Value] = true
	}
	for target, c := range rendered {
		for _, sp := range scrub.FindPlaceholders([]byte(c)) {
			ph := c[sp[0]:sp[1]]
			back, _, _ := vault.Restore([]byte(ph), target)
			if !values[string(back)] {
				t.Errorf("%s: placeholder %s stands for a secret no rule covers", target, ph)
			}
		}
	}

	// And the ones this home holds are all there, each for its host.
	type want struct {
		key, host string
		port      int
		file      string
	}
	wants := []want{
		{"//registry.example.com:4873/:_authToken", "registry.example.com", 4873, ".npmrc"},
		{"//legacy.example.org/:_auth", "legacy.example.org", 443, ".npmrc"},
		{"//legacy.example.org/:_password", "legacy.example.org", 443, ".npmrc"},
		{"npmAuthToken", "npm.corp.example", 443, ".yarnrc.yml"},
		{"npmScopes.acme.npmAuthToken", "npm.acme.example", 443, ".yarnrc.yml"},
		{"index-url password", "pypi.corp.example", 443, ".config/pip/pip.conf"},
		{"extra-index-url password", "pkgs.corp.example", 8443, ".config/pip/pip.conf"},
		{"index.url password", "uv.corp.example", 443, ".config/uv/uv.toml"},
		{"http-basic.corp.password", "poetry.corp.example", 443, ".config/pypoetry/config.toml"},
		{"pypi-token.pypi", "upload.pypi.org", 443, ".config/pypoetry/config.toml"},
		{"registry.token", "crates.io", 443, ".cargo/credentials.toml"},
		{"registries.my-reg.token", "cargo.corp.example", 443, ".cargo/credentials.toml"},
		{"registries.kellnr.token", "git.corp.example", 443, ".cargo/credentials.toml"},
		{"servers/server[id=nexus]/password", "nexus.corp.example", 443, ".m2/settings.xml"},
		{"servers/server[id=gitlab-maven]/configuration/httpHeaders/property[name=Private-Token]/value", "gitlab.corp.example", 443, ".m2/settings.xml"},
	}
	for _, w := range wants {
		i := slices.IndexFunc(found.Secrets, func(s Secret) bool {
			return s.Key == w.key && s.Host == w.host && s.Port == w.port && s.File == filepath.Join(home, w.file)
		})
		if i < 0 {
			t.Errorf("no secret %s for %s:%d in %s", w.key, w.host, w.port, w.file)
		}
	}
	if len(found.Secrets) != len(wants) {
		t.Errorf("%d secrets, want %d: %+v", len(found.Secrets), len(wants), found.Secrets)
	}
	for _, note := range found.Notes {
		for _, s := range found.Secrets {
			if strings.Contains(note, s.Value) {
				t.Errorf("note %q holds the secret of %s", note, s.Key)
			}
		}
	}
	t.Logf("registries: %+v", found.Registries)
	t.Logf("notes: %q", found.Notes)
}

// TestContractOutsideProject: the same contract where the issue met it, in a
// Go repository (go.mod, no package.json) with npm on PATH. The registry the
// user's ~/.npmrc names is one the proxy allows (Discover reads the user's
// configuration whatever the workspace), and the copy of ~/.npmrc the call
// sees names it with the placeholder the proxy puts the token back for, so
// that npm inside goes where it goes outside, authenticated.
func TestContractOutsideProject(t *testing.T) {
	const token = "npm_Q7kRt2XvB9mLpZ4wYc1NdHs8FjGa3EuK6oTi"
	home := t.TempDir()
	bin := t.TempDir()
	writeFiles(t, home, map[string]string{
		".npmrc":    "registry=https://npm.corp.test/\n//npm.corp.test/:_authToken=" + token + "\n",
		"ws/go.mod": "module x\n",
	})
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := etcDir
	etcDir = t.TempDir()
	t.Cleanup(func() { etcDir = old })
	h := &homeview.Host{Home: home, Workspace: filepath.Join(home, "ws"), Env: map[string]string{"PATH": bin}}

	found := Discover(h)
	if !slices.ContainsFunc(found.Registries, func(r Registry) bool { return r.Host == "npm.corp.test" && r.Port == 443 }) {
		t.Errorf("the egress rules lack the user's registry npm.corp.test:443: %+v", found.Registries)
	}
	if slices.ContainsFunc(found.Registries, func(r Registry) bool { return r.Host == "registry.npmjs.org" }) {
		t.Errorf("npm's default registry is allowed though the user's configuration names another: %+v", found.Registries)
	}
	i := slices.IndexFunc(found.Secrets, func(s Secret) bool { return s.Host == "npm.corp.test" })
	if i < 0 {
		t.Fatalf("no credential for npm.corp.test: %+v", found.Secrets)
	}

	v, err := homeview.Resolve(h, homeview.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scrub.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	vault := scrub.NewVault()
	copies, err := homeview.Render(v, t.TempDir(), vault, sc)
	if err != nil {
		t.Fatal(err)
	}
	j := slices.IndexFunc(copies, func(c homeview.Copy) bool { return c.Target == filepath.Join(home, ".npmrc") })
	if j < 0 {
		t.Fatalf("the call sees no copy of ~/.npmrc in a workspace without package.json, npm on PATH: copies %+v", copies)
	}
	b, err := os.ReadFile(copies[j].Source)
	if err != nil {
		t.Fatal(err)
	}
	ph := vault.Placeholder(homeview.RuleConfigCredential, found.Secrets[i].Value, found.Secrets[i].File)
	if !strings.Contains(string(b), ph) || strings.Contains(string(b), token) {
		t.Errorf("the copy of ~/.npmrc should hold placeholder %s and not the token:\n%s", ph, b)
	}
}
