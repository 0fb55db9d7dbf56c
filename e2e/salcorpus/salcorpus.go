// Package salcorpus generates a corpus of real failing (and one passing)
// command logs for the salience pass: each case really runs a test suite,
// build, CI-like script or package install with one injected failure, and
// captures its combined output as a terminal-less agent would.
//
// Nothing here is hand-written log text: the logs come from real runs of go,
// mocha (from the npm registry), python3 -m unittest, cargo, make and npm, and
// the failure lines of each case are picked out of its log by pattern after
// the run.
//
// Network: the Go cases download a pinned module (GoModule) and its pinned
// dependencies through the Go module proxy; mocha, ci-script and npm-install
// use the npm registry (mocha through a committed lockfile). unittest and
// cargo need neither.
package salcorpus

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Case is one generated log.
type Case struct {
	// Name is one of Names.
	Name string
	// Log is the combined stdout+stderr of the real run, as a terminal-less
	// agent would capture it (colours turned off the way each tool wants).
	Log []byte
	// Command is what was run (by bash -c, in Dir), for the report.
	Command string
	// Dir is where the command ran (under the scratch directory).
	Dir string
	// Failure holds substrings of lines that must be shown on a first page:
	// the injected failure's identifying line(s), picked from Log by pattern.
	Failure []string
	// Passing is true for a passing run (go-pass-verbose); Failure is empty.
	Passing bool
	// ExitCode is the command's exit status.
	ExitCode int
	// Took is how long the command itself ran (not the preparation).
	Took time.Duration
}

// Names are the cases Generate knows, in the order it runs them.
var Names = []string{"go-assert", "go-panic", "go-compile", "go-pass-verbose", "mocha", "unittest", "cargo", "ci-script", "npm-install"}

// GoModule is the real module whose suite the Go cases run: go-toml v2, whose
// `go test -v ./...` prints several thousand lines over sixteen packages, needs
// neither the network (once downloaded) nor timing, and passes as root.
const GoModule = "github.com/pelletier/go-toml/v2@v2.2.3"

// Generator runs the cases. Its zero value uses the process environment.
type Generator struct {
	// Env is the environment the tools run with (HOME, PATH, GOPATH,
	// GOMODCACHE, GOCACHE, npm_config_cache, CARGO_HOME...). Nil means
	// os.Environ(). Generate adds the variables that turn colours off.
	Env []string
	// Logf, if set, is told what each step does.
	Logf func(format string, args ...any)
}

// Generate runs every case (or those named in only) in dir with the process
// environment. See Generator.Generate.
func Generate(ctx context.Context, dir string, only ...string) (cases []Case, skipped map[string]string, err error) {
	return (&Generator{}).Generate(ctx, dir, only...)
}

