package netview

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/runner"
)

// TestCAScopedToInterceptedHosts: the daemon's CA is constrained to the
// hosts it intercepts (method-limited registries and credential hosts) and
// nothing else, lives days, and is what the sandbox's bundle holds.
func TestCAScopedToInterceptedHosts(t *testing.T) {
	home := t.TempDir()
	npmrc := "@corp:registry=https://npm.corp.test/\n//npm.corp.test/:_authToken=s3cret\n@local:registry=http://127.0.0.1:4873/\n"
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(npmrc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Egress.Allow = []string{"api.github.com:443", "*.pythonhosted.test:443 GET,HEAD"}
	// credential_env's own forms, as docs/config.md shows them.
	cfg.Egress.CredentialEnv = map[string][]string{"CTXD_TEST_TOKEN": {"https://api.corp.test header=X-Api-Key", "plain.corp.test:8443"}}
	dirs := Dirs{CA: filepath.Join(t.TempDir(), "ca"), Runtime: t.TempDir()}
	s, err := NewSetup(cfg, &homeview.Host{Home: home, Env: map[string]string{"PATH": "/usr/bin"}}, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := s.ca.Certificate()
	dns := c.PermittedDNSDomains
	for _, want := range []string{"registry.npmjs.org", "npm.corp.test", ".pythonhosted.test", "api.corp.test", "plain.corp.test"} {
		if !slices.Contains(dns, want) {
			t.Errorf("the CA may not sign for %s: %v", want, dns)
		}
	}
	if slices.Contains(dns, "api.github.com") || !c.PermittedDNSDomainsCritical {
		t.Errorf("the CA's DNS constraints: %v (critical %v); api.github.com has no methods and no credential", dns, c.PermittedDNSDomainsCritical)
	}
	if len(c.PermittedIPRanges) != 1 || c.PermittedIPRanges[0].String() != "127.0.0.1/32" {
		t.Errorf("the CA's address constraints: %v", c.PermittedIPRanges)
	}
	if life := c.NotAfter.Sub(c.NotBefore); life > 8*24*3600e9 {
		t.Errorf("the CA lives %v", life)
	}
	b, err := os.ReadFile(s.bundle)
	if err != nil || !bytes.Contains(b, s.ca.CertPEM()) {
		t.Errorf("the sandbox's bundle does not hold the CA: %v", err)
	}
	// Node's file is the CA alone (Node parses every certificate of it at
	// each start), and the call's sandbox has it where its variable says.
	own, err := os.ReadFile(s.caOnly)
	if err != nil || !bytes.Contains(own, s.ca.CertPEM()) || bytes.Count(own, []byte("BEGIN CERTIFICATE")) != 1 {
		t.Errorf("Node's CA file holds %d certificates (%v), want contextd's CA alone", bytes.Count(own, []byte("BEGIN CERTIFICATE")), err)
	}
	n, err := s.Prepare(Call{Tool: "safe_bash"})
	if err != nil {
		t.Fatal(err)
	}
	n.Finish()
	if !slices.Contains(n.Binds, runner.Bind{Source: s.caOnly, Target: NodeCAAt}) || !slices.Contains(n.Env, "NODE_EXTRA_CA_CERTS="+NodeCAAt) {
		t.Errorf("the call's binds %v and environment do not show Node's CA file at %s", n.Binds, NodeCAAt)
	}

	// Another process whose view of the configuration differs (another
	// npm registry in its environment) gets its own CA and bundle, and the
	// daemon's stay as they were.
	before, _ := os.ReadFile(s.bundle)
	other, err := NewSetup(cfg, &homeview.Host{Home: home, Env: map[string]string{"PATH": "/usr/bin", "npm_config_registry": "https://npm.other.test/"}}, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.ca.ID() == s.ca.ID() || other.bundle == s.bundle {
		t.Fatalf("two scopes share a CA (%s) or a bundle (%s)", s.ca.ID(), s.bundle)
	}
	if after, _ := os.ReadFile(s.bundle); !bytes.Equal(after, before) {
		t.Error("another process's setup rewrote the daemon's trust bundle")
	}
}

// TestOldBundlesGo: the trust bundles of other CAs are removed once they
// have not been written for a day (each CA rotation left one behind until
// logout), a recent one is kept for the process that may still mount it,
// nothing else in the directory is touched, and a bundle removed under a
// running setup is written again before a call binds it.
func TestOldBundlesGo(t *testing.T) {
	rt := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	files := map[string]time.Time{
		"bundle-0ld1d.pem":         old,
		"ca-0ld1d.pem":             old,
		"bundle-0ld1d.pem.12345":   old,
		"bundle-rec3nt.pem":        time.Now().Add(-time.Hour),
		"notes.txt":                old,
		"bundle-without-extension": old,
	}
	for name, mt := range files {
		p := filepath.Join(rt, name)
		if err := os.WriteFile(p, []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	dirs := Dirs{CA: filepath.Join(t.TempDir(), "ca"), Runtime: rt}
	s, err := NewSetup(config.Default(), &homeview.Host{Home: t.TempDir(), Env: map[string]string{"PATH": "/usr/bin"}}, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, kept := range map[string]bool{
		"bundle-0ld1d.pem": false, "ca-0ld1d.pem": false, "bundle-0ld1d.pem.12345": false,
		"bundle-rec3nt.pem": true, "notes.txt": true, "bundle-without-extension": true,
		"bundle-" + s.ca.ID() + ".pem": true, "ca-" + s.ca.ID() + ".pem": true,
	} {
		if _, err := os.Lstat(filepath.Join(rt, name)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
	// Gone under the setup: the next call's plan has it again.
	os.Remove(s.bundle)
	os.Remove(s.caOnly)
	n, err := s.Plan(Call{Tool: "safe_bash"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range n.Binds {
		if _, err := os.Stat(b.Source); err != nil {
			t.Errorf("the call binds %s, which is not there: %v", b.Source, err)
		}
	}
}
