package salcorpus

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// goTestCmd is what the Go cases run: every package's tests, verbose, none
// of them from the test cache.
const goTestCmd = "go test -count=1 -v ./..."

// goSource downloads GoModule through the module proxy (once per run),
// copies it out of the read-only module cache and downloads its
// dependencies, and returns the pristine copy.
func (r *run) goSource(ctx context.Context) (string, error) {
	if r.goSrc != "" {
		return r.goSrc, nil
	}
	out, err := r.must(ctx, r.dir, "go mod download -json "+shq(GoModule))
	if err != nil {
		return "", err
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download -json %s: %v %s\n%s", GoModule, err, mod.Error, out)
	}
	src := filepath.Join(r.dir, "go-src")
	if err := os.RemoveAll(src); err != nil {
		return "", err
	}
	if err := copyTree(mod.Dir, src, nil); err != nil {
		return "", err
	}
	// The test dependencies (testify and its own), pinned by the module's
	// go.sum, so that no run prints "go: downloading".
	if _, err := r.must(ctx, src, "go mod download"); err != nil {
		return "", err
	}
	r.goSrc = src
	return src, nil
}

// goCopy gives case name its own copy of the module.
func (r *run) goCopy(ctx context.Context, name string) (string, error) {
	src, err := r.goSource(ctx)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(r.dir, name, "go-toml")
	if err := os.RemoveAll(filepath.Dir(dst)); err != nil {
		return "", err
	}
	return dst, copyTree(src, dst, nil)
}

var testFunc = regexp.MustCompile(`^func (Test\w+)\(t \*testing\.T\) \{$`)

// injectIntoTest inserts stmt as the first statement of the test function at
// position at (0..1, a fraction of the file's top-level tests) in file, and
// returns that test's name.
func injectIntoTest(file string, at float64, stmt string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(b), "\n")
	var idx []int
	for i, l := range lines {
		if testFunc.MatchString(l) {
			idx = append(idx, i)
		}
	}
	if len(idx) < 3 {
		return "", fmt.Errorf("%s: only %d test functions", file, len(idx))
	}
	i := idx[int(at*float64(len(idx)))]
	name := testFunc.FindStringSubmatch(lines[i])[1]
	lines = append(lines[:i+1], append([]string{stmt}, lines[i+1:]...)...)
	return name, os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644)
}

// goTestFile is the module's test file the failures go into: the generated
// toml-test suite, whose tests print from about a third to four fifths of the
// verbose log.
const goTestFile = "toml_testgen_test.go"

// goCase runs the module's suite in a fresh copy named name, after inject
// broke it; inject returns the patterns of the failure lines to pick from
// the log.
func goCase(ctx context.Context, r *run, name string, inject func(dir string) ([]string, error)) (Case, error) {
	c := Case{Command: goTestCmd}
	dir, err := r.goCopy(ctx, name)
	if err != nil {
		return c, err
	}
	c.Dir = dir
	patterns, err := inject(dir)
	if err != nil {
		return c, err
	}
	if err := r.record(ctx, &c); err != nil {
		return c, err
	}
	c.Failure, err = pick(c.Log, patterns...)
	return c, err
}

func goAssert(ctx context.Context, r *run) (Case, error) {
	return goCase(ctx, r, "go-assert", func(dir string) ([]string, error) {
		test, err := injectIntoTest(filepath.Join(dir, goTestFile), 0.5,
			"\tt.Errorf(\"contextd-injected: document %q decoded to %d top-level keys, want %d\", \"spec/table\", 3, 4)")
		return []string{`^\s*--- FAIL: ` + regexp.QuoteMeta(test) + ` `, `_test\.go:\d+: contextd-injected: `}, err
	})
}

func goPanic(ctx context.Context, r *run) (Case, error) {
	return goCase(ctx, r, "go-panic", func(dir string) ([]string, error) {
		test, err := injectIntoTest(filepath.Join(dir, goTestFile), 0.4,
			"\tcontextdInjected := []string{\"key\", \"value\"}\n\t_ = contextdInjected[len(contextdInjected)+1] // contextd-injected")
		return []string{`^\s*--- FAIL: ` + regexp.QuoteMeta(test) + ` `,
			`^panic: runtime error: index out of range`,
			`^\s+\S*/` + regexp.QuoteMeta(goTestFile) + `:\d+ `}, err
	})
}

// goCompile breaks a command of the module (a leaf package, so that the
// packages before and after it in the verbose log still build and test).
func goCompile(ctx context.Context, r *run) (Case, error) {
	return goCase(ctx, r, "go-compile", func(dir string) ([]string, error) {
		f, err := os.OpenFile(filepath.Join(dir, "cmd", "tomll", "main.go"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString("\n// contextd-injected: a use of an undefined identifier.\nfunc contextdInjectedVersion() string { return bogus }\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return []string{`^cmd/tomll/main\.go:\d+:\d+: undefined: bogus$`, `^FAIL\s+\S+/cmd/tomll \[build failed\]`}, err
	})
}

func goPassVerbose(ctx context.Context, r *run) (Case, error) {
	c := Case{Command: goTestCmd, Passing: true}
	dir, err := r.goCopy(ctx, "go-pass-verbose")
	if err != nil {
		return c, err
	}
	c.Dir = dir
	err = r.record(ctx, &c)
	return c, err
}
