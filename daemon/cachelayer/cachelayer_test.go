package cachelayer_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/cachelayer"
)

// clock is a settable Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newManager returns a Manager of a fresh root (not yet created) and
// clears it at the end of the test, so that read-only trees left in it do
// not fail t.TempDir's cleanup.
func newManager(t *testing.T, o cachelayer.Options) *cachelayer.Manager {
	t.Helper()
	if o.Root == "" {
		o.Root = filepath.Join(t.TempDir(), "cache", "contextd", "layers")
	}
	m, err := cachelayer.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := m.Clear(""); err != nil {
			t.Errorf("final Clear: %v", err)
		}
	})
	return m
}

func acquire(t *testing.T, m *cachelayer.Manager, ws string, caches ...string) *cachelayer.Lease {
	t.Helper()
	l, err := m.Acquire(cachelayer.Key{Workspace: ws, Sandbox: "safe_bash"}, caches)
	if err != nil {
		t.Fatalf("Acquire(%s, %q): %v", ws, caches, err)
	}
	return l
}

func release(t *testing.T, l *cachelayer.Lease) {
	t.Helper()
	if err := l.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// fill writes n random bytes (no holes: they take their blocks) to p.
func fill(t *testing.T, p string, n int) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// list returns List's entry for ws (nil when it has none).
func list(t *testing.T, m *cachelayer.Manager, ws string) *cachelayer.Usage {
	t.Helper()
	us, err := m.List()
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for i := range us {
		if us[i].Workspace == ws {
			return &us[i]
		}
	}
	return nil
}

func cacheNames(u *cachelayer.Usage) []string {
	if u == nil {
		return nil
	}
	var names []string
	for _, c := range u.Caches {
		names = append(names, c.Name)
	}
	return names
}

func TestAcquireRelease(t *testing.T) {
	clk := newClock()
	m := newManager(t, cachelayer.Options{Now: clk.Now})
	ws := "/home/u/project"

	// No caches: nothing to mount, nothing made on disk.
	l := acquire(t, m, ws)
	if len(l.Layers) != 0 || l.Ephemeral {
		t.Errorf("empty lease: %+v", l)
	}
	release(t, l)
	if exists(t, m.Root()) {
		t.Error("an empty lease made the root")
	}

	l = acquire(t, m, ws, "go-build", "go-mod", "go-build")
	if l.Ephemeral || l.Warning != "" || l.Workspace != ws {
		t.Fatalf("first lease: %+v", l)
	}
	if got := []string{l.Layers[0].Cache, l.Layers[1].Cache}; len(l.Layers) != 2 || !slices.Equal(got, []string{"go-build", "go-mod"}) {
		t.Fatalf("layers %+v: want go-build, go-mod in that order, once each", l.Layers)
	}
	wsDir := filepath.Dir(filepath.Dir(l.Layers[0].Upper))
	if filepath.Dir(wsDir) != m.Root() || len(filepath.Base(wsDir)) != 32 {
		t.Errorf("layers in %s: want <root>/<32 hex digits>", wsDir)
	}
	for _, ly := range l.Layers {
		if ly.Upper != filepath.Join(wsDir, ly.Cache, "upper") || ly.Work != filepath.Join(wsDir, ly.Cache, "work") {
			t.Errorf("layer %+v: want %s/%s/{upper,work}", ly, wsDir, ly.Cache)
		}
		for _, d := range []string{m.Root(), wsDir, filepath.Dir(ly.Upper), ly.Upper, ly.Work} {
			fi, err := os.Lstat(d)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, %v; want a directory, mode 0700", d, fi.Mode(), err)
			}
		}
		if got, ok := l.Layer(ly.Cache); !ok || got != ly {
			t.Errorf("Layer(%s) = %+v, %v", ly.Cache, got, ok)
		}
	}
	if _, ok := l.Layer("npm"); ok {
		t.Error("Layer(npm) found a layer not asked for")
	}
	fill(t, filepath.Join(l.Layers[0].Upper, "ab", "entry-d"), 10000)

	clk.Add(time.Hour)
	release(t, l)
	release(t, l) // a second Release is harmless

	u := list(t, m, ws)
	if u == nil || u.InUse || !slices.Equal(cacheNames(u), []string{"go-build", "go-mod"}) || !u.LastUsed.Equal(clk.Now()) {
		t.Fatalf("List after Release: %+v", u)
	}
	if b := u.Caches[0].Bytes; b < 10000 || u.Bytes < b {
		t.Errorf("go-build measured %d bytes (workspace %d), want at least the 10000 written", b, u.Bytes)
	}

	// The next call gets the same layers, with what the last one wrote.
	l2 := acquire(t, m, ws, "go-build")
	defer release(t, l2)
	if l2.Ephemeral || l2.Layers[0] != l.Layers[0] || !exists(t, filepath.Join(l2.Layers[0].Upper, "ab", "entry-d")) {
		t.Errorf("second lease %+v does not reuse %+v", l2.Layers, l.Layers[0])
	}
	// Another workspace has layers of its own.
	l3 := acquire(t, m, "/home/u/other", "go-build")
	defer release(t, l3)
	if l3.Ephemeral || l3.Layers[0].Upper == l2.Layers[0].Upper {
		t.Errorf("two workspaces share %s", l3.Layers[0].Upper)
	}
}

