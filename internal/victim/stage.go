// Package victim is the test binary of a sandbox test acting as the victim:
// re-run as an unprivileged user (under a user manager of its own where the
// test needs one), re-executed inside the sandbox to probe it, and read
// from by a slow caller.
package victim

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Staged is a copy of the running test binary in a directory every user can
// enter (go test keeps the original in a 0700 directory of root's).
type Staged struct {
	Dir string // world-readable directory holding the copy
	Bin string // the copy, mode 0755
	Out string // a directory owned by the user, for the output files
	// Args are the test flags for the copy, output files redirected to Out.
	Args []string

	copies [][2]string // Out file -> where go test expects it
}

// outputFlags name files that go test reads back after the run.
var outputFlags = map[string]bool{
	"test.testlogfile": true, "test.coverprofile": true, "test.cpuprofile": true, "test.memprofile": true,
	"test.blockprofile": true, "test.mutexprofile": true, "test.trace": true,
}

// Stage copies the test binary and rewrites args (normally os.Args[1:]) for a run
// as uid:gid: the output files go test asks for (-test.testlogfile, the
// profiles) go to Out, which the user can write, and Finish copies them back,
// so that test caching and profiles keep working. Call Finish after the run.
func Stage(prefix string, args []string, uid, gid int) (*Staged, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	s := &Staged{Dir: dir, Out: filepath.Join(dir, "out")}
	fail := func(err error) (*Staged, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(s.Out, 0o700); err != nil {
		return fail(err)
	}
	if err := os.Chown(s.Out, uid, gid); err != nil {
		return fail(err)
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	s.Bin = filepath.Join(dir, filepath.Base(self))
	if err := copyFile(self, s.Bin, 0o755); err != nil {
		return fail(fmt.Errorf("copy the test binary: %w", err))
	}
	for _, a := range args {
		name, val, ok := strings.Cut(a, "=")
		if outputFlags[strings.TrimLeft(name, "-")] && ok && filepath.IsAbs(val) {
			tmp := filepath.Join(s.Out, filepath.Base(val))
			s.copies = append(s.copies, [2]string{tmp, val})
			a = name + "=" + tmp
		}
		s.Args = append(s.Args, a)
	}
	return s, nil
}

// Finish copies the output files back and removes the staging directory.
func (s *Staged) Finish() {
	for _, c := range s.copies {
		if _, err := os.Stat(c[0]); err == nil {
			copyFile(c[0], c[1], 0o644)
		}
	}
	os.RemoveAll(s.Dir)
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
