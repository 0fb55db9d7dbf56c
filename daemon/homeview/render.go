package homeview

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/scrub"
)

// maxConfigFile bounds a configuration file Render copies. Toolchain
// configuration is a few kilobytes; a larger file is not copied, and the
// call is refused rather than shown the file unscrubbed.
const maxConfigFile = 1 << 20

// Copy is a scrubbed copy of a configuration file and where it is shown.
type Copy struct {
	Source string // the copy, in the call's directory
	Target string // the file's own path, where the sandbox shows the copy
	// Secrets is how many values were replaced with placeholders.
	Secrets int
}

// Render writes the scrubbed copy of every file of v.Scrubbed into dir (an
// existing directory only the user can read, removed by the caller after
// the call). Each secret becomes its placeholder in vault, keyed by the
// file, so that the egress proxy can put the real value back on the wire
// for the host it belongs to. A file that cannot be read or is too large is
// an error: showing it as it is is not an option, and leaving it out would
// make the toolchain fail in ways that hide why.
func Render(v *View, dir string, vault *scrub.Vault, sc *scrub.Scrubber) ([]Copy, error) {
	var out []Copy
	for _, p := range v.Scrubbed {
		b, err := readBounded(p)
		if err != nil {
			return nil, fmt.Errorf("home view: scrubbed copy of %s: %v: %w", p, err, catalog.ErrSandbox)
		}
		n := 0
		b = Redact(b, func(secret string) string {
			n++
			return vault.Placeholder(RuleConfigCredential, secret, p)
		})
		b, fs := vault.Scrub(sc, b, p)
		n += len(fs)
		sum := sha256.Sum256([]byte(p))
		dst := filepath.Join(dir, hex.EncodeToString(sum[:8])+"-"+filepath.Base(p))
		if err := os.WriteFile(dst, b, 0o400); err != nil {
			return nil, fmt.Errorf("home view: write the scrubbed copy of %s: %v: %w", p, err, catalog.ErrSandbox)
		}
		out = append(out, Copy{Source: dst, Target: p, Secrets: n})
	}
	return out, nil
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigFile {
		return nil, fmt.Errorf("larger than %d bytes", maxConfigFile)
	}
	return b, nil
}