// A call that finds its workspace's layers held gets fresh ones of its
// own, and a warning; the holder keeps the real ones.
func TestConcurrentAcquire(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	ws := "/home/u/project"
	first := acquire(t, m, ws, "npm")
	second := acquire(t, m, ws, "npm", "pip")
	if first.Ephemeral || !second.Ephemeral || second.Warning != cachelayer.BusyWarning {
		t.Fatalf("first %+v, second %+v: want the second ephemeral, with the warning", first, second)
	}
	tmp := filepath.Join(m.Root(), ".tmp")
	for _, ly := range second.Layers {
		if !strings.HasPrefix(ly.Upper, tmp+"/") || !strings.HasPrefix(ly.Work, filepath.Dir(ly.Upper)+"/") {
			t.Errorf("ephemeral layer %+v not under %s", ly, tmp)
		}
		if fi, err := os.Lstat(ly.Upper); err != nil || !fi.IsDir() {
			t.Errorf("ephemeral upper %s: %v", ly.Upper, err)
		}
	}
	fill(t, filepath.Join(second.Layers[0].Upper, "x"), 100)
	fill(t, filepath.Join(first.Layers[0].Upper, "kept"), 100)
	if u := list(t, m, ws); u == nil || !u.InUse {
		t.Errorf("List while leased: %+v, want in use", u)
	}
	release(t, second)
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("Release left %v in .tmp", entries)
	}
	if !exists(t, filepath.Join(first.Layers[0].Upper, "kept")) {
		t.Error("the ephemeral lease's release touched the kept layer")
	}
	release(t, first)
	if u := list(t, m, ws); u == nil || u.InUse || !slices.Equal(cacheNames(u), []string{"npm"}) {
		t.Errorf("List after both: %+v; want npm only (pip was ephemeral), not in use", u)
	}
	third := acquire(t, m, ws, "npm")
	defer release(t, third)
	if third.Ephemeral || !exists(t, filepath.Join(third.Layers[0].Upper, "kept")) {
		t.Errorf("third lease %+v: want the kept layer back", third)
	}
}

// However calls, Clear and Expire interleave, at most one lease at a time
// has a workspace's kept layers, and every kept lease sees whole layers.
func TestOneHolderUnderRaces(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	ws := "/home/u/project"
	var holders, kept, ephemeral atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := m.Acquire(cachelayer.Key{Workspace: ws, Sandbox: "safe_bash"}, []string{"go-build", "go-mod"})
				if err != nil {
					t.Error(err)
					return
				}
				if !l.Ephemeral {
					if n := holders.Add(1); n > 1 {
						t.Errorf("%d leases hold the kept layers at once", n)
					}
					kept.Add(1)
					for _, ly := range l.Layers {
						if fi, err := os.Lstat(ly.Work); err != nil || !fi.IsDir() {
							t.Errorf("kept lease's %s: %v", ly.Work, err)
						}
					}
					time.Sleep(50 * time.Microsecond)
					holders.Add(-1)
				} else {
					ephemeral.Add(1)
				}
				if err := l.Release(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := m.Clear(ws); err != nil && !errors.Is(err, catalog.ErrCacheBusy) && !errors.Is(err, catalog.ErrNotFound) {
				t.Errorf("Clear: %v", err)
			}
			if _, err := m.Expire(time.Now().Add(365 * 24 * time.Hour)); err != nil {
				t.Errorf("Expire: %v", err)
			}
		}
	})
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	if kept.Load() == 0 || ephemeral.Load() == 0 {
		t.Errorf("%d kept and %d ephemeral leases: the race did not happen", kept.Load(), ephemeral.Load())
	}
	if entries, _ := os.ReadDir(filepath.Join(m.Root(), ".tmp")); len(entries) != 0 {
		t.Errorf(".tmp holds %d entries after every lease was released", len(entries))
	}
}

