package scrubbench

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/scrub"
)

// freshEnv makes the test binary measure a fresh process instead of running tests (see
// TestMain): the benchmark runs itself again with it, so that New is timed in a new
// process, as in a sandbox.
const freshEnv = "SCRUBBENCH_FRESH"

func TestMain(m *testing.M) {
	if os.Getenv(freshEnv) != "" {
		if err := measureFresh(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// measureFresh prints how long New(nil) and a first Find on a typical small tool output
// take in a process that has not built a Scrubber before.
func measureFresh() error {
	c, err := Generate(8<<10, 7)
	if err != nil {
		return err
	}
	start := time.Now()
	s, err := scrub.New(nil)
	if err != nil {
		return err
	}
	newDur := time.Since(start)
	start = time.Now()
	fs := s.Find(c.Text)
	findDur := time.Since(start)
	fmt.Printf("fresh new_ns=%d find_ns=%d bytes=%d findings=%d\n", newDur.Nanoseconds(), findDur.Nanoseconds(), len(c.Text), len(fs))
	return nil
}

// freshCosts runs the test binary as a fresh process n times and returns the medians.
func freshCosts(n int) (newDur, findDur time.Duration, size int, err error) {
	var news, finds []time.Duration
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), freshEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return 0, 0, 0, fmt.Errorf("fresh process: %w: %s", err, out)
		}
		i := strings.Index(string(out), "fresh ")
		if i < 0 {
			return 0, 0, 0, fmt.Errorf("fresh process: no measurement in %s", out)
		}
		vals := map[string]int64{}
		for _, f := range strings.Fields(strings.SplitN(string(out[i:]), "\n", 2)[0])[1:] {
			k, v, _ := strings.Cut(f, "=")
			vals[k], _ = strconv.ParseInt(v, 10, 64)
		}
		news = append(news, time.Duration(vals["new_ns"]))
		finds = append(finds, time.Duration(vals["find_ns"]))
		size = int(vals["bytes"])
	}
	slices.Sort(news)
	slices.Sort(finds)
	return news[n/2], finds[n/2], size, nil
}
