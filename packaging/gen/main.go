// Command gen derives the files of the Debian package from contextd's own
// definitions, so that they cannot drift from the code: the package version
// from git, the user units, man pages and shell completions of both commands,
// the reference copies of the seccomp profiles, copyright and changelog. It is
// run by `make deb` (packaging/build-deb.sh); see packaging/README.md.
//
//	gen version [-C DIR]          print the upstream version for `git describe`
//	gen check-version VERSION     exit 65 unless VERSION is a usable upstream version
//	gen stage -out DIR -version V -revision R -bin DIR [-describe S]
//	                              write the package tree into DIR
//
// It links cobra (for contextd's man pages and completions) and is never part of
// the package: contextd-proxy stays free of cobra, and stage checks that.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "gen:", catalog.Format(err))
		return catalog.ExitCode(err)
	}
	return 0
}

const usageText = `usage: gen version [-C DIR]
       gen check-version VERSION
       gen stage -out DIR -version UPSTREAM [-revision N] -bin DIR [-describe TEXT] [-epoch SECONDS]`

func dispatch(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command; %s: %w", usageText, catalog.ErrUsage)
	}
	fs := flag.NewFlagSet("gen "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	parse := func() error {
		if err := fs.Parse(args[1:]); err != nil {
			return fmt.Errorf("%v; %s: %w", err, usageText, catalog.ErrUsage)
		}
		return nil
	}
	switch args[0] {
	case "version":
		dir := fs.String("C", ".", "repository")
		if err := parse(); err != nil {
			return err
		}
		v, err := gitVersion(ctx, *dir)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, v)
		return nil
	case "check-version":
		if err := parse(); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("check-version takes one version: %w", catalog.ErrUsage)
		}
		return CheckUpstream(fs.Arg(0))
	case "stage":
		var o StageOptions
		var epoch int64
		fs.StringVar(&o.Out, "out", "", "directory to write the package tree into (must not exist or be empty)")
		fs.StringVar(&o.Upstream, "version", "", "upstream version (the binaries' --version)")
		fs.StringVar(&o.Revision, "revision", "1", "Debian revision")
		fs.StringVar(&o.BinDir, "bin", "", "directory of the built programs (contextd, contextd-proxy, ...)")
		fs.StringVar(&o.Describe, "describe", "", "git describe of the source, for the changelog")
		fs.Int64Var(&epoch, "epoch", sourceDateEpoch(), "build time, seconds since 1970 (default $SOURCE_DATE_EPOCH, else now)")
		if err := parse(); err != nil {
			return err
		}
		if o.Out == "" || o.Upstream == "" || o.BinDir == "" {
			return fmt.Errorf("stage needs -out, -version and -bin; %s: %w", usageText, catalog.ErrUsage)
		}
		o.Time = time.Unix(epoch, 0).UTC()
		return Stage(&o)
	}
	return fmt.Errorf("unknown command %q; %s: %w", args[0], usageText, catalog.ErrUsage)
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (reproducible builds), else now.
func sourceDateEpoch() int64 {
	if n, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil && n > 0 {
		return n
	}
	return time.Now().Unix()
}

// gitVersion asks git in dir how the checkout relates to the newest release tag
// and when its commit was made, and turns that into an upstream version.
func gitVersion(ctx context.Context, dir string) (string, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			msg := err.Error()
			if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
				msg = strings.TrimSpace(string(ee.Stderr))
			}
			return "", fmt.Errorf("git %s: %s (set DEB_VERSION to build outside a git checkout): %w",
				strings.Join(args, " "), msg, catalog.ErrConfig)
		}
		return strings.TrimSpace(string(out)), nil
	}
	describe, err := git("describe", "--tags", "--long", "--always", "--dirty", "--abbrev=7", "--match", "v[0-9]*")
	if err != nil {
		return "", err
	}
	ct, err := git("log", "-1", "--format=%ct")
	if err != nil {
		return "", err
	}
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return "", fmt.Errorf("git log: commit time %q: %w", ct, catalog.ErrInternal)
	}
	return DebianVersion(describe, time.Unix(sec, 0))
}