// Generate runs every case (or those named in only) under dir, a scratch
// directory it creates things in, and returns the cases it ran; a case whose
// toolchain is missing is returned in skipped with why. Every case really
// runs its tool. An error is returned when a case's preparation fails (a
// download, an install) or its run did not show the injected failure.
func (g *Generator) Generate(ctx context.Context, dir string, only ...string) (cases []Case, skipped map[string]string, err error) {
	want := map[string]bool{}
	for _, n := range only {
		known := false
		for _, k := range Names {
			known = known || k == n
		}
		if !known {
			return nil, nil, fmt.Errorf("salcorpus: unknown case %q (known: %s)", n, strings.Join(Names, ", "))
		}
		want[n] = true
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	r := &run{g: g, dir: dir, env: g.env()}
	skipped = map[string]string{}
	for _, name := range Names {
		if len(want) > 0 && !want[name] {
			continue
		}
		if why := r.missing(needs[name]...); why != "" {
			skipped[name] = why
			continue
		}
		if err := ctx.Err(); err != nil {
			return cases, skipped, err
		}
		r.logf("salcorpus: %s", name)
		c, err := makers[name](ctx, r)
		if err != nil && c.Log != nil {
			return cases, skipped, fmt.Errorf("salcorpus: %s: %w\ncommand: %s (exit %d)\nlog tail:\n%s", name, err, c.Command, c.ExitCode, tail(c.Log, 3000))
		}
		if err != nil {
			return cases, skipped, fmt.Errorf("salcorpus: %s: %w", name, err)
		}
		c.Name = name
		if err := c.check(); err != nil {
			return cases, skipped, fmt.Errorf("salcorpus: %s: %w\ncommand: %s\nlog tail:\n%s", name, err, c.Command, tail(c.Log, 3000))
		}
		cases = append(cases, c)
	}
	return cases, skipped, nil
}

// needs are the programs each case runs.
var needs = map[string][]string{
	"go-assert":       {"go", "bash"},
	"go-panic":        {"go", "bash"},
	"go-compile":      {"go", "bash"},
	"go-pass-verbose": {"go", "bash"},
	"mocha":           {"node", "npm", "npx", "bash"},
	"unittest":        {"python3", "bash"},
	"cargo":           {"cargo", "rustc", "bash"},
	"ci-script":       {"go", "gofmt", "node", "npm", "npx", "python3", "make", "bash"},
	"npm-install":     {"node", "npm", "bash"},
}

var makers = map[string]func(context.Context, *run) (Case, error){
	"go-assert":       goAssert,
	"go-panic":        goPanic,
	"go-compile":      goCompile,
	"go-pass-verbose": goPassVerbose,
	"mocha":           mochaCase,
	"unittest":        unittestCase,
	"cargo":           cargoCase,
	"ci-script":       ciScript,
	"npm-install":     npmInstall,
}

// check is what every case must be: a log, an exit status that agrees with
// Passing, and failure lines for a failing run.
func (c *Case) check() error {
	if len(c.Log) == 0 {
		return errors.New("empty log")
	}
	if c.Passing {
		if c.ExitCode != 0 || len(c.Failure) != 0 {
			return fmt.Errorf("the passing run exited %d with failure lines %q", c.ExitCode, c.Failure)
		}
		return nil
	}
	if c.ExitCode == 0 {
		return errors.New("the run with an injected failure exited 0")
	}
	if len(c.Failure) == 0 {
		return errors.New("no failure line found in the log")
	}
	return nil
}

// colourless are the variables that make each tool print no ANSI colour and no
// progress animation when, as here, its output is a pipe anyway.
var colourless = []string{
	"NO_COLOR=1", "FORCE_COLOR=0", "CLICOLOR=0", "TERM=dumb",
	"CARGO_TERM_COLOR=never", "CARGO_TERM_PROGRESS_WHEN=never",
	"npm_config_color=false", "npm_config_progress=false",
	"npm_config_fund=false", "npm_config_audit=false", "npm_config_update_notifier=false",
	"GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=-mod=mod",
	"PYTHONDONTWRITEBYTECODE=1",
	"LC_ALL=C.UTF-8",
}

func (g *Generator) env() []string {
	base := g.Env
	if base == nil {
		base = os.Environ()
	}
	drop := map[string]bool{}
	for _, kv := range colourless {
		drop[kv[:strings.IndexByte(kv, '=')]] = true
	}
	// Variables of a CI or of a test run around us that change what the tools
	// print.
	for _, k := range []string{"CI", "GITHUB_ACTIONS", "GOARCH", "GOOS", "CGO_ENABLED", "GOEXPERIMENT", "npm_config_loglevel", "NODE_OPTIONS", "RUST_BACKTRACE", "RUSTFLAGS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"} {
		drop[k] = true
	}
	var out []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, colourless...)
}

// run is one Generate call's state.
type run struct {
	g   *Generator
	dir string
	env []string

	goSrc string // the pristine module copy, its dependencies downloaded
}

func (r *run) logf(format string, args ...any) {
	if r.g.Logf != nil {
		r.g.Logf(format, args...)
	}
}

