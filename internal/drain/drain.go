// Package drain reads a pipe to its end once its writer has exited, with a
// grace for leftover writers that counts only time spent waiting for data.
package drain

import (
	"errors"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Reader reads a pipe's read end. Until Ended it is a plain blocking reader.
// After Ended, a read that finds the pipe empty waits at most grace for more
// (a process the writer left behind may still hold the write end) and then
// ends with os.ErrDeadlineExceeded; bytes already in the pipe are always read,
// however late the reader comes for them.
//
// Why not one deadline set when the writer exits: the copy that reads the
// pipe also writes what it read somewhere (a frame decoder, a scrubber, the
// daemon's socket), and under load that write can take longer than the
// grace. The next read then failed at once on the expired deadline with the
// end of the output still in the pipe, and the call lost it (200 parallel
// calls lost 2-10 of them that way).
type Reader struct {
	f     *os.File
	grace time.Duration
	ended atomic.Bool
}

// New returns a Reader of f, which must be in non-blocking mode as os.Pipe
// makes it (deadlines need the runtime's poller).
func New(f *os.File, grace time.Duration) *Reader { return &Reader{f: f, grace: grace} }

// Ended says that the writer has exited. A read blocked now gets the grace
// from now on; later reads each get it from their own start.
//
// Ended may run concurrently with Read. A read that checked ended just before
// it was set reads without a deadline of its own, and the deadline set here
// covers it.
func (r *Reader) Ended() {
	r.ended.Store(true)
	r.f.SetReadDeadline(time.Now().Add(r.grace))
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	for {
		if r.ended.Load() {
			r.f.SetReadDeadline(time.Now().Add(r.grace))
		}
		n, err := r.f.Read(p)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		// The deadline passed. It may have passed before this read even
		// started (the goroutine was not scheduled in time): only an empty
		// pipe ends the copy.
		if pending(r.f) == 0 {
			return 0, err
		}
	}
}

// pending is the number of bytes in the pipe, or 0 when it cannot tell (then
// the deadline holds, as it did before).
func pending(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
		if err == nil {
			n = v
		}
	})
	return n
}
