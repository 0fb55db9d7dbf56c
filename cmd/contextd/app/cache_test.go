package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/cachelayer"
	"github.com/contextd/contextd/daemon/config"
)

// cacheSetup writes a configuration whose [cache] path is a fresh
// directory and returns it with a Manager of the same layers.
func cacheSetup(t *testing.T) (cfgFile string, m *cachelayer.Manager) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "layers")
	cfgFile = filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgFile, []byte("[cache]\npath = \""+root+"\"\nmax_size = \"64MiB\"\nmax_age = \"48h\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := cachelayer.New(&cachelayer.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return cfgFile, m
}

func runCache(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := Command()
	root.SetArgs(append([]string{"cache"}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestCacheListAndClear(t *testing.T) {
	cfg, m := cacheSetup(t)
	out, err := runCache(t, "list", "--config", cfg)
	if err != nil || !strings.HasPrefix(out, "no cache layers in "+m.Root()) {
		t.Fatalf("list of nothing: %q, %v", out, err)
	}

	// Two workspaces (real directories, one with .git), one of them in use.
	proj := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(filepath.Join(proj, ".git"), 0o755)
	os.MkdirAll(filepath.Join(proj, "sub", "dir"), 0o755)
	l, err := m.Acquire(cachelayer.Key{Workspace: proj, Sandbox: "safe_bash"}, []string{"go-build", "go-mod"})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(l.Layers[0].Upper, "entry"), bytes.Repeat([]byte("x"), 20000), 0o644)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	busy := t.TempDir()
	held, err := m.Acquire(cachelayer.Key{Workspace: busy, Sandbox: "safe_bash"}, []string{"npm"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	gone := filepath.Join(t.TempDir(), "deleted-project")
	if l, err := m.Acquire(cachelayer.Key{Workspace: gone, Sandbox: "safe_bash"}, []string{"pip"}); err != nil || l.Release() != nil {
		t.Fatal(err)
	}

	out, err = runCache(t, "list", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	rows := []*regexp.Regexp{
		regexp.MustCompile(`^WORKSPACE +CACHE +SIZE +LAST USED$`),
		regexp.MustCompile(`^` + regexp.QuoteMeta(proj) + ` +go-build +\d+\.\d KiB +\d{4}-\d\d-\d\d \d\d:\d\d$`),
		regexp.MustCompile(`^ +go-mod +\d+(\.\d KiB| B) +\d{4}-\d\d-\d\d \d\d:\d\d$`),
		regexp.MustCompile(`^` + regexp.QuoteMeta(busy) + ` +npm +.* \d\d:\d\d  in use$`),
		regexp.MustCompile(`^` + regexp.QuoteMeta(gone) + ` +pip +.* \d\d:\d\d  deleted$`),
		regexp.MustCompile(`^total \d+\.\d KiB in 3 workspace\(s\), in ` + regexp.QuoteMeta(m.Root()) + `; each kept to 64\.0 MiB, removed after 2 days unused$`),
	}
	// The workspaces come sorted by path; the temporary directories are
	// not, so find each row by its workspace.
	if len(lines) != len(rows) {
		t.Fatalf("list printed %d lines, want %d:\n%s", len(lines), len(rows), out)
	}
	for _, re := range rows {
		found := false
		for _, line := range lines {
			found = found || re.MatchString(line)
		}
		if !found {
			t.Errorf("no line matches %s:\n%s", re, out)
		}
	}
	if i := strings.Index(out, proj); i < 0 || !strings.HasPrefix(out[i:], proj+" ") || !strings.Contains(out[i:], "\n  ") {
		t.Errorf("go-mod is not on the line after go-build:\n%s", out)
	}

	out, err = runCache(t, "list", "--json", "--config", cfg)
	var rep cacheReport
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Root != m.Root() || len(rep.Workspaces) != 3 || rep.MaxBytes != 64<<20 || rep.MaxAgeSec != 48*3600 {
		t.Errorf("list --json: %v\n%s", err, out)
	}

	// clear refuses the workspace in use, with the catalog's code.
	_, err = runCache(t, "clear", busy, "--config", cfg)
	if !errors.Is(err, catalog.ErrCacheBusy) || catalog.ExitCode(err) != catalog.ExitTempFail || !strings.Contains(err.Error(), busy) {
		t.Errorf("clear of a workspace in use: %v", err)
	}
	// A directory inside a workspace names the workspace.
	out, err = runCache(t, "clear", filepath.Join(proj, "sub", "dir"), "--config", cfg)
	if err != nil || out != "cleared "+proj+"\n" {
		t.Errorf("clear of a subdirectory: %q, %v", out, err)
	}
	_, err = runCache(t, "clear", proj, "--config", cfg)
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("clear of a cleared workspace: %v", err)
	}
	// --all clears what it can and names what it could not.
	out, err = runCache(t, "clear", "--all", "--config", cfg)
	if !errors.Is(err, catalog.ErrCacheBusy) || out != "cleared "+gone+"\n" {
		t.Errorf("clear --all with one in use: %q, %v", out, err)
	}
	held.Release()
	out, err = runCache(t, "clear", "--all", "--config", cfg)
	if err != nil || out != "cleared "+busy+"\n" {
		t.Errorf("clear --all: %q, %v", out, err)
	}
}

func TestCacheUsage(t *testing.T) {
	cfg, _ := cacheSetup(t)
	for _, args := range [][]string{
		{"clear"},
		{"clear", "a", "b"},
		{"clear", "--all", "a"},
		{"list", "extra"},
		{"bogus"},
	} {
		if _, err := runCache(t, append(args, "--config", cfg)...); !errors.Is(err, catalog.ErrUsage) {
			t.Errorf("cache %q: %v; want %s", args, err, catalog.ErrUsage.Code)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("[cache]\nmax_size = \"1KiB\"\n"), 0o600)
	if _, err := runCache(t, "list", "--config", bad); !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), "cache.max_size") {
		t.Errorf("list with a bad [cache]: %v", err)
	}
}

// The configuration's defaults are the package's.
func TestCacheDefaultsAgree(t *testing.T) {
	d := config.Default().Cache
	if int64(d.MaxSize) != cachelayer.DefaultMaxBytes || d.MaxAge.Duration != cachelayer.DefaultMaxAge {
		t.Errorf("[cache] defaults %+v differ from cachelayer's (%d, %s)", d, cachelayer.DefaultMaxBytes, cachelayer.DefaultMaxAge)
	}
}
