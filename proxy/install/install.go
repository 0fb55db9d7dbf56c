// Package install writes the tools into an agent's tool directory: for each tool
// DIR/<tool>/<tool> (a symlink to the proxy binary), schema.json and TOOL.md. It is
// idempotent and never overwrites a file it did not write: a manifest records the
// checksum of everything it wrote, and only files that still match are updated.
package install

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolspec"
)

// ManifestName is the file in DIR that lists what install wrote.
const ManifestName = ".contextd-install.json"

// DefaultDir is where tools go when no directory is given.
const DefaultDir = ".claude/tools"

// manifest maps a path relative to DIR to what install wrote there: "link:TARGET"
// for a symlink, "sha256:HEX" for a file.
type manifest struct {
	Version int               `json:"version"`
	Files   map[string]string `json:"files"`
}

// Action is one thing install did or refused to do.
type Action struct {
	Path string // relative to DIR
	What string // "created", "updated", "unchanged", "kept (not ours)"
}

// Report is the outcome of Install.
type Report struct {
	Dir       string
	Actions   []Action
	Conflicts []string // paths left alone because the user owns them
}

// Install writes every tool into dir, pointing the symlinks at proxy (an absolute
// path). Files that exist and were not written by install (or were changed since)
// are left alone and listed in Conflicts; the error then wraps ErrConflict, after
// everything else was installed.
func Install(dir, proxy string) (*Report, error) {
	if !filepath.IsAbs(proxy) {
		return nil, fmt.Errorf("proxy path %q is not absolute: %w", proxy, catalog.ErrInternal)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %v: %w", dir, err, catalog.ErrIO)
	}
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	rep := &Report{Dir: dir}
	for _, spec := range toolspec.All() {
		if err := os.MkdirAll(filepath.Join(dir, spec.Name), 0o755); err != nil {
			return rep, fmt.Errorf("create %s: %v: %w", filepath.Join(dir, spec.Name), err, catalog.ErrIO)
		}
		items := []struct {
			rel  string
			link string
			data []byte
		}{
			{rel: filepath.Join(spec.Name, spec.Name), link: proxy},
			{rel: filepath.Join(spec.Name, "schema.json"), data: spec.Schema},
			{rel: filepath.Join(spec.Name, "TOOL.md"), data: spec.Doc},
		}
		for _, it := range items {
			var act Action
			var err error
			if it.link != "" {
				act, err = placeLink(dir, it.rel, it.link, m)
			} else {
				act, err = placeFile(dir, it.rel, it.data, m)
			}
			if errors.Is(err, catalog.ErrConflict) {
				rep.Conflicts = append(rep.Conflicts, it.rel)
				rep.Actions = append(rep.Actions, Action{it.rel, "kept (not written by contextd)"})
				continue
			}
			if err != nil {
				writeManifest(dir, m)
				return rep, err
			}
			rep.Actions = append(rep.Actions, act)
		}
	}
	if err := writeManifest(dir, m); err != nil {
		return rep, err
	}
	if len(rep.Conflicts) > 0 {
		return rep, fmt.Errorf("left %d file(s) in %s alone: %s: %w", len(rep.Conflicts), dir, strings.Join(rep.Conflicts, ", "), catalog.ErrConflict)
	}
	return rep, nil
}

func placeLink(dir, rel, target string, m *manifest) (Action, error) {
	p := filepath.Join(dir, rel)
	want := "link:" + target
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Symlink(target, p); err != nil {
			return Action{}, fmt.Errorf("symlink %s: %v: %w", p, err, catalog.ErrIO)
		}
		m.Files[rel] = want
		return Action{rel, "created"}, nil
	case err != nil:
		return Action{}, fmt.Errorf("stat %s: %v: %w", p, err, catalog.ErrIO)
	case fi.Mode()&os.ModeSymlink == 0:
		return Action{}, catalog.ErrConflict
	}
	cur, err := os.Readlink(p)
	if err != nil {
		return Action{}, fmt.Errorf("readlink %s: %v: %w", p, err, catalog.ErrIO)
	}
	if cur == target {
		m.Files[rel] = want
		return Action{rel, "unchanged"}, nil
	}
	if m.Files[rel] != "link:"+cur {
		return Action{}, catalog.ErrConflict
	}
	// Ours, pointing at an older proxy: replace it atomically.
	tmp := p + ".contextd-new"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return Action{}, fmt.Errorf("symlink %s: %v: %w", tmp, err, catalog.ErrIO)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return Action{}, fmt.Errorf("rename %s: %v: %w", p, err, catalog.ErrIO)
	}
	m.Files[rel] = want
	return Action{rel, "updated"}, nil
}

func placeFile(dir, rel string, data []byte, m *manifest) (Action, error) {
	p := filepath.Join(dir, rel)
	want := "sha256:" + sum(data)
	cur, err := os.ReadFile(p)
	what := "created"
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		// A directory or an unreadable file where ours should be: not ours.
		if fi, serr := os.Lstat(p); serr == nil && !fi.Mode().IsRegular() {
			return Action{}, catalog.ErrConflict
		}
		return Action{}, fmt.Errorf("read %s: %v: %w", p, err, catalog.ErrIO)
	case "sha256:"+sum(cur) == want:
		m.Files[rel] = want
		return Action{rel, "unchanged"}, nil
	case m.Files[rel] != "sha256:"+sum(cur):
		return Action{}, catalog.ErrConflict
	default:
		what = "updated"
	}
	tmp := p + ".contextd-new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return Action{}, fmt.Errorf("write %s: %v: %w", tmp, err, catalog.ErrIO)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return Action{}, fmt.Errorf("rename %s: %v: %w", p, err, catalog.ErrIO)
	}
	m.Files[rel] = want
	return Action{rel, what}, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readManifest(dir string) (*manifest, error) {
	m := &manifest{Version: 1, Files: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %v: %w", ManifestName, err, catalog.ErrIO)
	}
	if err := json.Unmarshal(b, m); err != nil || m.Files == nil {
		// A damaged manifest proves nothing was ours: treat every file as the user's.
		return &manifest{Version: 1, Files: map[string]string{}}, nil
	}
	return m, nil
}

func writeManifest(dir string, m *manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %v: %w", err, catalog.ErrInternal)
	}
	p := filepath.Join(dir, ManifestName)
	if cur, err := os.ReadFile(p); err == nil && string(cur) == string(b)+"\n" {
		return nil // unchanged: a re-run leaves it alone
	}
	if err := os.WriteFile(p+".new", append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %v: %w", p, err, catalog.ErrIO)
	}
	if err := os.Rename(p+".new", p); err != nil {
		return fmt.Errorf("rename %s: %v: %w", p, err, catalog.ErrIO)
	}
	return nil
}
