// Package toolfetch is the host's side of `contextd tool install | update | remove`: the fetch and the build each in a sandbox of their own, what came out checked as untrusted, the user's approval, and the commit into the tool store and its lock.
package toolfetch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/plugins/pluginpolicy"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/toolfetch/toolsrc"
	"github.com/contextd/contextd/internal/safeunpack"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
)

// Installer installs, updates and removes plugin tools in a store.
type Installer struct {
	Store  toolstore.Store
	Config *config.Config
	// Runner runs the fetch and the build: the real sandbox
	// (daemon/sandbox); they refuse to go on without namespaces and
	// seccomp.
	Runner runner.Runner
	// Net is the egress proxy for network sources; nil: only local ones
	// can be fetched, and NetErr says why.
	Net    *netview.Setup
	NetErr error
	// Home is the user's home, hidden in both sandboxes.
	Home string
	// Approve is asked when the user must confirm: it is given the
	// sentences to show and returns nil to go on, or an error wrapping
	// catalog.ErrApproval.
	Approve func(name string, perms []string, widened bool) error
	// Log, when set, receives notes for the user.
	Log func(format string, args ...any)
	// Now is the clock of the lock's installed time.
	Now func() time.Time
}

// Request is one install or update.
type Request struct {
	// Source is install's SOURCE; empty for an update, which fetches the
	// locked one.
	Source string
	// Name overrides the manifest's (install --name).
	Name string
	// Checksum is --checksum: the resolved value the fetch must give.
	Checksum string
	// Cwd resolves a relative local source.
	Cwd string
}

// Outcome is what an install or update did.
type Outcome struct {
	Tool *toolstore.Tool
	// Permissions are the approved manifest's sentences.
	Permissions []string
	// Widened are the sentences that needed a new approval (an update).
	Widened []string
	// Unchanged: an update found the same tree, and changed nothing.
	Unchanged bool
}

// staging is one fetch's directory under the store: the tree it fills,
// the scratch of the download, the build's home.
type staging struct {
	dir, tree, work string
}

const stagingDir = ".staging"

func (in *Installer) stage() (*staging, error) {
	var b [8]byte
	rand.Read(b[:])
	root := filepath.Join(in.Store.Root, stagingDir)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	st := &staging{dir: filepath.Join(root, hex.EncodeToString(b[:]))}
	st.tree, st.work = filepath.Join(st.dir, toolstore.TreeDir), filepath.Join(st.dir, "work")
	for _, d := range []string{st.dir, st.tree, st.work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
		}
	}
	return st, nil
}

// Install fetches req.Source, checks it, has it approved, builds and
// commits it. A name already installed from the same source is updated;
// from another source, it is refused.
func (in *Installer) Install(ctx context.Context, req Request) (*Outcome, error) {
	src, err := toolsrc.Parse(req.Source, req.Cwd)
	if err != nil {
		return nil, err
	}
	want := src.Checksum
	if req.Checksum != "" {
		if err := toolsrc.CheckChecksum(req.Checksum); err != nil {
			return nil, err
		}
		if want != "" && want != req.Checksum {
			return nil, fmt.Errorf("--checksum %s and the source's checksum= %s differ: give one: %w", req.Checksum, want, catalog.ErrUsage)
		}
		want = req.Checksum
	}
	return in.install(ctx, src, req.Name, want, nil)
}

// Update fetches the locked source of name again. A pinned source (a git
// ref, an HTTP archive) that resolves to anything but the lock's value is
// refused with catalog.ErrChecksum, unless checksum names the new value.
func (in *Installer) Update(ctx context.Context, name, checksum string) (*Outcome, error) {
	lock, err := in.Store.Load()
	if err != nil {
		return nil, err
	}
	old, err := lock.Get(name)
	if err != nil {
		return nil, err
	}
	if checksum != "" {
		if err := toolsrc.CheckChecksum(checksum); err != nil {
			return nil, err
		}
	}
	src, err := toolsrc.Parse(old.Source, "/")
	if err != nil {
		return nil, fmt.Errorf("tool %s: its locked source: %w", name, err)
	}
	return in.install(ctx, src, name, checksum, old)
}

