package egress

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestLoadOrCreateCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "egress")
	ca, err := LoadOrCreateCA(dir, "registry.example.com", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cert := ca.Certificate()
	if !cert.IsCA || cert.Subject.CommonName != "contextd egress CA" {
		t.Errorf("CA certificate: IsCA=%v CN=%q", cert.IsCA, cert.Subject.CommonName)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life > caLife+time.Hour {
		t.Errorf("CA valid for %v, want at most %v", life, caLife)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, ca.files().key): 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	again, err := LoadOrCreateCA(dir, "127.0.0.1", "registry.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.CertPEM(), ca.CertPEM()) {
		t.Error("second load gave another CA")
	}

	leaf, err := ca.leaf("registry.example.com")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "registry.example.com", Roots: pool}); err != nil {
		t.Errorf("leaf does not verify: %v", err)
	}
	if cached, _ := ca.leaf("registry.example.com"); cached != leaf {
		t.Error("leaf not cached")
	}
	ipLeaf, err := ca.leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(ipLeaf.Leaf.IPAddresses) != 1 || len(ipLeaf.Leaf.DNSNames) != 0 {
		t.Errorf("IP leaf SANs: %v %v", ipLeaf.Leaf.IPAddresses, ipLeaf.Leaf.DNSNames)
	}
}

// Concurrent first calls must all end up with the one CA on disk.
func TestLoadOrCreateCAConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "egress")
	const n = 8
	pems := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ca, err := LoadOrCreateCA(dir, "registry.test")
			errs[i] = err
			if err == nil {
				pems[i] = ca.CertPEM()
			}
		})
	}
	wg.Wait()
	sc, _ := parseScope([]string{"registry.test"})
	onDisk, err := os.ReadFile(filepath.Join(dir, sc.files().cert))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if !bytes.Equal(pems[i], onDisk) {
			t.Errorf("call %d got a CA that is not the one on disk", i)
		}
	}
}

func TestLoadOrCreateCARefusesSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateCA(link); err == nil {
		t.Error("symlinked CA directory accepted")
	}
}