func TestEphemeralOption(t *testing.T) {
	m := newManager(t, cachelayer.Options{Ephemeral: true})
	l := acquire(t, m, "/home/u/project", "cargo-registry")
	if !l.Ephemeral || l.Warning != "" {
		t.Errorf("with Options.Ephemeral: %+v; want ephemeral, no warning", l)
	}
	release(t, l)
	if us, err := m.List(); err != nil || len(us) != 0 {
		t.Errorf("List = %+v, %v; want nothing kept", us, err)
	}
}

func TestBadInput(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	for _, tt := range []struct {
		name, ws string
		caches   []string
	}{
		{"relative workspace", "project", []string{"npm"}},
		{"root workspace", "/", []string{"npm"}},
		{"empty workspace", "", []string{"npm"}},
		{"empty cache", "/p", []string{""}},
		{"dot cache", "/p", []string{".lock"}},
		{"dotdot", "/p", []string{".."}},
		{"slash", "/p", []string{"go/build"}},
		{"upper case", "/p", []string{"Go"}},
		{"too long", "/p", []string{strings.Repeat("a", 65)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := m.Acquire(cachelayer.Key{Workspace: tt.ws, Sandbox: "safe_bash"}, tt.caches)
			if !errors.Is(err, catalog.ErrInternal) || l != nil {
				t.Errorf("Acquire(%q, %q) = %v, %v; want %s", tt.ws, tt.caches, l, err, catalog.ErrInternal.Code)
			}
		})
	}
	for _, o := range []cachelayer.Options{{Root: "relative"}, {Root: "/"}, {MaxBytes: -1}, {MaxAge: -time.Second}} {
		if _, err := cachelayer.New(&o); !errors.Is(err, catalog.ErrConfig) {
			t.Errorf("New(%+v) = %v; want %s", o, err, catalog.ErrConfig.Code)
		}
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	m, err := cachelayer.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Root() != "/x/cache/contextd/layers" || m.MaxBytes() != 2<<30 || m.MaxAge() != 14*24*time.Hour {
		t.Errorf("defaults: root %s, max %d, age %s", m.Root(), m.MaxBytes(), m.MaxAge())
	}
	t.Setenv("XDG_CACHE_HOME", "relative") // not absolute: ignored, as the XDG spec says
	t.Setenv("HOME", "/h")
	if d, err := cachelayer.DefaultRoot(); err != nil || d != "/h/.cache/contextd/layers" {
		t.Errorf("DefaultRoot = %q, %v", d, err)
	}
}

// The root is refused when it is not a plain directory of the user's, and
// tightened to 0700 when it is.
func TestRootChecks(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	link := filepath.Join(dir, "link")
	os.Symlink(elsewhere, link)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	for _, root := range []string{link, file} {
		m, err := cachelayer.New(&cachelayer.Options{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Acquire(cachelayer.Key{Workspace: "/p", Sandbox: "safe_bash"}, []string{"npm"}); !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), root) {
			t.Errorf("root %s: Acquire error %v; want %s naming it", root, err, catalog.ErrConfig.Code)
		}
		if _, err := m.List(); !errors.Is(err, catalog.ErrConfig) {
			t.Errorf("root %s: List error %v", root, err)
		}
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("layers were made through the symlink: %v", entries)
	}

	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o755)
	m := newManager(t, cachelayer.Options{Root: open})
	release(t, acquire(t, m, "/p", "npm"))
	if fi, _ := os.Stat(open); fi.Mode().Perm() != 0o700 {
		t.Errorf("root left at %v", fi.Mode().Perm())
	}
}

