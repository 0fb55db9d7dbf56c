package scrubbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
	"github.com/zricethezav/gitleaks/v8/sources"
)

// gitleaks in process: its library detector with the default rules, set up as `gitleaks
// stdin` sets it up (decoding five deep), on the fragments `gitleaks stdin` cuts its input
// into (about 100 kB, ended at a blank line when one comes soon). Building the detector
// compiles every rule's regex, so the timed runs are warm, as contextd's are.

// glFinding is the part of a gitleaks finding the comparison needs, from the CLI's JSON
// report or from the library.
type glFinding struct {
	RuleID      string
	StartLine   int
	EndLine     int
	StartColumn int
	EndColumn   int
	Secret      string
	Match       string
	Tags        []string
}

func fromReport(fs []report.Finding) []glFinding {
	out := make([]glFinding, 0, len(fs))
	for _, f := range fs {
		out = append(out, glFinding{f.RuleID, f.StartLine, f.EndLine, f.StartColumn, f.EndColumn, f.Secret, f.Match, f.Tags})
	}
	return out
}

// newGitleaks builds the detector as the CLI does with no config file and its default
// flags.
func newGitleaks() (*detect.Detector, error) {
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		return nil, err
	}
	d.MaxDecodeDepth = 5
	return d, nil
}

// gitleaksFragments cuts text as `gitleaks stdin` does (sources.File), with the line each
// fragment starts on, so that findings have the CLI's line numbers.
func gitleaksFragments(text []byte) ([]detect.Fragment, error) {
	var frags []detect.Fragment
	src := &sources.File{Content: bytes.NewReader(text)}
	err := src.Fragments(context.Background(), func(f sources.Fragment, err error) error {
		if err != nil {
			return err
		}
		// Bytes shares the reader's buffer, which the next fragment reuses; the detector
		// reads Raw.
		f.Bytes = nil
		frags = append(frags, detect.Fragment(f))
		return nil
	})
	return frags, err
}

// detectFragments runs the detector on every fragment with workers goroutines taking
// the next fragment as they finish one (the library is safe for concurrent use: gitleaks
// scans the files of a directory this way), and returns the findings in fragment order.
func detectFragments(d *detect.Detector, frags []detect.Fragment, workers int) []report.Finding {
	per := make([][]report.Finding, len(frags))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(frags) {
					return
				}
				per[i] = d.Detect(frags[i])
			}
		}()
	}
	wg.Wait()
	var out []report.Finding
	for _, fs := range per {
		out = append(out, fs...)
	}
	return out
}

// timeGitleaks times one warm pass over the fragments with workers goroutines.
func timeGitleaks(d *detect.Detector, frags []detect.Fragment, workers int) (time.Duration, []report.Finding) {
	t := time.Now()
	fs := detectFragments(d, frags, workers)
	return time.Since(t), fs
}

func gitleaksPath() (string, error) {
	if p, err := exec.LookPath("gitleaks"); err == nil {
		return p, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "gitleaks")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("the gitleaks CLI is not installed (not in PATH nor in $(go env GOPATH)/bin): " +
		"install it with `go install github.com/zricethezav/gitleaks/v8@<the version go.mod requires>` (make bench does)")
}

// sameFindings compares two sets of gitleaks findings by rule, line and secret, and
// describes the first differences.
func sameFindings(a, b []glFinding) (bool, string) {
	key := func(f glFinding) string { return fmt.Sprintf("%s:%d:%s", f.RuleID, f.StartLine, f.Secret) }
	count := map[string]int{}
	for _, f := range a {
		count[key(f)]++
	}
	for _, f := range b {
		count[key(f)]--
	}
	var diff []string
	for k, n := range count {
		if n != 0 && len(diff) < 10 {
			diff = append(diff, fmt.Sprintf("%s (%+d)", k, n))
		}
	}
	return len(diff) == 0, strings.Join(diff, "; ")
}
