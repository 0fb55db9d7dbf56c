package shield

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/workspace"
)

// newHome makes a home with a project in it; both canonical.
func newHome(t testing.TB) (home, proj string) {
	t.Helper()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj = filepath.Join(home, "proj")
	if err := os.MkdirAll(filepath.Join(proj, ".claude/tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	return home, proj
}

func rels(root string, ps []string) []string {
	var out []string
	for _, p := range ps {
		r, _ := filepath.Rel(root, p)
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// In a project set up for Claude only, every other agent's configuration
// is missing: each gets a placeholder while a call runs (seen read-only),
// .vscode as a whole too (nothing of it exists); the existing .claude is
// bound read-only. Two calls share the placeholders; the last one to end
// removes them, and the project is as it was.
func TestShieldPlaceholders(t *testing.T) {
	home, proj := newHome(t)
	a, err := Writable(proj, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".claude", ".codex", ".gemini", ".mcp.json", ".opencode", ".vscode", "opencode.json", "opencode.jsonc"}
	if got := rels(proj, a.ReadOnly); !slices.Equal(got, want) {
		t.Errorf("read-only %v, want %v", got, want)
	}
	if got := rels(proj, a.Placeholders); slices.Contains(got, ".claude") || len(got) != len(want)-1 {
		t.Errorf("placeholders %v", got)
	}
	// A missing file's placeholder is a file holding an empty
	// configuration, so that the agent running beside a long-lived sandbox
	// reads nothing rather than failing on a directory; the rest are
	// empty directories.
	files := []string{".mcp.json", "opencode.json", "opencode.jsonc"}
	for _, p := range a.Placeholders {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatalf("placeholder %s not in place: %v", p, err)
		}
		if slices.Contains(files, filepath.Base(p)) {
			if b, _ := os.ReadFile(p); !fi.Mode().IsRegular() || string(b) != "{}\n" {
				t.Errorf("file placeholder %s: %v %q", p, fi.Mode(), b)
			}
		} else if !fi.IsDir() {
			t.Errorf("placeholder %s is not a directory: %v", p, fi.Mode())
		}
	}
	b, err := Writable(proj, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rels(proj, b.Placeholders), rels(proj, a.Placeholders)) {
		t.Errorf("second call: placeholders %v", b.Placeholders)
	}
	a.Release()
	for _, p := range b.Placeholders {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("%s removed while another call holds it", p)
		}
	}
	b.Release()
	ents, _ := os.ReadDir(proj)
	if len(ents) != 1 || ents[0].Name() != ".claude" {
		t.Errorf("after both calls the project holds %v", ents)
	}
}

// What the user put in or in place of a placeholder meanwhile is never
// removed.
func TestShieldKeepsUsersFiles(t *testing.T) {
	home, proj := newHome(t)
	s, err := Writable(proj, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The user runs `codex` on the host meanwhile, and replaces the
	// placeholder of .gemini by a directory of their own; OpenCode writes
	// its configuration into opencode.json's placeholder.
	os.WriteFile(filepath.Join(proj, ".codex/config.toml"), []byte("model = \"x\"\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "opencode.json"), []byte(`{"mcp":{}}`+"\n"), 0o644)
	os.Remove(filepath.Join(proj, ".gemini"))
	os.Mkdir(filepath.Join(proj, ".gemini"), 0o700)
	s.Release()
	if b, err := os.ReadFile(filepath.Join(proj, ".codex/config.toml")); err != nil || string(b) != "model = \"x\"\n" {
		t.Errorf(".codex/config.toml: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(proj, ".gemini")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the user's .gemini was removed: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(proj, "opencode.json")); err != nil || string(b) != `{"mcp":{}}`+"\n" {
		t.Errorf("the opencode.json written meanwhile was removed: %q %v", b, err)
	}
	for _, p := range []string{".opencode", "opencode.jsonc"} {
		if _, err := os.Lstat(filepath.Join(proj, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s placeholder left: %v", p, err)
		}
	}
}

// .vscode exists: it stays writable but becomes a mount point (bound onto
// itself) so it cannot be renamed away with its protected files; tasks.json
// (missing) gets a placeholder, settings.json (there) a read-only bind.
func TestShieldVSCode(t *testing.T) {
	home, proj := newHome(t)
	os.MkdirAll(filepath.Join(proj, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(proj, ".vscode/settings.json"), []byte("{}"), 0o644)
	s, err := Writable(proj, home, nil)
	defer s.Release()
	if err != nil {
		t.Fatal(err)
	}
	if got := rels(proj, s.ReadWrite); !slices.Equal(got, []string{".vscode"}) {
		t.Errorf("read-write %v", got)
	}
	ro := rels(proj, s.ReadOnly)
	if !slices.Contains(ro, ".vscode/tasks.json") || !slices.Contains(ro, ".vscode/settings.json") {
		t.Errorf("read-only %v", ro)
	}
	if !slices.Contains(rels(proj, s.Placeholders), ".vscode/tasks.json") {
		t.Errorf("placeholders %v", s.Placeholders)
	}
}

// A symbolic link cannot be protected by a bind: the call is told.
func TestShieldSymlinkWarns(t *testing.T) {
	home, proj := newHome(t)
	os.Mkdir(filepath.Join(home, "shared-codex"), 0o755)
	os.Symlink("../shared-codex", filepath.Join(proj, ".codex"))
	s, err := Writable(proj, home, nil)
	defer s.Release()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], ".codex is a symbolic link") {
		t.Errorf("warnings %v", s.Warnings)
	}
}

// A workspace in a deny-listed or host configuration directory, or above
// the home, is refused; one that contains deny-listed paths gets them
// masked (existing) or held by placeholders (missing).
func TestShieldWorkspaceChecks(t *testing.T) {
	home, _ := newHome(t)
	for _, d := range []string{".config/gh", ".config/contextd", ".claude/projects", ".ssh", ".config/nvim", ".local/bin", "dotfiles/gh"} {
		os.MkdirAll(filepath.Join(home, d), 0o755)
	}
	os.WriteFile(filepath.Join(home, "dotfiles/gh/hosts.yml"), []byte("token"), 0o600)
	for _, ws := range []string{".config", ".config/gh", ".config/contextd", ".claude", ".claude/projects", ".ssh", ".config/nvim", ".local/bin", "."} {
		s, err := Writable(filepath.Join(home, ws), home, nil)
		s.Release()
		if !errors.Is(err, catalog.ErrPolicy) {
			t.Errorf("workspace ~/%s: %v, want refused", ws, err)
		}
	}
	// XDG_CONFIG_HOME moved: the deny-list and the refusal follow it, and
	// the default place stays refused.
	os.MkdirAll(filepath.Join(home, "cfg/gh"), 0o755)
	for _, ws := range []string{"cfg", "cfg/gh", ".config"} {
		s, err := Writable(filepath.Join(home, ws), home, map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "cfg")})
		s.Release()
		if !errors.Is(err, catalog.ErrPolicy) {
			t.Errorf("workspace ~/%s with XDG_CONFIG_HOME=~/cfg: %v, want refused", ws, err)
		}
	}
	// ~/dotfiles holds gh's real directory (~/.config/gh is a link to it).
	os.RemoveAll(filepath.Join(home, ".config/gh"))
	os.Symlink("../dotfiles/gh", filepath.Join(home, ".config/gh"))
	dot := filepath.Join(home, "dotfiles")
	s, err := Writable(dot, home, nil)
	defer s.Release()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Masks, filepath.Join(dot, "gh")) {
		t.Errorf("masks %v, want %s", s.Masks, filepath.Join(dot, "gh"))
	}
}

// A daemon that died holding placeholders leaves them; the next one
// removes those still as it made them, and nothing else.
func TestCleanPlaceholders(t *testing.T) {
	home, proj := newHome(t)
	record := filepath.Join(t.TempDir(), "placeholders")
	CleanPlaceholders(record)
	t.Cleanup(func() { placeholders.record = "" })
	s, err := Writable(proj, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(proj, ".gemini/settings.json"), []byte("{}"), 0o644)
	// The daemon dies: its memory goes, the record stays.
	placeholders.mu.Lock()
	placeholders.held = map[string]*placeholder{}
	placeholders.mu.Unlock()
	s.holds = nil
	removed := CleanPlaceholders(record)
	sort.Strings(removed)
	if want := []string{".codex", ".mcp.json", ".opencode", ".vscode", "opencode.json", "opencode.jsonc"}; !slices.Equal(rels(proj, removed), want) {
		t.Errorf("removed %v, want %v", rels(proj, removed), want)
	}
	if _, err := os.Stat(filepath.Join(proj, ".gemini/settings.json")); err != nil {
		t.Errorf("the user's file went: %v", err)
	}
}

// A call's release does not rewrite the record (only the next shield
// does), so the record may list placeholders already removed: the next
// daemon reports none of them and leaves alone a directory the user made
// at such a path since.
func TestCleanPlaceholdersStaleRecord(t *testing.T) {
	home, proj := newHome(t)
	record := filepath.Join(t.TempDir(), "placeholders")
	CleanPlaceholders(record)
	t.Cleanup(func() { placeholders.record = "" })
	s, err := Writable(proj, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Release()
	if b, _ := os.ReadFile(record); !strings.Contains(string(b), filepath.Join(proj, ".codex")) {
		t.Fatalf("the record %q does not list the released placeholders: this test needs a stale one", b)
	}
	if _, err := os.Lstat(filepath.Join(proj, ".codex")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("release left .codex: %v", err)
	}
	if err := os.Mkdir(filepath.Join(proj, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if removed := CleanPlaceholders(record); len(removed) != 0 {
		t.Errorf("removed %v after a clean release, want nothing", rels(proj, removed))
	}
	if _, err := os.Stat(filepath.Join(proj, ".vscode")); err != nil {
		t.Errorf("the user's .vscode went: %v", err)
	}
}

// FuzzRecordLine: a line of the placeholder record is read strictly; what
// it accepts names an absolute clean path and prints back as it was read.
func FuzzRecordLine(f *testing.F) {
	for _, s := range []string{"2049 1234 1700000000123456789 /home/u/proj/.codex", "1 2 3 relative", "1 2 3 /a/../b", "x y z /a", "", "1 2 3 /a b c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		id, p, ok := parseRecordLine(line)
		if !ok {
			return
		}
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			t.Fatalf("accepted path %q", p)
		}
		if again, q, ok2 := parseRecordLine(strings.Join([]string{
			strconv.FormatUint(id.dev, 10), strconv.FormatUint(id.ino, 10), strconv.FormatInt(id.ctime, 10), p}, " ")); !ok2 || again != id || q != p {
			t.Fatalf("%q does not read back", line)
		}
	})
}

// Nested host-run configuration: what exists is found (not inside .git or
// node_modules, not the top level's, which the shield covers); after a
// call, what changed since it started is set aside under a name no agent
// reads, and what did not change stays.
func TestNestedSetAside(t *testing.T) {
	_, proj := newHome(t)
	for _, d := range []string{"a/.claude", "a/b/.vscode", "node_modules/x/.claude", ".git/.claude", "c"} {
		os.MkdirAll(filepath.Join(proj, d), 0o755)
	}
	os.WriteFile(filepath.Join(proj, "a/.claude/settings.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(proj, "a/b/.vscode/launch.json"), []byte("{}"), 0o644)
	sc := ScanNested(proj)
	found, complete := sc.Found, sc.Complete
	if !complete || !slices.Equal(found, []string{"a/.claude"}) {
		t.Fatalf("found %v (complete %v)", found, complete)
	}
	// Nothing changed since the walk: nothing is set aside.
	if got := SetAside(ScanNested(proj), time.Now().Add(time.Second), nil); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	// The "call": plants in a known directory (c), in a .vscode that was
	// there, in a directory moved in from elsewhere, and a change below
	// an existing one (a/.claude, not shielded here).
	before := ScanNested(proj)
	time.Sleep(2 * ctimeMargin) // what the walk saw is older than the call
	start := time.Now()
	os.WriteFile(filepath.Join(proj, "a/b/.vscode/tasks.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(proj, "c/opencode.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(proj, "a/.claude/hooks.sh"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(proj, "newdir/d/.codex"), 0o755)
	os.WriteFile(filepath.Join(proj, "newdir/d/.codex/config.toml"), []byte("x"), 0o644)
	os.Rename(filepath.Join(proj, "newdir"), filepath.Join(proj, "c/moved"))
	got := SetAside(before, start, nil)
	if len(got) != 4 {
		t.Fatalf("set aside: %v", got)
	}
	for _, rel := range []string{"a/b/.vscode/tasks.json", "c/opencode.json", "a/.claude", "c/moved/d/.codex"} {
		if _, err := os.Lstat(filepath.Join(proj, rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still in place", rel)
		}
		m, _ := filepath.Glob(filepath.Join(proj, rel) + setAsideTag + "*")
		if len(m) != 1 {
			t.Errorf("%s: set aside as %v", rel, m)
		}
	}
	if found := ScanNested(proj).Found; len(found) != 0 {
		t.Errorf("still found after setting aside: %v", found)
	}
}

// benchWorkspace is a project of 2,000 directories (a mid-sized
// repository), set up for Claude only.
func benchWorkspace(b *testing.B) (home, proj string) {
	home, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	proj = filepath.Join(home, "proj")
	os.MkdirAll(filepath.Join(proj, ".claude/tools"), 0o755)
	for i := 0; i < 40; i++ {
		for j := 0; j < 50; j++ {
			d := filepath.Join(proj, "pkg"+strconv.Itoa(i), "sub"+strconv.Itoa(j))
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "f.go"), []byte("package x\n"), 0o644)
		}
	}
	return home, proj
}

// BenchmarkShieldBash is what safe_bash does per call for this issue's
// protections, beside BenchmarkProtectedOnly, what it did before (the
// read-only list of what exists): shield, nested scan, release, and the
// scan after the call.
func BenchmarkShieldBash(b *testing.B) {
	home, proj := benchWorkspace(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Writable(proj, home, nil)
		if err != nil {
			b.Fatal(err)
		}
		scan := ScanNested(proj)
		for _, rel := range scan.Found {
			s.Nested(proj, rel)
		}
		start := time.Now() // as safe_bash: the sandbox starts here
		SetAside(scan, start, s.ReadOnly)
		s.Release()
	}
}

// BenchmarkShieldRead is safe_read's share: no placeholder, no scan.
func BenchmarkShieldRead(b *testing.B) {
	home, proj := benchWorkspace(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := ForReading(proj, home, nil)
		if err != nil {
			b.Fatal(err)
		}
		s.Release()
	}
}

func BenchmarkProtectedOnly(b *testing.B) {
	_, proj := benchWorkspace(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		protected(proj)
	}
}

// BenchmarkNestedScan is the walk before a safe_bash call in a workspace of
// 2,000 directories, with the index of the walks before it against reading
// every directory again (the index emptied: what each call did before
// dirIndex), alternated in one loop; it reports the ratio.
func BenchmarkNestedScan(b *testing.B) {
	_, proj := benchWorkspace(b)
	ScanNested(proj)            // the index as the call before left it
	time.Sleep(2 * ctimeMargin) // the workspace's directories have aged
	var warm, cold time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		a := ScanNested(proj)
		t1 := time.Now()
		dirIndex.mu.Lock()
		delete(dirIndex.roots, proj)
		dirIndex.mu.Unlock()
		c := ScanNested(proj)
		t2 := time.Now()
		warm, cold = warm+t1.Sub(t0), cold+t2.Sub(t1)
		if len(a.dirs) != len(c.dirs) || len(a.Found) != len(c.Found) {
			b.Fatalf("the index walked %d dirs and found %v, reading all %d and %v", len(a.dirs), a.Found, len(c.dirs), c.Found)
		}
	}
	b.ReportMetric(float64(warm.Microseconds())/float64(b.N)/1000, "indexed-ms")
	b.ReportMetric(float64(cold.Microseconds())/float64(b.N)/1000, "read-all-ms")
	b.ReportMetric(float64(cold)/float64(warm), "speedup")
}

// A file placeholder holds "{}", an empty configuration only in JSON: a
// host-run file entry of another format needs its own placeholder.
func TestFilePlaceholdersAreJSON(t *testing.T) {
	for _, h := range workspace.HostRunPaths() {
		if !h.Dir && !strings.HasSuffix(h.Path, ".json") && !strings.HasSuffix(h.Path, ".jsonc") {
			t.Errorf("%s is a host-run file that is not JSON: its placeholder %q would not be an empty configuration", h.Path, filePlaceholder)
		}
	}
}
