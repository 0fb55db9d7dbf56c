package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/profiles"
	"github.com/contextd/contextd/systemd"
)

// StageOptions says what Stage builds the package tree from.
type StageOptions struct {
	Out      string // the package tree's root; must not exist or be empty
	Upstream string // upstream version, as the binaries report it
	Revision string // Debian revision; "" means "1"
	// BinDir holds the built programs, each packaged as /usr/bin/<name>; it
	// must hold contextd and contextd-proxy.
	BinDir   string
	Describe string    // git describe of the source (changelog); optional
	Time     time.Time // build time (changelog, man pages); zero means now
}

// Paths inside the package, relative to its root.
const (
	binDir           = "usr/bin"
	userUnitDir      = "usr/lib/systemd/user"
	profileDir       = "usr/share/contextd/profiles"
	docDir           = "usr/share/doc/contextd"
	manDir           = "usr/share/man/man1"
	bashCompDir      = "usr/share/bash-completion/completions"
	zshCompDir       = "usr/share/zsh/vendor-completions"
	fishCompDir      = "usr/share/fish/vendor_completions.d"
	installedExec    = "/usr/bin/contextd"
	lintianOverrides = "usr/share/lintian/overrides/contextd"
)

// Maintainer is who the package names as its maintainer.
const Maintainer = "contextd developers <dev@contextd.invalid>"

// Stage writes the package tree: the two binaries (copied), the user units, the
// reference profiles, man pages, completions, copyright and changelog. The
// binaries are checked first: each must report the package's version, and the
// proxy must be static and free of cobra.
func Stage(o *StageOptions) error {
	if err := CheckUpstream(o.Upstream); err != nil {
		return err
	}
	rev := o.Revision
	if rev == "" {
		rev = "1"
	}
	if !upstreamChars.MatchString(rev) {
		return fmt.Errorf("the Debian revision %q must start with a digit and hold only 0-9 A-Z a-z . + ~: %w", rev, catalog.ErrBadInput)
	}
	when := o.Time
	if when.IsZero() {
		when = time.Now()
	}
	when = when.UTC()
	if err := emptyDir(o.Out); err != nil {
		return err
	}
	bins, err := programs(o.BinDir)
	if err != nil {
		return err
	}
	contextd, proxy := filepath.Join(o.BinDir, "contextd"), filepath.Join(o.BinDir, "contextd-proxy")
	if err := checkBinaries(contextd, proxy, o.Upstream); err != nil {
		return err
	}
	w := &tree{root: o.Out}
	for _, b := range bins {
		data, err := os.ReadFile(b)
		if err != nil {
			return fmt.Errorf("read %s: %v: %w", b, err, catalog.ErrIO)
		}
		w.file(filepath.Join(binDir, filepath.Base(b)), data, 0o755)
	}

	units, err := packagedUnits()
	if err != nil {
		return err
	}
	for _, u := range units {
		w.file(filepath.Join(userUnitDir, u.Name), []byte(u.Content), 0o644)
	}

	for _, tool := range profiles.Tools() {
		data, err := profiles.EmbeddedJSON(tool)
		if err != nil {
			return fmt.Errorf("profile %s: %v: %w", tool, err, catalog.ErrInternal)
		}
		w.file(filepath.Join(profileDir, tool+".json"), data, 0o644)
	}

	pages, err := ManPages(o.Upstream, when)
	if err != nil {
		return err
	}
	// A helper program of the proxy (contextd-proxy-mcp, which serves
	// `contextd-proxy mcp`) is documented in contextd-proxy(1).
	for _, b := range bins {
		name := filepath.Base(b)
		switch {
		case name == "contextd" || name == "contextd-proxy":
		case strings.HasPrefix(name, "contextd-proxy-"):
			pages = append(pages, Page{name + ".1", []byte(".so man1/contextd-proxy.1\n")})
		default:
			return fmt.Errorf("%s has no man page: write one in packaging/gen: %w", name, catalog.ErrInternal)
		}
	}
	for _, p := range pages {
		w.gzip(filepath.Join(manDir, p.Name+".gz"), p.Content)
	}

	comps, err := Completions()
	if err != nil {
		return err
	}
	for _, c := range comps {
		dir := map[string]string{"bash": bashCompDir, "zsh": zshCompDir, "fish": fishCompDir}[c.Shell]
		w.file(filepath.Join(dir, c.Name), c.Content, 0o644)
	}

	mods, err := linkedModules(bins...)
	if err != nil {
		return err
	}
	static, err := staticPrograms(bins)
	if err != nil {
		return err
	}
	w.file(lintianOverrides, LintianOverrides(static), 0o644)
	w.file(filepath.Join(docDir, "copyright"), Copyright(when.Year(), mods), 0o644)
	w.gzip(filepath.Join(docDir, "changelog.Debian.gz"), Changelog(o.Upstream+"-"+rev, o.Describe, when))
	return w.err
}

