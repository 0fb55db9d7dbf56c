package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testScope = []string{"registry.test", "*.pythonhosted.test", "127.0.0.1"}

// forge signs a server certificate for name with the CA's own key, as
// whoever stole the key (or a bug in leaf) would: only the CA's name
// constraints stand between it and a client.
func forge(t *testing.T, ca *CA, name string) *x509.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// TestCANameConstraints: the CA is limited to the hosts it intercepts. A
// certificate it signs for another name, even with its key, is refused by
// Go's verifier and by OpenSSL (curl, git's OpenSSL builds, Node, Python),
// and the CA itself refuses to issue one.
func TestCANameConstraints(t *testing.T) {
	ca, err := LoadOrCreateCA(filepath.Join(t.TempDir(), "ca"), testScope...)
	if err != nil {
		t.Fatal(err)
	}
	pool := caPool(ca)
	verify := func(c *x509.Certificate, name string) error {
		_, err := c.Verify(x509.VerifyOptions{DNSName: name, Roots: pool})
		return err
	}
	for _, h := range []string{"registry.test", "files.pythonhosted.test", "a.b.pythonhosted.test", "127.0.0.1"} {
		l, err := ca.leaf(h)
		if err != nil {
			t.Fatalf("leaf for %s, in scope: %v", h, err)
		}
		if err := verify(l.Leaf, h); err != nil {
			t.Errorf("leaf for %s does not verify: %v", h, err)
		}
	}
	for _, h := range []string{"evil.test", "github.com", "pythonhosted.test", "registry.test.evil.com", "127.0.0.2", "::1"} {
		if _, err := ca.leaf(h); err == nil {
			t.Errorf("the CA issued a leaf for %s, outside its scope", h)
		}
		if err := verify(forge(t, ca, h), h); err == nil || !strings.Contains(err.Error(), "constraint") {
			t.Errorf("Go accepts a forged certificate for %s: %v", h, err)
		}
	}

	// OpenSSL, with the CA as its only trust anchor.
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is not installed: this test checks it honours the CA's constraints")
	}
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, ca.CertPEM(), 0o600)
	sslVerify := func(c *x509.Certificate, name string) (string, error) {
		f := filepath.Join(dir, "leaf.pem")
		os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}), 0o600)
		flag := "-verify_hostname"
		if net.ParseIP(name) != nil {
			flag = "-verify_ip"
		}
		out, err := exec.Command("openssl", "verify", "-CAfile", caFile, flag, name, f).CombinedOutput()
		return string(out), err
	}
	for _, h := range []string{"registry.test", "files.pythonhosted.test", "127.0.0.1"} {
		l, _ := ca.leaf(h)
		if out, err := sslVerify(l.Leaf, h); err != nil {
			t.Errorf("openssl refuses the leaf for %s: %s", h, out)
		}
	}
	for _, h := range []string{"evil.test", "github.com", "127.0.0.2"} {
		if out, err := sslVerify(forge(t, ca, h), h); err == nil || !strings.Contains(out, "violation") {
			t.Errorf("openssl accepts a forged certificate for %s: %v %s", h, err, out)
		}
	}

	// GnuTLS (git's https on Debian and Ubuntu goes through libcurl-gnutls),
	// with its certtool (gnutls-bin, which make deps installs).
	if _, err := exec.LookPath("certtool"); err != nil {
		t.Fatal("certtool is missing: run `make deps` (gnutls-bin) to check the CA against GnuTLS")
	}
	gnuVerify := func(c *x509.Certificate) (string, error) {
		f := filepath.Join(dir, "leaf.pem")
		os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}), 0o600)
		out, err := exec.Command("certtool", "--verify", "--load-ca-certificate", caFile, "--infile", f).CombinedOutput()
		return string(out), err
	}
	for _, h := range []string{"registry.test", "127.0.0.1"} {
		l, _ := ca.leaf(h)
		if out, err := gnuVerify(l.Leaf); err != nil {
			t.Errorf("GnuTLS refuses the leaf for %s: %s", h, out)
		}
	}
	for _, h := range []string{"evil.test", "127.0.0.2"} {
		if out, err := gnuVerify(forge(t, ca, h)); err == nil || !strings.Contains(out, "constraints") {
			t.Errorf("GnuTLS accepts a forged certificate for %s: %v %s", h, err, out)
		}
	}
}

