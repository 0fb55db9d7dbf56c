package toolstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// EnabledName is the file, in the user's state directory
// ($XDG_STATE_HOME/contextd), that records which installed tools each
// project enables. It lives outside every project and under the
// credential deny-list, so a sandboxed call can neither read nor forge it.
const EnabledName = "tools-enabled.json"

// Enablement is that file.
type Enablement struct {
	Path string
}

// DefaultEnablement is the file under $XDG_STATE_HOME when that is an
// absolute path, else under ~/.local/state.
func DefaultEnablement() (Enablement, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return Enablement{Path: filepath.Join(d, "contextd", EnabledName)}, nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return Enablement{}, fmt.Errorf("tool enablement: no absolute HOME or XDG_STATE_HOME: %w", catalog.ErrConfig)
	}
	return Enablement{Path: filepath.Join(home, ".local", "state", "contextd", EnabledName)}, nil
}

// Choice is what one project enables: every installed tool, or exactly
// the named ones (none at all when Tools is empty).
type Choice struct {
	All   bool     `json:"all,omitempty"`
	Tools []string `json:"tools,omitempty"`
}

// Enables says whether the choice takes the tool name.
func (c Choice) Enables(name string) bool {
	return c.All || slices.Contains(c.Tools, name)
}

type enabledFile struct {
	Version  int               `json:"version"`
	Projects map[string]Choice `json:"projects"`
}

// Of is root's choice: the one recorded for root or, failing that, for
// its nearest recorded ancestor (a repository made inside a project is
// still that project's). Paths are compared resolved, so a project reached
// through a symbolic link has one choice, whichever way it is named. A
// project install never recorded enables every installed tool, the
// default of `contextd-proxy install`.
func (e Enablement) Of(root string) (Choice, error) {
	f, err := e.read()
	if err != nil {
		return Choice{}, err
	}
	for p := resolved(root); ; p = filepath.Dir(p) {
		if c, ok := f.Projects[p]; ok {
			return c, nil
		}
		if p == filepath.Dir(p) {
			return Choice{All: true}, nil
		}
	}
}

// resolved is root with its symbolic links resolved, or as given when it
// cannot be (then it is also recorded so).
func resolved(root string) string {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		return r
	}
	return filepath.Clean(root)
}

// Set records root's choice; Forget drops it. Both hold an exclusive lock
// beside the file, so two installs of different projects keep each other's.
func (e Enablement) Set(root string, c Choice) error {
	c.Tools = slices.Compact(slices.Sorted(slices.Values(c.Tools)))
	return e.update(func(f *enabledFile) { f.Projects[resolved(root)] = c })
}

// Forget drops root's choice (uninstall).
func (e Enablement) Forget(root string) error {
	if _, err := os.Lstat(e.Path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return e.update(func(f *enabledFile) { delete(f.Projects, resolved(root)) })
}

func (e Enablement) read() (*enabledFile, error) {
	f := &enabledFile{Version: 1, Projects: map[string]Choice{}}
	data, err := readNoFollow(e.Path, 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tool enablement: read %s: %v: %w", e.Path, err, catalog.ErrIO)
	}
	if err := json.Unmarshal(data, f); err != nil || f.Version != 1 {
		return nil, fmt.Errorf("tool enablement: %s is not valid (remove it, then run contextd-proxy install in each project again): %w", e.Path, catalog.ErrConfig)
	}
	if f.Projects == nil {
		f.Projects = map[string]Choice{}
	}
	return f, nil
}

func (e Enablement) update(change func(*enabledFile)) error {
	dir := filepath.Dir(e.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("tool enablement: %v: %w", err, catalog.ErrIO)
	}
	lf, err := os.OpenFile(e.Path+".lock", os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("tool enablement: %v: %w", err, catalog.ErrIO)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("tool enablement: lock: %v: %w", err, catalog.ErrIO)
	}
	f, err := e.read()
	if err != nil {
		return err
	}
	change(f)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("tool enablement: %v: %w", err, catalog.ErrInternal)
	}
	return writeAtomic(e.Path, append(data, '\n'))
}