// lookPath finds name on the PATH of the environment the tools get.
func (r *run) lookPath(name string) (string, error) {
	path := ""
	for _, kv := range r.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH", name)
}

func (r *run) missing(progs ...string) string {
	var miss []string
	for _, p := range progs {
		if _, err := r.lookPath(p); err != nil {
			miss = append(miss, p)
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return "not on PATH: " + strings.Join(miss, ", ")
}

// sh runs script with bash -c in dir and returns its combined output (one
// pipe for stdout and stderr, so their lines interleave as they were written)
// and exit code. A failure to start, or the context ending, is an error.
func (r *run) sh(ctx context.Context, dir, script string, extraEnv ...string) ([]byte, int, error) {
	bash, err := r.lookPath("bash")
	if err != nil {
		return nil, -1, err
	}
	cmd := exec.CommandContext(ctx, bash, "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, r.env...), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return out.Bytes(), -1, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.Bytes(), ee.ExitCode(), nil
	}
	if err != nil {
		return out.Bytes(), -1, err
	}
	return out.Bytes(), 0, nil
}

// must runs a preparation step, which has to succeed.
func (r *run) must(ctx context.Context, dir, script string, extraEnv ...string) ([]byte, error) {
	r.logf("salcorpus:   (in %s) %s", dir, script)
	out, code, err := r.sh(ctx, dir, script, extraEnv...)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return out, fmt.Errorf("%s: %w\n%s", script, err, tail(out, 3000))
	}
	return out, nil
}

// record runs the case's command and fills Log, ExitCode, Took.
func (r *run) record(ctx context.Context, c *Case, extraEnv ...string) error {
	r.logf("salcorpus:   (in %s) %s", c.Dir, c.Command)
	start := time.Now()
	out, code, err := r.sh(ctx, c.Dir, c.Command, extraEnv...)
	c.Took = time.Since(start)
	c.Log, c.ExitCode = out, code
	return err
}

// pick returns, for each pattern, the first line of log it matches (trimmed
// of surrounding blanks), or an error naming the patterns that matched none.
// from > 0 skips lines before that byte offset.
func pick(log []byte, patterns ...string) ([]string, error) {
	var out, none []string
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		found := ""
		sc := bufio.NewScanner(bytes.NewReader(log))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			if l := sc.Text(); re.MatchString(l) {
				found = strings.TrimSpace(l)
				break
			}
		}
		if found == "" {
			none = append(none, p)
			continue
		}
		out = append(out, found)
	}
	if len(none) > 0 {
		return out, fmt.Errorf("no line of the log matches %q", none)
	}
	return out, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// copyTree copies the regular files and directories of src into dst, files
// writable by the owner (the module cache's are read-only), keeping the
// executable bits. skip, if set, leaves out the entries it returns true for.
func copyTree(src, dst string, skip func(rel string, d fs.DirEntry) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if skip != nil && rel != "." && skip(rel, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		t := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(t, 0o755)
		case d.Type().IsRegular():
			st, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(t, b, st.Mode().Perm()|0o600)
		}
		return nil // symlinks and the like: none in the sources used here
	})
}

// writeFiles writes each name (relative to dir) with its content.
func writeFiles(dir string, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// editFile replaces the one occurrence of old in the file with new.
func editFile(path, old, new string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if n := bytes.Count(b, []byte(old)); n != 1 {
		return fmt.Errorf("%s: %q occurs %d times, want once", path, old, n)
	}
	return os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644)
}

//go:embed testdata/mocha
var fixtures embed.FS

// writeFixture writes the embedded fixture testdata/NAME into dst.
func writeFixture(name, dst string) error {
	root := "testdata/" + name
	return fs.WalkDir(fixtures, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		t := filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(p, root)))
		if d.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		b, err := fixtures.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(t, b, 0o644)
	})
}

// shq quotes s for bash.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