// A symlink planted in the layers is never followed: not to make layers
// through it, not when deleting them.
func TestSymlinksNotFollowed(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	ws := "/home/u/project"
	l := acquire(t, m, ws, "npm")
	wsDir := filepath.Dir(filepath.Dir(l.Layers[0].Upper))
	release(t, l)

	// The user's own cache, which a link in an upper layer points at.
	outside := t.TempDir()
	fill(t, filepath.Join(outside, "pkg", "index.js"), 100)
	os.Chmod(filepath.Join(outside, "pkg"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(outside, "pkg"), 0o755) })

	// A cache directory replaced by a link: Acquire refuses it.
	if err := os.Symlink(outside, filepath.Join(wsDir, "pip")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(cachelayer.Key{Workspace: ws, Sandbox: "safe_bash"}, []string{"pip"}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Acquire through a symlinked cache directory: %v", err)
	}
	// Links inside an upper layer, to the directory and into it, and a
	// read-only tree that makes Clear chmod its way down.
	l = acquire(t, m, ws, "npm")
	up := l.Layers[0].Upper
	os.Symlink(outside, filepath.Join(up, "to-dir"))
	os.Symlink(filepath.Join(outside, "pkg"), filepath.Join(up, "to-pkg"))
	if err := plantLeftovers(l.Layers[0]); err != nil {
		t.Fatal(err)
	}
	release(t, l)
	if _, err := m.Clear(ws); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	if exists(t, wsDir) {
		t.Error("Clear left the layers")
	}
	fi, err := os.Stat(filepath.Join(outside, "pkg"))
	if err != nil || fi.Mode().Perm() != 0o555 || !exists(t, filepath.Join(outside, "pkg", "index.js")) {
		t.Errorf("the link's target was changed: %v, %v", fi.Mode(), err)
	}
}

// overlayfs leaves work/work behind; Acquire hands out an empty work
// directory.
func TestWorkEmptied(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	l := acquire(t, m, "/p", "go-build")
	if err := plantLeftovers(l.Layers[0]); err != nil {
		t.Fatal(err)
	}
	release(t, l)
	l = acquire(t, m, "/p", "go-build")
	defer release(t, l)
	if entries, err := os.ReadDir(l.Layers[0].Work); err != nil || len(entries) != 0 {
		t.Errorf("work directory holds %v (%v)", entries, err)
	}
	if !exists(t, filepath.Join(l.Layers[0].Upper, "mod", "example.com", "m@v1.0.0", "go.mod")) {
		t.Error("emptying work touched upper")
	}
}

func TestSizeBound(t *testing.T) {
	clk := newClock()
	m := newManager(t, cachelayer.Options{MaxBytes: 1 << 20, Now: clk.Now})
	ws := "/home/u/project"

	// Each under the bound alone, over it together: the one used longest
	// ago goes, whole.
	l := acquire(t, m, ws, "go-mod")
	fill(t, filepath.Join(l.Layers[0].Upper, "a"), 700<<10)
	release(t, l)
	clk.Add(time.Minute)
	l = acquire(t, m, ws, "go-build")
	fill(t, filepath.Join(l.Layers[0].Upper, "b"), 700<<10)
	release(t, l)
	u := list(t, m, ws)
	if got := cacheNames(u); !slices.Equal(got, []string{"go-build"}) {
		t.Fatalf("after going over the bound: caches %v, want go-build only (go-mod was used longer ago)", got)
	}
	if u.Bytes > 1<<20 {
		t.Errorf("layers take %d bytes, over the bound", u.Bytes)
	}
	if entries, _ := os.ReadDir(filepath.Join(m.Root(), ".tmp")); len(entries) != 0 {
		t.Errorf("eviction left %v in .tmp", entries)
	}

	// Used at the same time: the largest goes first.
	clk.Add(time.Minute)
	l = acquire(t, m, ws, "go-build", "npm", "pip")
	fill(t, filepath.Join(l.Layers[1].Upper, "n"), 200<<10)
	fill(t, filepath.Join(l.Layers[2].Upper, "p"), 300<<10)
	release(t, l)
	if got := cacheNames(list(t, m, ws)); !slices.Equal(got, []string{"npm", "pip"}) {
		t.Errorf("caches %v: want go-build (largest) gone, npm and pip kept", got)
	}

	// One cache alone over the bound goes too; the others stay.
	clk.Add(time.Minute)
	l = acquire(t, m, ws, "npm")
	fill(t, filepath.Join(l.Layers[0].Upper, "big"), 2<<20)
	release(t, l)
	if got := cacheNames(list(t, m, ws)); !slices.Equal(got, []string{"pip"}) {
		t.Errorf("caches %v: want pip only", got)
	}

	// The bound is per workspace.
	l = acquire(t, m, "/home/u/other", "go-mod")
	fill(t, filepath.Join(l.Layers[0].Upper, "a"), 700<<10)
	release(t, l)
	if got := cacheNames(list(t, m, "/home/u/other")); !slices.Equal(got, []string{"go-mod"}) {
		t.Errorf("other workspace: caches %v", got)
	}
}

