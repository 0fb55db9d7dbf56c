package shield

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The index never hides a plant from the walk before the next call: agent
// configuration made in a directory right after a walk read it (in the same
// clock tick, where the directory's change time may not move), in a
// directory renamed over another, or in a directory made where a file was,
// is found by the next walk.
func TestNestedIndexSeesEveryPlant(t *testing.T) {
	_, proj := newHome(t)
	for _, d := range []string{"a/b", "c", "d"} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(proj, "e"), nil, 0o644)
	plants := []struct {
		name  string
		plant func(t *testing.T) string // returns the path the walk must find
	}{
		{"made right after the walk", func(t *testing.T) string {
			mustDo(t, os.MkdirAll(filepath.Join(proj, "a/b/.claude"), 0o755))
			mustDo(t, os.WriteFile(filepath.Join(proj, "a/b/.claude/settings.json"), []byte("{}"), 0o644))
			return "a/b/.claude"
		}},
		{"directory renamed over another", func(t *testing.T) string {
			tmp := filepath.Join(proj, "c.new")
			mustDo(t, os.MkdirAll(filepath.Join(tmp, ".codex"), 0o755))
			mustDo(t, os.RemoveAll(filepath.Join(proj, "c")))
			mustDo(t, os.Rename(tmp, filepath.Join(proj, "c")))
			return "c/.codex"
		}},
		{"file replaced by a directory", func(t *testing.T) string {
			mustDo(t, os.Remove(filepath.Join(proj, "e")))
			mustDo(t, os.MkdirAll(filepath.Join(proj, "e/.vscode"), 0o755))
			mustDo(t, os.WriteFile(filepath.Join(proj, "e/.vscode/tasks.json"), []byte("{}"), 0o644))
			return "e/.vscode/tasks.json"
		}},
		{"deep in an old directory, after the directories aged", func(t *testing.T) string {
			time.Sleep(2 * ctimeMargin)
			ScanNested(proj) // every record now trusted
			mustDo(t, os.WriteFile(filepath.Join(proj, "d/opencode.json"), []byte("{}"), 0o644))
			return "d/opencode.json"
		}},
	}
	for _, p := range plants {
		ScanNested(proj) // the walk of the call before
		want := p.plant(t)
		if got := ScanNested(proj).Found; !slices.Contains(got, want) {
			t.Errorf("%s: the next walk found %v, not %s", p.name, got, want)
		}
	}
}

// The race the index's "racy" rule is for, many times over: a plant made in
// a directory at once after a walk that read it, with no time between, is
// found by the next walk every time. (Kernels since 6.13 stamp a change that
// follows a stat with a fine-grained time on ext4 and others, which closes
// the race by themselves; Debian 12's 6.1 does not.)
func TestNestedIndexRacyPlants(t *testing.T) {
	_, proj := newHome(t)
	for i := 0; i < 200; i++ {
		d := filepath.Join(proj, fmt.Sprintf("d%d", i))
		mustDo(t, os.Mkdir(d, 0o755))
		ScanNested(proj)
		mustDo(t, os.Mkdir(filepath.Join(d, ".gemini"), 0o755))
		if got := ScanNested(proj).Found; !slices.Contains(got, fmt.Sprintf("d%d/.gemini", i)) {
			t.Fatalf("round %d: a plant made right after the walk was not found: %v", i, got)
		}
		mustDo(t, os.Remove(filepath.Join(d, ".gemini")))
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Directories removed from the workspace leave the index with the next whole
// walk: it never holds more than the workspace has.
func TestNestedIndexForgetsRemoved(t *testing.T) {
	_, proj := newHome(t)
	for i := 0; i < 50; i++ {
		mustDo(t, os.MkdirAll(filepath.Join(proj, fmt.Sprintf("gone/d%d", i)), 0o755))
	}
	ScanNested(proj)
	mustDo(t, os.RemoveAll(filepath.Join(proj, "gone")))
	sc := ScanNested(proj)
	dirIndex.mu.Lock()
	n := len(dirIndex.roots[proj].dirs)
	dirIndex.mu.Unlock()
	if n != len(sc.dirs) {
		t.Errorf("the index holds %d directories, the workspace %d", n, len(sc.dirs))
	}
}