func (in *Installer) install(ctx context.Context, src *toolsrc.Source, name, want string, old *toolstore.Tool) (out *Outcome, err error) {
	st, err := in.stage()
	if err != nil {
		return nil, err
	}
	defer func() {
		// Whatever happened, nothing of the fetch outlives it but the
		// committed tree (moved out of the staging directory).
		if rerr := toolstore.RemoveTree(st.dir); rerr != nil && err == nil {
			err = rerr
		}
	}()
	res, err := in.fetch(ctx, src, st)
	if err != nil {
		return nil, err
	}
	if res.Resolved == "" {
		sum, err := toolstore.TreeHash(st.tree)
		if err != nil {
			return nil, refusal(err)
		}
		res.Resolved = "tree:" + strings.TrimPrefix(sum, "sha256:")
	}
	if err := checkResolved(src, res.Resolved, want, old); err != nil {
		return nil, err
	}
	staged, err := in.inspect(st.tree, name)
	if err != nil {
		return nil, err
	}
	m := staged.manifest
	if old == nil {
		lock, err := in.Store.Load()
		if err != nil {
			return nil, err
		}
		if t, ok := lock.Tools[m.Name]; ok {
			if t.Source != src.Locked() {
				return nil, fmt.Errorf("tool %s is installed from %s, not %s: run `contextd tool update %s`, or `contextd tool remove %s` first: %w",
					m.Name, t.Source, src.Locked(), m.Name, m.Name, catalog.ErrUsage)
			}
			old = t
		}
	}
	out = &Outcome{Permissions: toolmanifest.Permissions(m)}
	ask, widened := true, false
	if old != nil {
		prev, err := in.Store.Approved(old)
		if err != nil {
			return nil, err
		}
		out.Widened = toolmanifest.Widens(prev, m)
		ask, widened = len(out.Widened) > 0, true
	}
	if ask {
		shown := out.Permissions
		if widened {
			shown = out.Widened
		}
		if err := in.Approve(m.Name, shown, widened); err != nil {
			return nil, err
		}
	}
	if m.Build != nil {
		if err := in.build(ctx, m.Build.Command, st); err != nil {
			return nil, err
		}
		// The build ran the tool's own code: what it left is held to the
		// fetch's bounds too (no link, no special file, no flood).
		lim := safeunpack.Limits{MaxBytes: int64(in.Config.Plugins.FetchMaxBytes), MaxFiles: in.Config.Plugins.FetchMaxFiles}
		if _, err := safeunpack.ScanTree(st.tree, lim); err != nil {
			return nil, fmt.Errorf("after its build: %w", refusal(err))
		}
	}
	t, unchanged, err := in.commit(st, staged, src, res.Resolved, old)
	if err != nil {
		return nil, err
	}
	out.Tool, out.Unchanged = t, unchanged
	return out, nil
}

// checkResolved refuses what the source gave when it is not what was
// asked for (a checksum given) or, for a pinned source, not what the lock
// holds (unless the new value was given).
func checkResolved(src *toolsrc.Source, got, want string, old *toolstore.Tool) error {
	if want != "" && got != want {
		return fmt.Errorf("%s resolved to %s, not the checksum given, %s: %w", src.Locked(), got, want, catalog.ErrChecksum)
	}
	if old != nil && want == "" && src.Pinned() && got != old.Resolved {
		return fmt.Errorf("tool %s: %s resolved to %s, but the lock pins %s; if the change is expected, run `contextd tool update %s --checksum %s`: %w",
			old.Name, src.Locked(), got, old.Resolved, old.Name, got, catalog.ErrChecksum)
	}
	return nil
}

// staged is a fetched tree, checked.
type staged struct {
	manifest *toolmanifest.Manifest
	schema   []byte
	doc      []byte
}

// maxDoc bounds TOOL.md.
const maxDoc = 256 << 10

// inspect checks the fetched tree as untrusted: walked again with the
// fetch's bounds (no link, no special file), its manifest parsed (the name
// overridden by name), checked against [plugins], its egress rules
// compiled, its schema and TOOL.md read through a root no path leaves.
func (in *Installer) inspect(tree, name string) (*staged, error) {
	lim := safeunpack.Limits{MaxBytes: int64(in.Config.Plugins.FetchMaxBytes), MaxFiles: in.Config.Plugins.FetchMaxFiles}
	if _, err := safeunpack.ScanTree(tree, lim); err != nil {
		return nil, refusal(err)
	}
	root, err := os.OpenRoot(tree)
	if err != nil {
		return nil, fmt.Errorf("staged tree: %v: %w", err, catalog.ErrIO)
	}
	defer root.Close()
	data, err := readIn(root.FS(), toolmanifest.FileName, toolmanifest.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("the source has no %s at its root (%v): %w", toolmanifest.FileName, err, catalog.ErrBadInput)
	}
	m, err := toolmanifest.Parse(data)
	if err != nil {
		return nil, err
	}
	if name != "" {
		m.Name = name
	}
	if err := toolstore.CheckName(m.Name); err != nil {
		return nil, err
	}
	if err := pluginpolicy.Of(&in.Config.Plugins).Check(m); err != nil {
		return nil, err
	}
	if _, err := pluginpolicy.CompileEgress(m.Name, m.Permissions.Egress); err != nil {
		return nil, err
	}
	s := &staged{manifest: m}
	if s.schema, err = m.InputSchema(root.FS()); err != nil {
		return nil, err
	}
	if s.doc, err = readIn(root.FS(), m.Doc, maxDoc); err != nil {
		return nil, fmt.Errorf("%s: doc: %q cannot be read (%v): %w", toolmanifest.FileName, m.Doc, err, catalog.ErrBadInput)
	}
	if _, err := root.Stat(m.Run.Command[0]); err != nil {
		if m.Build == nil {
			return nil, fmt.Errorf("%s: run.command: %q is not in the tree and nothing builds it: %w", toolmanifest.FileName, m.Run.Command[0], catalog.ErrBadInput)
		}
	}
	return s, nil
}

// readIn reads a regular file of at most max bytes from fsys.
func readIn(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("over %d bytes", max)
	}
	return data, nil
}

// refusal classes a tree the re-walk refuses as an install refusal.
func refusal(err error) error {
	if errors.Is(err, catalog.ErrPolicy) || errors.Is(err, catalog.ErrBadInput) {
		return fmt.Errorf("%w: %w", catalog.ErrInstallRefused, err)
	}
	return err
}