// A directory a tool made unreadable cannot hide its contents from the
// bound: the layer holding it is removed.
func TestSizeBoundUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	m := newManager(t, cachelayer.Options{MaxBytes: 1 << 20})
	l := acquire(t, m, "/p", "go-build", "npm")
	hidden := filepath.Join(l.Layers[0].Upper, "hidden")
	fill(t, filepath.Join(hidden, "f"), 10)
	os.Chmod(hidden, 0)
	fill(t, filepath.Join(l.Layers[1].Upper, "f"), 10)
	release(t, l)
	if got := cacheNames(list(t, m, "/p")); !slices.Equal(got, []string{"npm"}) {
		t.Errorf("caches %v: want the unmeasurable go-build gone", got)
	}
}

func TestExpire(t *testing.T) {
	clk := newClock()
	m := newManager(t, cachelayer.Options{MaxAge: 14 * 24 * time.Hour, Now: clk.Now})
	start := clk.Now()
	release(t, acquire(t, m, "/old", "go-build"))
	held := acquire(t, m, "/held", "go-build")
	clk.Add(10 * 24 * time.Hour)
	release(t, acquire(t, m, "/recent", "npm"))
	// Layers without a cache (a crash before the first was made) hold
	// nothing to keep, however new.
	empty := filepath.Join(m.Root(), "0123456789abcdef0123456789abcdef")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}

	removed, err := m.Expire(start.Add(15 * 24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, []string{"(unknown workspace, layers 0123456789abcdef0123456789abcdef)", "/old"}) || exists(t, empty) {
		t.Errorf("Expire removed %v; want /old (/held is leased, /recent was used 5 days ago) and the empty layers", removed)
	}
	for ws, want := range map[string]bool{"/old": false, "/held": true, "/recent": true} {
		if got := list(t, m, ws) != nil; got != want {
			t.Errorf("%s kept: %v, want %v", ws, got, want)
		}
	}
	release(t, held)
	// Released now, by the clock: /held is recent again.
	removed, _ = m.Expire(clk.Now().Add(13 * 24 * time.Hour))
	if len(removed) != 0 {
		t.Errorf("Expire removed %v, used less than 14 days before", removed)
	}
	removed, _ = m.Expire(clk.Now().Add(14 * 24 * time.Hour))
	slices.Sort(removed)
	if !slices.Equal(removed, []string{"/held", "/recent"}) {
		t.Errorf("Expire removed %v", removed)
	}
	// A root that was never made: nothing to do.
	m2 := newManager(t, cachelayer.Options{})
	if removed, err := m2.Expire(time.Now()); err != nil || removed != nil || exists(t, m2.Root()) {
		t.Errorf("Expire of a missing root: %v, %v", removed, err)
	}
}

func TestClear(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	l := acquire(t, m, "/busy", "go-build")
	release(t, acquire(t, m, "/free", "go-build"))
	release(t, acquire(t, m, "/free2", "npm"))

	_, err := m.Clear("/busy")
	if !errors.Is(err, catalog.ErrCacheBusy) || !strings.Contains(err.Error(), "/busy") {
		t.Errorf("Clear of leased layers: %v; want %s naming /busy", err, catalog.ErrCacheBusy.Code)
	}
	if !exists(t, l.Layers[0].Upper) {
		t.Fatal("Clear removed leased layers")
	}
	if _, err := m.Clear("/nowhere"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Clear of a workspace without layers: %v", err)
	}
	if _, err := m.Clear("relative"); !errors.Is(err, catalog.ErrUsage) {
		t.Errorf("Clear(relative): %v", err)
	}
	removed, err := m.Clear("/free")
	if err != nil || !slices.Equal(removed, []string{"/free"}) || list(t, m, "/free") != nil {
		t.Errorf("Clear(/free) = %v, %v", removed, err)
	}
	// All: the free ones go, the leased one stays and is named.
	removed, err = m.Clear("")
	if !errors.Is(err, catalog.ErrCacheBusy) || !slices.Equal(removed, []string{"/free2"}) {
		t.Errorf("Clear(all) = %v, %v; want /free2 removed and %s", removed, err, catalog.ErrCacheBusy.Code)
	}
	release(t, l)
	if removed, err = m.Clear(""); err != nil || !slices.Equal(removed, []string{"/busy"}) {
		t.Errorf("Clear(all) after release = %v, %v", removed, err)
	}
	// Cleared layers come back empty on the next call.
	l = acquire(t, m, "/busy", "go-build")
	defer release(t, l)
	if l.Ephemeral {
		t.Error("lease after Clear is ephemeral")
	}
	if entries, _ := os.ReadDir(l.Layers[0].Upper); len(entries) != 0 {
		t.Errorf("cleared layer holds %v", entries)
	}
}

