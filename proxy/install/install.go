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

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/toolstore"
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
	// Plugins are the plugin tools whose symlink install laid out here
	// (sorted): the proxy takes a name it does not know as a tool only
	// when it is listed here, beside the symlink it was started through.
	Plugins []string `json:"plugins,omitempty"`
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

// Install writes every built-in tool and each of plugins into dir, pointing
// the symlinks at proxy (an absolute path). A plugin tool laid out by an
// earlier install and not among plugins is removed. Files that exist and
// were not written by install (or were changed since) are left alone and
// listed in Conflicts; the error then wraps ErrConflict, after everything
// else was installed.
func Install(dir, proxy string, plugins ...Plugin) (*Report, error) {
	return installTools("", dir, proxy, plugins)
}

// toolsDirAt opens the tools directory: beneath the project root when it lies
// inside the project (a link on its way out of the project is refused),
// else where the user pointed it.
func toolsDirAt(root, dir string, create bool) (*dirAt, error) {
	if root != "" {
		if r, in, err := projectPath(root, dir); err != nil {
			return nil, err
		} else if in {
			return openProjectDir(root, r, create)
		}
	}
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %v: %w", dir, err, catalog.ErrIO)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, dirErr(dir, ".", err)
	}
	return &dirAt{fd: fd, path: dir}, nil
}

// installTools is Install for the project at root ("" for none).
func installTools(root, dir, proxy string, plugins []Plugin) (*Report, error) {
	if !filepath.IsAbs(proxy) {
		return nil, fmt.Errorf("proxy path %q is not absolute: %w", proxy, catalog.ErrInternal)
	}
	d, err := toolsDirAt(root, dir, true)
	if err != nil {
		return nil, err
	}
	defer d.close()
	m, err := readManifest(d)
	if err != nil {
		return nil, err
	}
	rep := &Report{Dir: dir}
	plugins = layable(plugins, rep)
	tools := make([]Plugin, 0, len(toolspec.All())+len(plugins))
	for _, spec := range toolspec.All() {
		tools = append(tools, Plugin{Name: spec.Name, Schema: spec.Schema, Doc: spec.Doc})
	}
	for _, tf := range append(tools, plugins...) {
		if err := placeTool(d, tf, proxy, m, rep); err != nil {
			writeManifest(d, m)
			return rep, err
		}
	}
	if err := m.replacePlugins(d, dir, plugins, rep); err != nil {
		writeManifest(d, m)
		return rep, err
	}
	if err := writeManifest(d, m); err != nil {
		return rep, err
	}
	if len(rep.Conflicts) > 0 {
		return rep, fmt.Errorf("left %d file(s) in %s alone: %s: %w", len(rep.Conflicts), dir, strings.Join(rep.Conflicts, ", "), catalog.ErrConflict)
	}
	return rep, nil
}

// placeTool writes one tool's directory: its symlink to proxy, its
// schema.json and, when it has one, its TOOL.md.
func placeTool(d *dirAt, tf Plugin, proxy string, m *manifest, rep *Report) error {
	sub, err := walkDir(d, tf.Name, true)
	if err != nil {
		return err
	}
	defer sub.close()
	items := []struct {
		name string
		link string
		data []byte
	}{
		{name: tf.Name, link: proxy},
		{name: toolstore.SchemaName, data: tf.Schema},
		{name: toolstore.DocName, data: tf.Doc},
	}
	for _, it := range items {
		if it.link == "" && it.data == nil {
			continue
		}
		rel := filepath.Join(tf.Name, it.name)
		var act Action
		var err error
		if it.link != "" {
			act, err = placeLink(sub, rel, it.name, it.link, m)
		} else {
			act, err = placeFile(sub, rel, it.name, it.data, m)
		}
		if errors.Is(err, catalog.ErrConflict) {
			rep.Conflicts = append(rep.Conflicts, rel)
			rep.Actions = append(rep.Actions, Action{rel, "kept (not written by contextd)"})
			continue
		}
		if err != nil {
			return err
		}
		rep.Actions = append(rep.Actions, act)
	}
	return nil
}

func placeLink(d *dirAt, rel, name, target string, m *manifest) (Action, error) {
	want := "link:" + target
	typ, err := d.lstat(name)
	switch {
	case err != nil:
		return Action{}, err
	case typ == 0:
		if err := d.put(name, nil, target); err != nil {
			return Action{}, err
		}
		m.Files[rel] = want
		return Action{rel, "created"}, nil
	case typ != unix.S_IFLNK:
		return Action{}, catalog.ErrConflict
	}
	cur, err := d.readlink(name)
	if err != nil {
		return Action{}, err
	}
	if cur == target {
		m.Files[rel] = want
		return Action{rel, "unchanged"}, nil
	}
	if m.Files[rel] != "link:"+cur {
		return Action{}, catalog.ErrConflict
	}
	// Ours, pointing at an older proxy: replace it atomically.
	if err := d.put(name, nil, target); err != nil {
		return Action{}, err
	}
	m.Files[rel] = want
	return Action{rel, "updated"}, nil
}

func placeFile(d *dirAt, rel, name string, data []byte, m *manifest) (Action, error) {
	want := "sha256:" + sum(data)
	cur, err := d.readFile(name)
	what := "created"
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, catalog.ErrNotRegular):
		// A directory or a link where ours should be: not ours.
		return Action{}, catalog.ErrConflict
	case err != nil:
		return Action{}, err
	case "sha256:"+sum(cur) == want:
		m.Files[rel] = want
		return Action{rel, "unchanged"}, nil
	case m.Files[rel] != "sha256:"+sum(cur):
		return Action{}, catalog.ErrConflict
	default:
		what = "updated"
	}
	if err := d.put(name, data, ""); err != nil {
		return Action{}, err
	}
	m.Files[rel] = want
	return Action{rel, what}, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readManifest(d *dirAt) (*manifest, error) {
	m := &manifest{Version: 1, Files: map[string]string{}}
	b, err := d.readFile(ManifestName)
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

func writeManifest(d *dirAt, m *manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %v: %w", err, catalog.ErrInternal)
	}
	if cur, err := d.readFile(ManifestName); err == nil && string(cur) == string(b)+"\n" {
		return nil // unchanged: a re-run leaves it alone
	}
	return d.put(ManifestName, append(b, '\n'), "")
}
