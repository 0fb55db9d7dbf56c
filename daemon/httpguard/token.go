package httpguard

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// tokenBytes is the token's entropy; the file holds it base64url, unpadded.
const tokenBytes = 32

// TokenPath is the per-install token file: $XDG_STATE_HOME/contextd/http-token,
// or ~/.local/state/contextd/http-token when XDG_STATE_HOME is unset or not
// absolute.
func TokenPath() (string, error) {
	if s := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "contextd", "http-token"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory for the HTTP API token (XDG_STATE_HOME and HOME unset): %v: %w", err, catalog.ErrConfig)
	}
	return filepath.Join(home, ".local", "state", "contextd", "http-token"), nil
}

// LoadToken returns the token in the file at path, creating the file (0600,
// in a directory made 0700) with 32 random bytes when it does not exist. A
// file that others could read or replace is refused, never repaired: the token
// it holds may already be known.
func LoadToken(path string) (string, error) {
	dir := filepath.Dir(path)
	if err := tokenDir(dir); err != nil {
		return "", err
	}
	tok, err := readToken(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := createToken(path); err != nil {
			return "", err
		}
		tok, err = readToken(path)
	}
	return tok, err
}

// tokenDir makes dir 0700 when missing; an existing one must be a directory of
// ours that nobody else can write to (else the file could be swapped).
func tokenDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %v: %w", dir, err, catalog.ErrIO)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %v: %w", dir, err, catalog.ErrIO)
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s, which holds the HTTP API token, is not a directory (a symlink?): %w", dir, catalog.ErrConfig)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s, which holds the HTTP API token, belongs to uid %d, not to us (uid %d): %w", dir, st.Uid, os.Getuid(), catalog.ErrConfig)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s, which holds the HTTP API token, is writable by others (mode %o): chmod 700 it: %w", dir, fi.Mode().Perm(), catalog.ErrConfig)
	}
	return nil
}

// readToken reads the token without following a symlink, from a regular file of
// ours that only we can read.
func readToken(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return "", fmt.Errorf("the HTTP API token %s is a symlink; it must be a file of its own: %w", path, catalog.ErrConfig)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("open %s: %v: %w", path, err, catalog.ErrIO)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat %s: %v: %w", path, err, catalog.ErrIO)
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("the HTTP API token %s is not a regular file: %w", path, catalog.ErrConfig)
	case int(st.Uid) != os.Getuid():
		return "", fmt.Errorf("the HTTP API token %s belongs to uid %d, not to us (uid %d): %w", path, st.Uid, os.Getuid(), catalog.ErrConfig)
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("the HTTP API token %s has mode %o; others may have read it: delete it and a new one is made (0600): %w", path, fi.Mode().Perm(), catalog.ErrConfig)
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", fmt.Errorf("read %s: %v: %w", path, err, catalog.ErrIO)
	}
	tok := strings.TrimSpace(string(b))
	if raw, err := base64.RawURLEncoding.DecodeString(tok); err != nil || len(raw) != tokenBytes {
		return "", fmt.Errorf("the HTTP API token %s is not %d bytes in base64url: delete it and a new one is made: %w", path, tokenBytes, catalog.ErrConfig)
	}
	return tok, nil
}

// createToken writes a fresh token beside path and links it into place, so a
// reader never sees a half-written file and two daemons starting at once agree
// on one token (the second link fails and it reads the first's).
func createToken(path string) error {
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("random token: %v: %w", err, catalog.ErrInternal)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".http-token-*")
	if err != nil {
		return fmt.Errorf("create token file: %v: %w", err, catalog.ErrIO)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600; the directory is checked, so it stays so.
	_, werr := tmp.WriteString(base64.RawURLEncoding.EncodeToString(raw) + "\n")
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write token file: %v: %w", werr, catalog.ErrIO)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("link %s: %v: %w", path, err, catalog.ErrIO)
	}
	return nil
}