// A daemon that crashed mid-call leaves its ephemeral layers in .tmp and
// its lock file: the layers go at the next Expire (or Clear), the lock is
// free.
func TestCrashLeftovers(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	held := acquire(t, m, "/busy", "go-mod")
	crash := func(ws string, caches ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{m.Root(), ws}, caches...)...)
		cmd.Env = append(os.Environ(), helperEnv+"=crash", quickExit)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("crash helper: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// The crashed call in /busy got ephemeral layers; the one in /quiet
	// held the kept ones when it died.
	if out := crash("/busy", "go-mod", "go-build"); out != "ephemeral=true" {
		t.Fatalf("crashed call in a busy workspace: %s", out)
	}
	if out := crash("/quiet", "go-mod"); out != "ephemeral=false" {
		t.Fatalf("crashed call in a quiet workspace: %s", out)
	}
	// A deletion a crash cut short: a directory whose lock file is gone.
	cut := filepath.Join(m.Root(), ".tmp", "gone-0123456789abcdef")
	fill(t, filepath.Join(cut, "go-build", "upper", "x"), 100)
	// A live lease's ephemeral layers, which must stay.
	live := acquire(t, m, "/busy", "npm")
	if !live.Ephemeral {
		t.Fatal("second lease in /busy not ephemeral")
	}

	if _, err := m.Expire(time.Now()); err != nil {
		t.Fatalf("Expire: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(m.Root(), ".tmp"))
	if len(entries) != 2 || !exists(t, live.Layers[0].Upper) {
		t.Errorf(".tmp after Expire: %v; want only the live lease's directory and lock", entries)
	}
	// The dead holder's lock is free: the next call keeps its writes.
	l := acquire(t, m, "/quiet", "go-mod")
	if l.Ephemeral || !exists(t, filepath.Join(l.Layers[0].Upper, "mod", "example.com", "m@v1.0.0", "go.mod")) {
		t.Errorf("after a crash: %+v; want the kept layer, with the dead call's writes", l)
	}
	release(t, l)
	release(t, live)
	release(t, held)
}

// The layers work as an overlay's upper and work directories (unprivileged,
// in a user namespace, as the sandbox mounts them): writes land in the
// upper layer, never in the user's cache; the next call sees them; and what
// overlayfs leaves behind is removed.
func TestOverlay(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	lower := t.TempDir() // the user's cache
	fill(t, filepath.Join(lower, "old"), 10)
	fill(t, filepath.Join(lower, "stale"), 10)

	l := acquire(t, m, "/p", "go-build")
	out := inOverlay(t, lower, l.Layers[0], "write:new:fresh", "rm:stale", "rodir:ro", "cat:old")
	if want := []string{"write:new:fresh OK", "rm:stale OK", "rodir:ro OK"}; !slices.Equal(out[:3], want) {
		t.Fatalf("in the overlay: %q", out)
	}
	release(t, l)
	if exists(t, filepath.Join(lower, "new")) || !exists(t, filepath.Join(lower, "stale")) || exists(t, filepath.Join(lower, "ro")) {
		t.Error("a write through the overlay reached the lower layer")
	}
	if !exists(t, filepath.Join(l.Layers[0].Upper, "new")) {
		t.Error("the write is not in the upper layer")
	}

	// The next call: what the first wrote and deleted, over the same lower.
	l = acquire(t, m, "/p", "go-build")
	out = inOverlay(t, lower, l.Layers[0], "cat:new", "cat:stale", "cat:old")
	if want := []string{"cat:new fresh", "cat:stale ENOENT"}; !slices.Equal(out[:2], want) {
		t.Errorf("second call sees %q, want %q", out, want)
	}
	// A concurrent call gets its own layers: nothing the first wrote.
	eph := acquire(t, m, "/p", "go-build")
	out = inOverlay(t, lower, eph.Layers[0], "cat:new", "write:new:other")
	if want := []string{"cat:new ENOENT", "write:new:other OK"}; !slices.Equal(out, want) {
		t.Errorf("ephemeral call sees %q, want %q", out, want)
	}
	release(t, eph)
	release(t, l)
	if _, err := m.Clear("/p"); err != nil {
		t.Fatalf("Clear after overlay mounts: %v", err)
	}
	if entries, _ := os.ReadDir(m.Root()); len(entries) != 1 { // .tmp, empty
		t.Errorf("root after Clear: %v", entries)
	}
}

// List shows what each workspace keeps, and marks the layers in use; it
// takes no lock, so it never turns a call ephemeral.
func TestList(t *testing.T) {
	clk := newClock()
	m := newManager(t, cachelayer.Options{Now: clk.Now})
	if us, err := m.List(); err != nil || len(us) != 0 {
		t.Fatalf("List of a missing root = %v, %v", us, err)
	}
	l := acquire(t, m, "/b", "npm", "go-build")
	fill(t, filepath.Join(l.Layers[0].Upper, "f"), 8192)
	release(t, l)
	clk.Add(time.Hour)
	l = acquire(t, m, "/a", "pip")
	us, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 2 || us[0].Workspace != "/a" || us[1].Workspace != "/b" {
		t.Fatalf("List = %+v; want /a then /b", us)
	}
	if !us[0].InUse || us[1].InUse {
		t.Errorf("in use: /a %v, /b %v; want only /a", us[0].InUse, us[1].InUse)
	}
	b := us[1]
	if !slices.Equal(cacheNames(&b), []string{"go-build", "npm"}) || b.Caches[1].Bytes < 8192 ||
		!b.LastUsed.Equal(clk.Now().Add(-time.Hour)) || b.Caches[0].LastUsed != b.LastUsed {
		t.Errorf("/b: %+v", b)
	}
	if b.Bytes != b.Caches[0].Bytes+b.Caches[1].Bytes {
		t.Errorf("/b total %d is not the sum of %+v", b.Bytes, b.Caches)
	}
	// While List ran, the lease was not disturbed: another still is
	// ephemeral, the holder still holds.
	if l2 := acquire(t, m, "/a", "pip"); !l2.Ephemeral {
		t.Error("List released the lock")
	} else {
		release(t, l2)
	}
	release(t, l)

	// Layers whose .layer.json was lost still show, by their directory.
	dir := filepath.Dir(filepath.Dir(l.Layers[0].Upper))
	if err := os.Remove(filepath.Join(dir, ".layer.json")); err != nil {
		t.Fatal(err)
	}
	us, _ = m.List()
	if len(us) != 2 || us[0].Workspace != "" || us[0].ID != filepath.Base(dir) || us[0].LastUsed.IsZero() {
		t.Errorf("layers without metadata: %+v", us[0])
	}
	// ...and Clear, which names them by their directory, removes them.
	removed, err := m.Clear("")
	if err != nil || len(removed) != 2 || !strings.Contains(removed[0]+removed[1], filepath.Base(dir)) {
		t.Errorf("Clear = %v, %v", removed, err)
	}
}

// The lock files are opened O_CLOEXEC: a lease's lock must not leak into
// the sandbox's processes (which would keep it held after Release).
func TestLockNotInherited(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	l := acquire(t, m, "/p", "npm")
	dir := filepath.Dir(filepath.Dir(l.Layers[0].Upper))
	lock, err := os.Lstat(filepath.Join(dir, ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	ino := lock.Sys().(*syscall.Stat_t).Ino
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		p := filepath.Join("/proc/self/fd", fd.Name())
		if fi, err := os.Stat(p); err == nil && fi.Sys().(*syscall.Stat_t).Ino == ino {
			flags, _ := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
			// fdinfo's flags are octal; O_CLOEXEC is 02000000.
			for line := range strings.Lines(string(flags)) {
				if v, ok := strings.CutPrefix(line, "flags:"); ok {
					var f int
					if _, err := fmt.Sscanf(strings.TrimSpace(v), "%o", &f); err != nil || f&0o2000000 == 0 {
						t.Errorf("lock fd %s: flags %s, want O_CLOEXEC", fd.Name(), strings.TrimSpace(v))
					}
				}
			}
		}
	}
	release(t, l)
}

// Unlock frees the layers for the next call at once, and checks no bound;
// the Release that follows it checks the bound.
func TestUnlockThenRelease(t *testing.T) {
	m := newManager(t, cachelayer.Options{MaxBytes: 1 << 20})
	ws := "/home/u/project"
	l := acquire(t, m, ws, "go-build")
	fill(t, filepath.Join(l.Layers[0].Upper, "big"), 2<<20)
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	next := acquire(t, m, ws, "npm")
	if next.Ephemeral || next.Warning != "" {
		t.Errorf("the next call after Unlock got throwaway layers: %q", next.Warning)
	}
	if err := next.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := cacheNames(list(t, m, ws)); !slices.Contains(got, "go-build") {
		t.Fatalf("Unlock enforced the bound: caches %v", got)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if got := cacheNames(list(t, m, ws)); slices.Contains(got, "go-build") {
		t.Errorf("Release after Unlock did not enforce the bound: caches %v", got)
	}
}

// Layers are per sandbox and per identity of the workspace root: what a
// safe_bash call leaves in its layers is not in a wrapped server's, and a
// workspace deleted and made again at its path starts empty.
func TestKeySeparates(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	ws := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	id, err := cachelayer.Identity(ws)
	if err != nil {
		t.Fatal(err)
	}
	key := func(sandbox, id string) cachelayer.Key {
		return cachelayer.Key{Workspace: ws, Identity: id, Sandbox: sandbox}
	}
	planted := func(k cachelayer.Key) bool {
		t.Helper()
		l, err := m.Acquire(k, []string{"home"})
		if err != nil {
			t.Fatal(err)
		}
		defer release(t, l)
		_, err = os.Lstat(filepath.Join(l.Layers[0].Upper, ".npmrc"))
		return err == nil
	}
	l := acquire2(t, m, key("safe_bash", id), "home")
	os.WriteFile(filepath.Join(l.Layers[0].Upper, ".npmrc"), []byte("node-options=--require=/tmp/x.js\n"), 0o600)
	release(t, l)
	if !planted(key("safe_bash", id)) {
		t.Fatal("safe_bash's own layers lost what it wrote: the check below could not fail")
	}
	if planted(key("mcp:srv", id)) {
		t.Error("a wrapped server sees what safe_bash planted in its scratch home")
	}
	// Made again at the same path, many times (ext4 reuses the inode
	// number of a directory just removed): never the old identity.
	seen := map[string]bool{id: true}
	for range 20 {
		if err := os.Remove(ws); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		nid, err := cachelayer.Identity(ws)
		if err != nil {
			t.Fatal(err)
		}
		if seen[nid] {
			t.Fatalf("a new directory at %s has an identity seen before: %s", ws, nid)
		}
		seen[nid] = true
		if planted(key("safe_bash", nid)) {
			t.Fatal("a new workspace at the old path sees the old one's layers")
		}
	}
	if _, err := m.Acquire(cachelayer.Key{Workspace: ws, Identity: id}, []string{"home"}); !errors.Is(err, catalog.ErrInternal) {
		t.Errorf("layers without a sandbox name: %v", err)
	}
	if _, err := cachelayer.Identity(filepath.Join(ws, "missing")); err == nil {
		t.Error("a missing workspace has an identity")
	}
	// Clear of the workspace clears every sandbox's and identity's layers.
	removed, err := m.Clear(ws)
	if err != nil || !slices.Equal(removed, []string{ws}) {
		t.Errorf("Clear(%s) = %v, %v", ws, removed, err)
	}
	if us, _ := m.List(); len(us) != 0 {
		t.Errorf("layers left after Clear: %+v", us)
	}
}

func acquire2(t *testing.T, m *cachelayer.Manager, k cachelayer.Key, caches ...string) *cachelayer.Lease {
	t.Helper()
	l, err := m.Acquire(k, caches)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
