//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// npmCI installs the packages dir's package-lock.json pins (`npm ci`), unless
// the lock file is the one installed last time: a stamp in node_modules holds
// its hash. What root installs is made readable by the test users.
func npmCI(dir string) error {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is missing: run scripts/deps.sh (it installs Debian's nodejs and npm)", tool)
		}
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(dir, "node_modules", ".contextd-e2e-lock")
	if got, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(got)) == want {
		return nil
	}
	npm := exec.Command("sh", "-c", "umask 022 && npm ci --no-audit --no-fund --loglevel=error && chmod -R a+rX node_modules")
	npm.Dir = dir
	start := time.Now()
	if out, err := npm.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: npm ci in %s took %s\n", dir, time.Since(start).Round(time.Millisecond))
	return os.WriteFile(stamp, []byte(want+"\n"), 0o644)
}
