package httpguard

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/catalog"
)

func TestLoadTokenCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "contextd")
	path := filepath.Join(dir, "http-token")
	tok, err := LoadToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := base64.RawURLEncoding.DecodeString(tok); err != nil || len(raw) != 32 {
		t.Fatalf("token %q is not 32 bytes base64url: %v", tok, err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", p, fi.Mode().Perm(), want)
		}
	}
	again, err := LoadToken(path)
	if err != nil || again != tok {
		t.Fatalf("second load: %q, %v; want the same token %q", again, err, tok)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".http-token-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if _, err := TCP(tok, nil); err != nil {
		t.Errorf("a made token is refused by TCP: %v", err)
	}
}

// Daemons starting at once agree on one token.
func TestLoadTokenRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contextd", "http-token")
	toks := make([]string, 8)
	var wg sync.WaitGroup
	for i := range toks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if toks[i], err = LoadToken(path); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, tok := range toks[1:] {
		if tok != toks[0] {
			t.Fatalf("racing loads disagree: %q", toks)
		}
	}
}

func TestLoadTokenRefusesExposedFile(t *testing.T) {
	good := base64.RawURLEncoding.EncodeToString(make([]byte, 32)) + "\n"
	cases := []struct {
		name    string
		setup   func(t *testing.T, dir, path string)
		wantErr error
	}{
		{"group readable", func(t *testing.T, dir, path string) { write(t, path, good, 0o640) }, catalog.ErrConfig},
		{"world readable", func(t *testing.T, dir, path string) { write(t, path, good, 0o604) }, catalog.ErrConfig},
		{"group writable dir", func(t *testing.T, dir, path string) { write(t, path, good, 0o600); chmod(t, dir, 0o770) }, catalog.ErrConfig},
		{"symlink", func(t *testing.T, dir, path string) {
			other := filepath.Join(dir, "elsewhere")
			write(t, other, good, 0o600)
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}, catalog.ErrConfig},
		{"directory symlink", func(t *testing.T, dir, path string) {
			real := dir + "-real"
			if err := os.Rename(dir, real); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(real, "http-token"), good, 0o600)
			if err := os.Symlink(real, dir); err != nil {
				t.Fatal(err)
			}
		}, catalog.ErrConfig},
		{"a directory", func(t *testing.T, dir, path string) { os.Mkdir(path, 0o700) }, catalog.ErrConfig},
		{"short", func(t *testing.T, dir, path string) { write(t, path, "abc\n", 0o600) }, catalog.ErrConfig},
		{"not base64url", func(t *testing.T, dir, path string) { write(t, path, strings.Repeat("+", 43), 0o600) }, catalog.ErrConfig},
		{"fine", func(t *testing.T, dir, path string) { write(t, path, good, 0o600) }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "contextd")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "http-token")
			c.setup(t, dir, path)
			tok, err := LoadToken(path)
			if c.wantErr == nil {
				if err != nil || tok != strings.TrimSpace(good) {
					t.Fatalf("LoadToken: %q, %v", tok, err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("LoadToken: %q, %v; want %v", tok, err, c.wantErr)
			}
		})
	}
}

func TestLoadTokenRefusesForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown to another uid; CI runs as root")
	}
	for _, which := range []string{"file", "dir"} {
		dir := filepath.Join(t.TempDir(), "contextd")
		os.Mkdir(dir, 0o700)
		path := filepath.Join(dir, "http-token")
		write(t, path, base64.RawURLEncoding.EncodeToString(make([]byte, 32)), 0o600)
		target := path
		if which == "dir" {
			target = dir
		}
		if err := os.Chown(target, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadToken(path); !errors.Is(err, catalog.ErrConfig) {
			t.Errorf("%s of another uid: %v, want ErrConfig", which, err)
		}
	}
}

func TestTokenPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/s")
	if p, err := TokenPath(); err != nil || p != "/s/contextd/http-token" {
		t.Errorf("TokenPath = %s, %v", p, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/h")
	if p, err := TokenPath(); err != nil || p != "/h/.local/state/contextd/http-token" {
		t.Errorf("TokenPath with a relative XDG_STATE_HOME = %s, %v", p, err)
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, mode)
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