// TestCAEmptyScope: a CA with nothing to intercept can sign for nothing.
func TestCAEmptyScope(t *testing.T) {
	ca, err := LoadOrCreateCA(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	pool := caPool(ca)
	for _, h := range []string{"registry.npmjs.org", "127.0.0.1", "::1", "invalid"} {
		if _, err := forge(t, ca, h).Verify(x509.VerifyOptions{DNSName: h, Roots: pool}); err == nil {
			t.Errorf("a certificate for %s verifies under a CA with an empty scope", h)
		}
	}
}

// TestCAShortLifeAndRenewal: the CA lives days, not years; it is replaced
// when it nears its end or when the hosts it may sign for change, and kept
// otherwise (whatever the order the scope is given in).
func TestCAShortLifeAndRenewal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	now := time.Now()
	ca, err := loadOrCreateCA(dir, testScope, now)
	if err != nil {
		t.Fatal(err)
	}
	c := ca.Certificate()
	if life := c.NotAfter.Sub(now); life > caLife || life < caLife-time.Minute {
		t.Errorf("CA lives %v, want %v", life, caLife)
	}
	if fi, err := os.Stat(filepath.Join(dir, ca.files().key)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", fi, err)
	}
	same, err := loadOrCreateCA(dir, []string{"127.0.0.1", "*.pythonhosted.test", "registry.test", "registry.test"}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if same.Certificate().SerialNumber.Cmp(c.SerialNumber) != 0 {
		t.Error("the same scope an hour later gave a new CA")
	}
	wider, err := loadOrCreateCA(dir, append([]string{"evil.test"}, testScope...), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if wider.Certificate().SerialNumber.Cmp(c.SerialNumber) == 0 || !slicesContain(wider.Certificate().PermittedDNSDomains, "evil.test") {
		t.Errorf("a new scope kept the old CA: %v", wider.Certificate().PermittedDNSDomains)
	}
	late := wider.Certificate().NotAfter.Add(-caRenewBefore + time.Minute)
	renewed, err := loadOrCreateCA(dir, append([]string{"evil.test"}, testScope...), late)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Certificate().SerialNumber.Cmp(wider.Certificate().SerialNumber) == 0 {
		t.Error("a CA near its end was not renewed")
	}
	if !renewed.Certificate().NotAfter.After(wider.Certificate().NotAfter) {
		t.Error("the renewed CA does not outlive the old one")
	}
	// A leaf never outlives its CA.
	l, err := renewed.leaf("registry.test")
	if err != nil {
		t.Fatal(err)
	}
	if l.Leaf.NotAfter.After(renewed.Certificate().NotAfter) {
		t.Error("leaf outlives the CA")
	}
}

func slicesContain(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestCAScopesCoexist: another process with another scope (`contextd
// doctor` run from a shell whose npm variables differ) gets a CA of its
// own and does not replace the daemon's; an unconstrained CA left by an
// older contextd is deleted.
func TestCAScopesCoexist(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	os.MkdirAll(dir, 0o700)
	for _, f := range []string{"ca.pem", "ca-key.pem"} {
		os.WriteFile(filepath.Join(dir, f), []byte("an older contextd's CA"), 0o600)
	}
	a, err := LoadOrCreateCA(dir, "registry.test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreateCA(dir, "registry.test", "other.test")
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreateCA(dir, "registry.test")
	if err != nil {
		t.Fatal(err)
	}
	if again.Certificate().SerialNumber.Cmp(a.Certificate().SerialNumber) != 0 {
		t.Error("a CA of another scope replaced the first one")
	}
	if a.ID() == b.ID() || a.ID() != again.ID() {
		t.Errorf("IDs: %s %s %s", a.ID(), b.ID(), again.ID())
	}
	for _, f := range []string{"ca.pem", "ca-key.pem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("the unconstrained %s is still there", f)
		}
	}
	keys, _ := filepath.Glob(filepath.Join(dir, "ca-*-key.pem"))
	for _, k := range keys {
		if fi, err := os.Stat(k); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", k, fi.Mode(), err)
		}
	}
	if len(keys) != 2 {
		t.Errorf("keys on disk: %v", keys)
	}
}
