package drain

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// slowWriter takes its time over the first write, as a loaded consumer does.
type slowWriter struct {
	buf   bytes.Buffer
	delay time.Duration
	n     int
}

func (s *slowWriter) Write(p []byte) (int, error) {
	if s.n == 0 {
		time.Sleep(s.delay)
	}
	s.n++
	return s.buf.Write(p)
}

// Everything the writer wrote before it exited is read, even when the copy
// spends longer than the grace writing a piece out: the grace counts only
// waiting for data. (With one deadline set at exit, the copy below loses all
// but its first read.)
func TestSlowConsumerLosesNothing(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	want := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB, what a default pipe holds
	if _, err := pw.Write(want); err != nil {
		t.Fatal(err)
	}
	pw.Close() // the writer exited; nothing else holds the write end
	r := New(pr, 20*time.Millisecond)
	r.Ended()
	dst := &slowWriter{delay: 200 * time.Millisecond} // ten graces
	// Small reads: the copy has to come back for the rest after the slow write.
	if _, err := io.CopyBuffer(dst, struct{ io.Reader }{r}, make([]byte, 1024)); err != nil {
		t.Fatalf("copy: %v", err)
	}
	if !bytes.Equal(dst.buf.Bytes(), want) {
		t.Fatalf("read %d of %d bytes", dst.buf.Len(), len(want))
	}
}

// A leftover writer that holds the pipe open and writes nothing more does
// not hold the reader: after the grace it ends with ErrDeadlineExceeded,
// having read what was there.
func TestLeftoverWriterEndsAfterGrace(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close() // held open through the test, as by a leftover process
	pw.Write([]byte("before exit"))
	r := New(pr, 50*time.Millisecond)
	r.Ended()
	got, err := io.ReadAll(r)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadAll ended with %v, want the deadline", err)
	}
	if string(got) != "before exit" {
		t.Fatalf("read %q", got)
	}
}

// Before Ended, the reader blocks as a pipe does: a pause longer than the
// grace while the writer runs ends nothing.
func TestNoDeadlineBeforeEnded(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r := New(pr, time.Millisecond)
	go func() {
		pw.Write([]byte("a"))
		time.Sleep(50 * time.Millisecond)
		pw.Write([]byte("b"))
		pw.Close()
	}()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "ab" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
}

// A leftover writer that keeps writing, more often than the grace, does not
// keep the reader going: beyond what was in the pipe at Ended, it waits
// until the grace after Ended and no longer. (A fresh grace for every read
// would read on until the writer stops, here never.)
func TestSteadyLeftoverWriterEnds(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer pw.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				pw.Write([]byte("tick\n"))
			}
		}
	}()
	r := New(pr, 50*time.Millisecond)
	r.Ended()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, r)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the copy ended with %v, want the deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a steady leftover writer kept the reader going past its grace")
	}
}
