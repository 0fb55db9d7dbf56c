package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CA is a per-user certificate authority whose key never leaves the daemon:
// sandboxes trust its certificate so that the proxy can terminate TLS for
// the hosts it must see into (credential hosts, method-limited registries).
// Its name constraints limit it to those hosts, and it lives days: a key
// that leaked anyway is worth little, for little time.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	scope   caScope

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

const (
	// legacyCert and legacyKey are the unconstrained ten-year CA of older
	// versions, deleted on sight.
	legacyCert = "ca.pem"
	legacyKey  = "ca-key.pem"
	caLockFile = ".lock"
	// caLife is how long a CA is valid; caRenewBefore how long before its
	// end it is replaced when next loaded (a daemon start, or the next
	// call of a daemon that ran that long: see Stale). A week keeps a
	// leaked key short-lived without a new CA every start.
	caLife        = 7 * 24 * time.Hour
	caRenewBefore = 2 * 24 * time.Hour
	// leafLife is long enough that a long build never sees a certificate
	// expire, short enough that a leaked leaf is soon useless.
	leafLife = 48 * time.Hour
)

// LoadOrCreateCA loads the CA of scope in dir (ca-ID.pem, ca-ID-key.pem,
// ID naming the scope), or makes a new
// one (ECDSA P-256, valid caLife) when there is none, when it nears its end,
// when it is damaged, or when its name constraints are not exactly scope:
// the hosts it may sign for, each an exact DNS name, "*.suffix" (any
// subdomain) or an IP literal. An empty scope gives a CA that can sign for
// nothing a client would accept. dir is created 0700 and refused if it is a
// symlink or owned by another user; the key is 0600. The decision and the
// replacement are serialized with a lock file, so that concurrent first
// calls from several processes end up with the one CA on disk.
func LoadOrCreateCA(dir string, scope ...string) (*CA, error) {
	return loadOrCreateCA(dir, scope, time.Now())
}

func loadOrCreateCA(dir string, scope []string, now time.Time) (*CA, error) {
	want, err := parseScope(scope)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("egress CA: %w", err)
	}
	if err := checkCADir(dir); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, caLockFile), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("egress CA: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("egress CA: lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway

	removeOldCAs(dir, now)
	// A CA that does not load (absent, half-written by a crash, not a CA)
	// is replaced like an old one: the directory is ours, checked above.
	names := want.files()
	if ca, err := loadCA(dir, names); err == nil && ca.fits(want, now) {
		return ca, nil
	}
	if err := createCA(dir, names, want, now); err != nil {
		return nil, err
	}
	// Read back what is on disk rather than trusting what we generated: the
	// file is the authority.
	ca, err := loadCA(dir, names)
	if err != nil {
		return nil, err
	}
	if !ca.fits(want, now) {
		return nil, fmt.Errorf("egress CA: the CA written to %s does not read back as made", dir)
	}
	return ca, nil
}

// removeOldCAs deletes the CAs of dir that can serve no one any more:
// expired ones (of scopes no process asked for since) and the
// unconstrained CA of older versions. Failures are left for next time.
func removeOldCAs(dir string, now time.Time) {
	os.Remove(filepath.Join(dir, legacyCert))
	os.Remove(filepath.Join(dir, legacyKey))
	certs, _ := filepath.Glob(filepath.Join(dir, "ca-*.pem"))
	for _, f := range certs {
		if strings.HasSuffix(f, "-key.pem") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			continue
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil && now.After(c.NotAfter) {
			os.Remove(strings.TrimSuffix(f, ".pem") + "-key.pem")
			os.Remove(f)
		}
	}
}

// ID names the CA's scope: CAs of different scopes live side by side, so
// that a process with another view of the user's configuration never
// replaces the CA a running daemon's sandboxes trust.
func (c *CA) ID() string { return c.scope.id() }

// files are where the CA is kept.
func (c *CA) files() caFiles { return c.scope.files() }

// Stale reports whether the CA should be replaced (LoadOrCreateCA again):
// it nears the end of its life.
func (c *CA) Stale() bool { return !time.Now().Before(c.cert.NotAfter.Add(-caRenewBefore)) }

// fits reports whether c has exactly the constraints of want and is not
// near its end at now.
func (c *CA) fits(want caScope, now time.Time) bool {
	return c.scope.equal(want) && now.After(c.cert.NotBefore) && now.Before(c.cert.NotAfter.Add(-caRenewBefore))
}

// checkCADir refuses a directory that someone else could have prepared: a
// symlink (it could point anywhere) or one owned by another uid. A directory
// readable by others is tightened, since it is ours.
func checkCADir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("egress CA: %w", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("egress CA: %s is a symlink", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("egress CA: %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("egress CA: %s is owned by uid %d, not %d", dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("egress CA: %w", err)
		}
	}
	return nil
}

// loadCA reads the pair; os.ErrNotExist when the certificate is absent.
func loadCA(dir string, names caFiles) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, names.cert))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, names.key))
	if err != nil {
		return nil, fmt.Errorf("egress CA: %s exists without its key: %w", names.cert, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("egress CA: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("egress CA: key is not ECDSA")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("egress CA: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("egress CA: %s is not a CA certificate", names.cert)
	}
	return &CA{cert: cert, certPEM: certPEM, key: key, scope: scopeOf(cert), leaves: map[string]*tls.Certificate{}}, nil
}

// createCA generates a CA limited to scope and puts it in place over any
// earlier one, key first, certificate last: a crash in between leaves a
// pair that does not match, which the next load replaces. The caller holds
// the lock.
func createCA(dir string, names caFiles, scope caScope, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("egress CA: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "contextd egress CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLife),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	scope.constrain(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("egress CA: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("egress CA: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{names.key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})},
		{names.cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
	} {
		tmp, err := writeTemp(dir, f.data)
		if err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("egress CA: %w", err)
		}
	}
	return nil
}

// writeTemp writes data to a new 0600 file in dir, synced, and returns its
// name.
func writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("egress CA: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("egress CA: %w", err)
	}
	return f.Name(), nil
}

// CertPEM returns the CA certificate in PEM, to be installed as trusted in
// sandboxes.
func (c *CA) CertPEM() []byte { return append([]byte(nil), c.certPEM...) }

// Certificate returns the parsed CA certificate.
func (c *CA) Certificate() *x509.Certificate { return c.cert }

// leaf returns a certificate for host (a DNS name or IP literal), cached per
// host and renewed a quarter of its life before it expires.
func (c *CA) leaf(host string) (*tls.Certificate, error) {
	if !c.scope.permits(host) {
		return nil, fmt.Errorf("%s is outside the hosts the CA may sign for", host)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if l, ok := c.leaves[host]; ok && now.Before(l.Leaf.NotAfter.Add(-leafLife/4)) {
		return l, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(leafLife)
	if notAfter.After(c.cert.NotAfter) {
		notAfter = c.cert.NotAfter
	}
	// No subject: clients match names in the SAN only, and OpenSSL would
	// check a CN against the DNS constraints even for an IP leaf.
	tmpl := &x509.Certificate{
		SerialNumber:   randomSerial(),
		NotBefore:      now.Add(-time.Hour),
		NotAfter:       notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		AuthorityKeyId: c.cert.SubjectKeyId,
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	l := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: parsed}
	c.leaves[host] = l
	return l, nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// keyID is the SHA-1 of the public key, the customary subject key id.
func keyID(pub *ecdsa.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha1.Sum(der)
	return sum[:]
}
