// Command gencorpus generates the salience corpus (package salcorpus) and
// writes each case's log to OUT/NAME.log, its failure lines to
// OUT/NAME.failure (one a line) and its command to OUT/NAME.cmd.
//
//	gencorpus [-work DIR] [-out DIR] [case...]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/contextd/contextd/e2e/salcorpus"
)

func main() {
	out := flag.String("out", "salcorpus-out", "directory the logs are written to")
	work := flag.String("work", "", "scratch directory the projects are run in (default: a new temporary one, removed after)")
	verbose := flag.Bool("v", false, "tell each step")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *work, *verbose, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, work string, verbose bool, only []string) error {
	if work == "" {
		d, err := os.MkdirTemp("", "salcorpus-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	g := &salcorpus.Generator{}
	if verbose {
		g.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	}
	start := time.Now()
	cases, skipped, err := g.Generate(ctx, work, only...)
	for _, c := range cases {
		files := map[string][]byte{
			c.Name + ".log":     c.Log,
			c.Name + ".cmd":     []byte(c.Command + "\n"),
			c.Name + ".failure": []byte(strings.Join(c.Failure, "\n") + "\n"),
		}
		for name, b := range files {
			if werr := os.WriteFile(filepath.Join(out, name), b, 0o644); werr != nil {
				return werr
			}
		}
		fmt.Printf("%-16s %6d lines %8d bytes exit %d  %s\n", c.Name, bytes.Count(c.Log, []byte("\n")), len(c.Log), c.ExitCode, c.Command)
	}
	for name, why := range skipped {
		fmt.Printf("%-16s skipped: %s\n", name, why)
	}
	fmt.Printf("generated in %s\n", time.Since(start).Round(time.Second))
	return err
}
