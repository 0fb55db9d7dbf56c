package install_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/install"
	"github.com/contextd/contextd/toolspec"
)

// setup returns a tool directory (not yet created) and an absolute proxy path.
func setup(t *testing.T) (dir, proxyBin string) {
	t.Helper()
	base := t.TempDir()
	proxyBin = filepath.Join(base, "bin", "contextd-proxy")
	if err := os.MkdirAll(filepath.Dir(proxyBin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proxyBin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(base, "proj", ".claude", "tools"), proxyBin
}

func actions(rep *install.Report) map[string]string {
	m := map[string]string{}
	for _, a := range rep.Actions {
		m[a.Path] = a.What
	}
	return m
}

// checkInstalled verifies every tool is in place and points at proxyBin, except
// the paths in skip.
func checkInstalled(t *testing.T, dir, proxyBin string, skip ...string) {
	t.Helper()
	for _, s := range toolspec.All() {
		link := filepath.Join(s.Name, s.Name)
		if !slices.Contains(skip, link) {
			got, err := os.Readlink(filepath.Join(dir, link))
			if err != nil || got != proxyBin {
				t.Errorf("%s -> %q (%v), want %s", link, got, err, proxyBin)
			}
		}
		for name, want := range map[string][]byte{"schema.json": s.Schema, "TOOL.md": s.Doc} {
			rel := filepath.Join(s.Name, name)
			if slices.Contains(skip, rel) {
				continue
			}
			got, err := os.ReadFile(filepath.Join(dir, rel))
			if err != nil || string(got) != string(want) {
				t.Errorf("%s differs from the embedded spec (%v)", rel, err)
			}
		}
	}
}

// listActions renders a report's actions as "path: what", sorted.
func listActions(rep *install.Report) []string {
	var out []string
	for _, a := range rep.Actions {
		out = append(out, a.Path+": "+a.What)
	}
	slices.Sort(out)
	return out
}

// treeState renders everything under root that a write would change: for
// each entry its type and permissions, inode, size, modification and change
// times, and a file's contents (hashed) or a link's target. Writing a file
// again, even with the same bytes, gives it a new inode (install replaces
// files by rename) and its directory a new mtime.
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		what := fmt.Sprintf("%v ino %d size %d mtime %d.%09d ctime %d.%09d", fi.Mode(), st.Ino, st.Size,
			st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			what += " sha256 " + hex.EncodeToString(h[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			what += " -> " + target
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = what
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The first install creates the three files of every tool and the manifest;
// every later one reports each of them unchanged and writes nothing at all.
func TestInstallFreshAndIdempotent(t *testing.T) {
	dir, bin := setup(t)
	var created, unchanged []string
	for _, s := range toolspec.All() {
		for _, name := range []string{s.Name, "schema.json", "TOOL.md"} {
			created = append(created, filepath.Join(s.Name, name)+": created")
			unchanged = append(unchanged, filepath.Join(s.Name, name)+": unchanged")
		}
	}
	slices.Sort(created)
	slices.Sort(unchanged)
	if len(created) == 0 {
		t.Fatal("toolspec.All() lists no tool")
	}

	rep, err := install.Install(dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dir != dir || len(rep.Conflicts) != 0 {
		t.Errorf("report %+v", rep)
	}
	if got := listActions(rep); !slices.Equal(got, created) {
		t.Errorf("first install did\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(created, "\n"))
	}
	checkInstalled(t, dir, bin)
	if _, err := os.Stat(filepath.Join(dir, install.ManifestName)); err != nil {
		t.Errorf("no manifest: %v", err)
	}
	want := treeState(t, dir)
	if n := len(want); n != 1+len(toolspec.All())*4+1 {
		// dir, and per tool its directory and three files, and the manifest
		t.Errorf("after the first install %s holds %d entries: %v", dir, n, want)
	}

	for i := 1; i <= 2; i++ {
		rep, err := install.Install(dir, bin)
		if err != nil {
			t.Fatalf("reinstall %d: %v", i, err)
		}
		if rep.Dir != dir || len(rep.Conflicts) != 0 {
			t.Errorf("reinstall %d: report %+v", i, rep)
		}
		if got := listActions(rep); !slices.Equal(got, unchanged) {
			t.Errorf("reinstall %d did\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(unchanged, "\n"))
		}
		got := treeState(t, dir)
		for _, p := range slices.Sorted(maps.Keys(want)) {
			if got[p] != want[p] {
				t.Errorf("reinstall %d changed %s:\n  was %s\n  now %s", i, p, want[p], got[p])
			}
		}
		for _, p := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[p]; !ok {
				t.Errorf("reinstall %d left %s behind: %s", i, p, got[p])
			}
		}
	}
}

func TestInstallNeverClobbersUserFiles(t *testing.T) {
	dir, bin := setup(t)
	mine := []byte(`{"my": "own schema"}`)
	if err := os.MkdirAll(filepath.Join(dir, "safe_read"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "safe_read", "schema.json"), mine, 0o600); err != nil {
		t.Fatal(err)
	}
	userTool := []byte("#!/bin/sh\necho my own safe_bash\n")
	if err := os.MkdirAll(filepath.Join(dir, "safe_bash"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "safe_bash", "safe_bash"), userTool, 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory where TOOL.md goes, and a user's own symlink where a tool goes.
	if err := os.MkdirAll(filepath.Join(dir, "safe_write", "TOOL.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/true", filepath.Join(dir, "safe_write", "safe_write")); err != nil {
		t.Fatal(err)
	}

	conflicts := []string{"safe_bash/safe_bash", "safe_read/schema.json", "safe_write/TOOL.md", "safe_write/safe_write"}
	for round := 0; round < 2; round++ {
		rep, err := install.Install(dir, bin)
		if !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("round %d: error %v, want %s", round, err, catalog.ErrConflict.Code)
		}
		slices.Sort(rep.Conflicts)
		if !slices.Equal(rep.Conflicts, conflicts) {
			t.Errorf("round %d: conflicts %v, want %v", round, rep.Conflicts, conflicts)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "safe_read", "schema.json")); string(got) != string(mine) {
			t.Errorf("user schema.json overwritten: %q", got)
		}
		if fi, _ := os.Stat(filepath.Join(dir, "safe_read", "schema.json")); fi.Mode().Perm() != 0o600 {
			t.Errorf("user schema.json mode changed to %v", fi.Mode())
		}
		fi, err := os.Lstat(filepath.Join(dir, "safe_bash", "safe_bash"))
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("user's safe_bash replaced: %v %v", fi, err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "safe_bash", "safe_bash")); string(got) != string(userTool) {
			t.Errorf("user's safe_bash changed: %q", got)
		}
		if fi, err := os.Lstat(filepath.Join(dir, "safe_write", "TOOL.md")); err != nil || !fi.IsDir() {
			t.Errorf("user's TOOL.md directory replaced")
		}
		if got, _ := os.Readlink(filepath.Join(dir, "safe_write", "safe_write")); got != "/usr/bin/true" {
			t.Errorf("user's symlink retargeted to %q", got)
		}
		// Everything else was installed.
		checkInstalled(t, dir, bin, conflicts...)
	}
}

func TestInstallUpdatesItsOwnFiles(t *testing.T) {
	dir, bin := setup(t)
	if _, err := install.Install(dir, bin); err != nil {
		t.Fatal(err)
	}
	// An older contextd wrote these: the manifest records what it wrote, and the
	// file still matches it. Simulate by rewriting the manifest for an older file.
	old := []byte("old TOOL.md from an older contextd\n")
	p := filepath.Join(dir, "safe_read", "TOOL.md")
	if err := os.WriteFile(p, old, 0o644); err != nil {
		t.Fatal(err)
	}
	rewriteManifest(t, dir, "safe_read/TOOL.md", old)

	rep, err := install.Install(dir, bin)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if got := actions(rep)["safe_read/TOOL.md"]; got != "updated" {
		t.Errorf("safe_read/TOOL.md: %q, want updated", got)
	}
	checkInstalled(t, dir, bin)
}

func TestInstallRespectsUserEdit(t *testing.T) {
	dir, bin := setup(t)
	if _, err := install.Install(dir, bin); err != nil {
		t.Fatal(err)
	}
	edited := []byte("# my notes on safe_bash\n")
	p := filepath.Join(dir, "safe_bash", "TOOL.md")
	if err := os.WriteFile(p, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		rep, err := install.Install(dir, bin)
		if !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("round %d: %v, want %s", round, err, catalog.ErrConflict.Code)
		}
		if !slices.Equal(rep.Conflicts, []string{"safe_bash/TOOL.md"}) {
			t.Errorf("conflicts %v", rep.Conflicts)
		}
		if got, _ := os.ReadFile(p); string(got) != string(edited) {
			t.Fatalf("user edit overwritten: %q", got)
		}
		checkInstalled(t, dir, bin, "safe_bash/TOOL.md")
	}
	// Once the user removes the file, install puts it back.
	os.Remove(p)
	if _, err := install.Install(dir, bin); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, bin)
}

func TestInstallRetargetsItsOwnSymlink(t *testing.T) {
	dir, bin := setup(t)
	if _, err := install.Install(dir, bin); err != nil {
		t.Fatal(err)
	}
	newBin := filepath.Join(filepath.Dir(bin), "contextd-proxy-2")
	if err := os.WriteFile(newBin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := install.Install(dir, newBin)
	if err != nil {
		t.Fatal(err)
	}
	acts := actions(rep)
	for _, s := range toolspec.All() {
		if got := acts[s.Name+"/"+s.Name]; got != "updated" {
			t.Errorf("%s link: %q, want updated", s.Name, got)
		}
		if got := acts[s.Name+"/schema.json"]; got != "unchanged" {
			t.Errorf("%s schema: %q, want unchanged", s.Name, got)
		}
	}
	checkInstalled(t, dir, newBin)
	ents, _ := os.ReadDir(filepath.Join(dir, "safe_bash"))
	if len(ents) != 3 {
		t.Errorf("safe_bash holds %d entries after the update", len(ents))
	}
	// And back again: the manifest now records the new target.
	if _, err := install.Install(dir, bin); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, bin)

	// A link the user retargeted is theirs.
	if err := os.Remove(filepath.Join(dir, "safe_read", "safe_read")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/true", filepath.Join(dir, "safe_read", "safe_read")); err != nil {
		t.Fatal(err)
	}
	_, err = install.Install(dir, newBin)
	if !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("user-retargeted link: %v, want %s", err, catalog.ErrConflict.Code)
	}
	if got, _ := os.Readlink(filepath.Join(dir, "safe_read", "safe_read")); got != "/usr/bin/true" {
		t.Errorf("user link retargeted to %q", got)
	}
}

func TestInstallDamagedManifestTrustsNothing(t *testing.T) {
	dir, bin := setup(t)
	if _, err := install.Install(dir, bin); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "safe_write", "schema.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, install.ManifestName), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := install.Install(dir, bin)
	if !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("%v, want %s", err, catalog.ErrConflict.Code)
	}
	if got, _ := os.ReadFile(p); string(got) != "{}" {
		t.Errorf("file overwritten with a damaged manifest: %q", got)
	}
}

func TestInstallRelativeProxyRefused(t *testing.T) {
	dir, _ := setup(t)
	if _, err := install.Install(dir, "bin/contextd-proxy"); !errors.Is(err, catalog.ErrInternal) {
		t.Fatalf("relative proxy path: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory created for a refused install")
	}
}

// rewriteManifest records content as what install wrote at rel, as an older
// contextd with a different embedded file would have.
func rewriteManifest(t *testing.T, dir, rel string, content []byte) {
	t.Helper()
	p := filepath.Join(dir, install.ManifestName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version int               `json:"version"`
		Files   map[string]string `json:"files"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Files[rel]; !ok {
		t.Fatalf("manifest does not list %s: %v", rel, m.Files)
	}
	sum := sha256.Sum256(content)
	m.Files[rel] = "sha256:" + hex.EncodeToString(sum[:])
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
