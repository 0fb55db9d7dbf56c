// Command scrubstdin scrubs its standard input once and exits: the fresh-process side of
// BenchmarkScrub (package scrubbench), the counterpart of `gitleaks stdin`. It pays what
// a new process pays (start-up, New, the first Find compiling the regexes it needs) and
// nothing the daemon does around a scrub, and it links only package scrub, so its start
// is not that of a larger binary.
//
// The scrubbed text goes to standard output; one line on standard error gives the costs
// measured inside the process and the number of findings:
//
//	scrubstdin new_ns=N find_ns=N bytes=N findings=N
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/contextd/contextd/scrub"
)

func main() {
	in, err := readStdin()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scrubstdin:", err)
		os.Exit(1)
	}
	t := time.Now()
	s, err := scrub.New(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scrubstdin:", err)
		os.Exit(1)
	}
	newDur := time.Since(t)
	t = time.Now()
	fs := s.Find(in)
	findDur := time.Since(t)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	w.Write(scrub.Replace(in, fs, nil))
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "scrubstdin:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "scrubstdin new_ns=%d find_ns=%d bytes=%d findings=%d\n",
		newDur.Nanoseconds(), findDur.Nanoseconds(), len(in), len(fs))
}

// readStdin reads standard input whole, in one buffer of its size when it is a file (as
// in the benchmark) rather than in a buffer grown by copies.
func readStdin() ([]byte, error) {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode().IsRegular() {
		buf := make([]byte, fi.Size())
		n, err := io.ReadFull(os.Stdin, buf)
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, err
		}
		buf = buf[:n]
		// Anything appended since the Stat.
		rest, err := io.ReadAll(os.Stdin)
		return append(buf, rest...), err
	}
	return io.ReadAll(os.Stdin)
}