// programs lists the executable regular files in dir, which must include
// contextd and contextd-proxy.
func programs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("binaries: %v: %w", err, catalog.ErrIO)
	}
	var out []string
	have := map[string]bool{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("binaries: %v: %w", err, catalog.ErrIO)
		}
		if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("%s in %s is not an executable file; the directory must hold only the programs to package: %w",
				e.Name(), dir, catalog.ErrBadInput)
		}
		out = append(out, filepath.Join(dir, e.Name()))
		have[e.Name()] = true
	}
	for _, need := range []string{"contextd", "contextd-proxy"} {
		if !have[need] {
			return nil, fmt.Errorf("%s holds no %s: %w", dir, need, catalog.ErrBadInput)
		}
	}
	return out, nil
}

// packagedUnits are the user units with ExecStart at the packaged binary: the
// same source `contextd install-units` writes from, so the two cannot drift.
// The rewrite, and the names the daemon tells the sockets apart by, are
// checked, never assumed.
func packagedUnits() ([]systemd.Unit, error) {
	units := systemd.Units(installedExec)
	want := map[string]string{
		"contextd.service":     "\nExecStart=" + installedExec + " serve\n",
		"contextd.socket":      "\nFileDescriptorName=contextd\n",
		"contextd-http.socket": "\nFileDescriptorName=http\n",
	}
	for _, u := range units {
		if strings.Contains(u.Content, want[u.Name]) {
			delete(want, u.Name)
		}
	}
	for name, line := range want {
		return nil, fmt.Errorf("systemd.Units gave no %s with %q: %w", name, strings.TrimSpace(line), catalog.ErrInternal)
	}
	return units, nil
}

// checkBinaries makes sure the package holds what it says: both binaries
// report its version, and the proxy, which starts on every tool call, is
// static and links no cobra.
func checkBinaries(contextd, proxy, version string) error {
	if err := checkVersion(contextd, []string{"--version"}, "contextd version "+version); err != nil {
		return err
	}
	if err := checkVersion(proxy, []string{"version"}, "contextd-proxy "+version); err != nil {
		return err
	}
	return checkStaticProxy(proxy)
}

// checkVersion runs bin with args and wants exactly the line want.
func checkVersion(bin string, args []string, want string) error {
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %w", bin, strings.Join(args, " "), err, catalog.ErrBadInput)
	}
	if got := strings.TrimSuffix(string(out), "\n"); got != want {
		return fmt.Errorf("%s prints %q, want %q (build it with the Makefile's LDFLAGS and VERSION set to the package's): %w",
			bin, got, want, catalog.ErrBadInput)
	}
	return nil
}

