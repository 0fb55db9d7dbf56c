package homeview

import (
	"os"
	"path/filepath"
	"slices"
)

// onPath returns the presets of ps one of whose Programs is on the caller's
// PATH: an entry by that name, other than a directory, in an absolute
// directory of PATH that is not on the deny-list. The mode is not checked:
// a program that is not one costs a scrubbed configuration file in the
// view, never a secret.
func (r *resolver) onPath(ps []Preset) []Preset {
	if len(ps) == 0 {
		return nil
	}
	var dirs []string
	for _, dir := range filepath.SplitList(r.h.Env["PATH"]) {
		if !filepath.IsAbs(dir) {
			continue // relative: the workspace, which the agent writes
		}
		dir = filepath.Clean(dir)
		if slices.Contains(dirs, dir) {
			continue
		}
		if d, bad := denied(dir, r.deny); bad && within(dir, d.Path) {
			continue // hidden inside: nothing there runs
		}
		dirs = append(dirs, dir)
	}
	names := programsIn(dirs)
	var out []Preset
	for _, p := range ps {
		if slices.ContainsFunc(p.Programs, func(n string) bool { return names[n] }) {
			out = append(out, p)
		}
	}
	return out
}

// allPrograms are the Programs of every preset, looked up together.
var allPrograms = func() []string {
	var out []string
	for _, p := range Presets {
		out = append(out, p.Programs...)
	}
	return out
}()

// programsIn returns which of allPrograms are in one of dirs: a few dozen
// lstat calls, no directory read.
func programsIn(dirs []string) map[string]bool {
	names := map[string]bool{}
	for _, prog := range allPrograms {
		for _, d := range dirs {
			if fi, err := os.Lstat(filepath.Join(d, prog)); err == nil && !fi.IsDir() {
				names[prog] = true
				break
			}
		}
	}
	return names
}
