package victim

import (
	"bytes"
	"time"
)

// SlowCaller is the far end of a victim's output that stalls on its first
// write, as a daemon busy with many calls does (frame decoding, the
// response pipeline): what the victim wrote before it exited must reach it
// whole all the same.
type SlowCaller struct {
	Stall   time.Duration // how long the first write takes
	buf     bytes.Buffer
	stalled bool
}

func (s *SlowCaller) Write(p []byte) (int, error) {
	if !s.stalled {
		s.stalled = true
		time.Sleep(s.Stall)
	}
	return s.buf.Write(p)
}

// Bytes is all that was written.
func (s *SlowCaller) Bytes() []byte { return s.buf.Bytes() }