// checkStaticProxy: built without cgo and without cobra.
func checkStaticProxy(proxy string) error {
	info, err := buildinfo.ReadFile(proxy)
	if err != nil {
		return fmt.Errorf("%s: no Go build information: %v: %w", proxy, err, catalog.ErrBadInput)
	}
	static := false
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			static = s.Value == "0"
		}
	}
	if !static {
		return fmt.Errorf("%s was built with cgo; build it with CGO_ENABLED=0 (static): %w", proxy, catalog.ErrBadInput)
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/spf13/cobra" {
			return fmt.Errorf("%s links cobra; the proxy must stay a small static binary: %w", proxy, catalog.ErrBadInput)
		}
	}
	return nil
}

// Module is a Go module statically linked into a packaged binary.
type Module struct{ Path, Version string }

// linkedModules lists the modules linked into the binaries, sorted.
func linkedModules(bins ...string) ([]Module, error) {
	seen := map[Module]bool{}
	for _, b := range bins {
		info, err := buildinfo.ReadFile(b)
		if err != nil {
			return nil, fmt.Errorf("%s: no Go build information: %v: %w", b, err, catalog.ErrBadInput)
		}
		for _, d := range info.Deps {
			m := d
			if d.Replace != nil {
				m = d.Replace
			}
			seen[Module{m.Path, m.Version}] = true
		}
	}
	out := make([]Module, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// staticPrograms are the programs built without cgo (static), by file name.
func staticPrograms(bins []string) ([]string, error) {
	var out []string
	for _, b := range bins {
		info, err := buildinfo.ReadFile(b)
		if err != nil {
			return nil, fmt.Errorf("%s: no Go build information: %v: %w", b, err, catalog.ErrBadInput)
		}
		for _, s := range info.Settings {
			if s.Key == "CGO_ENABLED" && s.Value == "0" {
				out = append(out, filepath.Base(b))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// LintianOverrides says why the package differs from what lintian expects,
// tag by tag.
func LintianOverrides(static []string) []byte {
	var b strings.Builder
	b.WriteString(`# contextd-proxy starts on every tool call an agent makes. Built as a static Go
# program (no cgo) it skips the dynamic loader, a few milliseconds a call; its
# helpers are built the same way. Lintian exempts static Go programs only when
# a source package build-depends on golang-go, and this package is built from
# the repository by nfpm.
`)
	for _, s := range static {
		fmt.Fprintf(&b, "contextd: statically-linked-binary [%s/%s]\n", binDir, s)
	}
	b.WriteString(`# This package is built from the contextd repository and published in its
# own apt repository, not uploaded to Debian: there is no ITP bug to close.
contextd: initial-upload-closes-no-bugs
`)
	return []byte(b.String())
}

// emptyDir makes dir, or accepts it if it exists and is empty: a package tree
// built over an old one could carry files nobody meant to ship.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %v: %w", dir, err, catalog.ErrIO)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %v: %w", dir, err, catalog.ErrIO)
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty; remove it first: %w", dir, catalog.ErrConflict)
	}
	return nil
}

// tree writes files below root and keeps the first error.
type tree struct {
	root string
	err  error
}

func (t *tree) file(rel string, data []byte, mode os.FileMode) {
	if t.err != nil {
		return
	}
	p := filepath.Join(t.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.err = fmt.Errorf("create %s: %v: %w", filepath.Dir(p), err, catalog.ErrIO)
		return
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		t.err = fmt.Errorf("write %s: %v: %w", p, err, catalog.ErrIO)
		return
	}
	// WriteFile's mode is cut by the umask; the package needs it exact.
	if err := os.Chmod(p, mode); err != nil {
		t.err = fmt.Errorf("chmod %s: %v: %w", p, err, catalog.ErrIO)
	}
}

func (t *tree) gzip(rel string, data []byte) {
	t.file(rel, gzipBytes(data), 0o644)
}

// gzipBytes compresses at the best level with no name and no time in the
// header, so the same input always gives the same bytes (reproducible builds;
// Debian policy wants man pages compressed with gzip -9n).
func gzipBytes(data []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}
