package scrub

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gorootFixtures are where gitleaks' default rules fire on the Go standard library, and
// why none of it is a false positive of ours to fix:
//
//   - crypto/ecdh, crypto/x509, crypto/tls, crypto/internal/fips140test and
//     internal/trace tests hold test keys and key-exchange vectors (hex PKCS#8 and SEC1
//     keys, X25519 private keys, an EC key in PEM): real keys, so true positives of
//     generic-api-key and private-key; gitleaks stdin reports them too.
//   - cmd/vendor/golang.org/x/mod/sumdb/note documents its key format with an example
//     signer key ("PRIVATE+KEY+PeterNeumann+..."): a key, so a true positive.
//   - crypto/mlkem and crypto/internal/fips140/mlkem are false positives of gitleaks'
//     generic-api-key on identifiers (encryptionKey1024 = ..., NewEncapsulationKey768,
//     testRSA2048PrivateKey): its regex takes any 10-character word after "key", "=" or
//     "," for a value. They are kept: contextd keeps gitleaks' semantics, so that it
//     finds at least what the CLI finds.
var gorootFixtures = []string{
	"crypto/", "internal/trace/", "cmd/vendor/golang.org/x/mod/sumdb/note/",
}

// TestFalsePositivesGOROOT runs Find over every .go file of the Go standard library.
// Directories named testdata are skipped: they hold test inputs on purpose (certificates,
// keys, recorded TLS sessions, corrupt archives), which are fixtures, not source. Under
// the race detector only every 8th file is scanned, to keep the test fast.
func TestFalsePositivesGOROOT(t *testing.T) {
	s := newTestScrubber(t)
	root := filepath.Join(goroot(t), "src")
	files, bytesScanned := 0, 0
	byRule := map[string]int{}
	var n int
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		if n++; raceEnabled && n%8 != 0 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		bytesScanned += len(data)
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		for _, f := range s.Find(data) {
			byRule[f.Rule]++
			switch {
			case f.Rule == RuleEnvCredential || f.Rule == RuleURLCredential:
				t.Errorf("%s: contextd rule %s fired on %q", rel, f.Rule, f.Secret)
			case f.Rule != "generic-api-key" && f.Rule != "private-key":
				t.Errorf("%s: unexpected rule %s on %q", rel, f.Rule, f.Secret)
			case !underAny(rel, gorootFixtures):
				t.Errorf("%s: %s on %q outside the known fixtures", rel, f.Rule, f.Secret)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files, %d MB: findings by rule %v", files, bytesScanned>>20, byRule)
	if files < 500 {
		t.Fatalf("only %d files scanned under %s", files, root)
	}
	if total := byRule["generic-api-key"] + byRule["private-key"]; total > 60 {
		t.Errorf("%d findings on the standard library, more than the known fixtures", total)
	}
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// TestFalsePositivesLogs: ordinary logs (timestamps, UUIDs, SHA-256 hashes, commit ids,
// base64 payloads, JSON lines, log messages that mention tokens and passwords) give no
// finding at all.
func TestFalsePositivesLogs(t *testing.T) {
	s := newTestScrubber(t)
	logs := fakeLogs(newRand(61), 20000)
	for _, f := range s.Find(logs) {
		ls := bytes.LastIndexByte(logs[:f.Start], '\n') + 1
		le := bytes.IndexByte(logs[f.End:], '\n') + f.End
		t.Errorf("%s on %q in %q", f.Rule, f.Secret, logs[ls:le])
	}
}
