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
// After Ended, the bytes that were in the pipe at that moment (what the
// writer wrote before it exited) are always read, however late the reader
// comes for them; beyond them, the reader waits for more (a process the
// writer left behind may still hold the write end) until grace after Ended,
// and then ends with os.ErrDeadlineExceeded.
//
// Why not one deadline set when the writer exits: the copy that reads the
// pipe also writes what it read somewhere (a frame decoder, a scrubber, the
// daemon's socket), and under load that write can take longer than the
// grace. The next read then failed at once on the expired deadline with the
// end of the output still in the pipe, and the call lost it (200 parallel
// calls lost 2-10 of them that way). And why not a fresh grace for every
// read: a leftover writer that writes more often than the grace would keep
// the reader, and the call, going until its timeout.
type Reader struct {
	f     *os.File
	grace time.Duration
	ended atomic.Bool
	end   atomic.Int64 // Ended's time plus grace, in Unix nanoseconds
	owed  atomic.Int64 // bytes in the pipe at Ended not read yet
}

// New returns a Reader of f, which must be in non-blocking mode as os.Pipe
// makes it (deadlines need the runtime's poller).
func New(f *os.File, grace time.Duration) *Reader { return &Reader{f: f, grace: grace} }

// Ended says that the writer has exited. It may run concurrently with Read:
// a read blocked now has an empty pipe, and gets the deadline set here.
func (r *Reader) Ended() {
	end := time.Now().Add(r.grace)
	r.end.Store(end.UnixNano())
	r.owed.Store(int64(pending(r.f)))
	r.ended.Store(true)
	r.f.SetReadDeadline(end)
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if !r.ended.Load() {
		return r.f.Read(p)
	}
	for {
		if r.owed.Load() > 0 {
			// What was there at Ended is there: each read finds it at
			// once, whenever it comes (the grace only covers the owed
			// count having been taken while a read was under way).
			r.f.SetReadDeadline(time.Now().Add(r.grace))
		} else {
			r.f.SetReadDeadline(time.Unix(0, r.end.Load()))
		}
		n, err := r.f.Read(p)
		if n > 0 {
			r.owed.Add(-int64(n))
			return n, err
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		// The deadline passed, possibly before this read started (the
		// goroutine was not scheduled in time). Read on when every writer
		// is gone (what is left is bounded, and ends in EOF), or for owed
		// bytes still in the pipe; otherwise that was the grace.
		n, hup := pipeState(r.f)
		switch {
		case hup:
			r.f.SetReadDeadline(time.Time{})
			n, err := r.f.Read(p)
			r.owed.Add(-int64(n))
			return n, err
		case r.owed.Load() > 0 && n > 0:
		default:
			return 0, err
		}
	}
}

// pending is the number of bytes in the pipe, or 0 when it cannot tell.
func pending(f *os.File) int {
	n, _ := pipeState(f)
	return n
}

// pipeState is the number of bytes in the pipe and whether every writer has
// closed it (POLLHUP); 0 and false when it cannot tell (then the deadline
// holds).
func pipeState(f *os.File) (n int, hup bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil { // FIONREAD
			n = v
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if c, err := unix.Poll(pfd, 0); err == nil && c > 0 {
			hup = pfd[0].Revents&unix.POLLHUP != 0
		}
	})
	return n, hup
}
