// Package inside is a tool's half in its sandbox: it does the operation and sends the output scrubbed, in frames.
package inside

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/workspace"
)

// Main is contextd's tool mode: it reads one toolproto.Op on stdin, performs
// it, writes the tool's output on stdout as frames, and on failure one JSON
// catalog error on stderr; the exit status is the error's. It runs as the
// init (pid 1) of the tool's sandbox, already under the tool's seccomp
// profile.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(context.Background(), sandboxInit, args, stdin, stdout, stderr)
}

// MainUnsandboxed is Main for tests only (runnertest.Unsandboxed): the tool
// runs in the test's own process, with no sandbox around it, and stops when
// ctx ends, where in the sandbox the daemon kills the whole sandbox instead.
func MainUnsandboxed(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, unsandboxedTest, args, stdin, stdout, stderr)
}

// process says what the tool's process is. Only safe_bash's shell needs to
// know: who reaps it and what it leaves behind, and who ends it.
type process int

const (
	// sandboxInit is pid 1 of the tool's sandbox: it reaps every orphan,
	// and the daemon kills the sandbox, leftovers included, at the end.
	sandboxInit process = iota
	// unsandboxedTest is a test's process (MainUnsandboxed), not pid 1 of
	// anything: the shell gets a process group of its own, killed when ctx
	// ends and once it exits.
	unsandboxedTest
)

func run(ctx context.Context, proc process, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := toolMain(ctx, proc, args, stdin, stdout)
	if err == nil {
		return 0
	}
	b, _ := json.Marshal(catalog.ToDetail(err))
	stderr.Write(append(b, '\n'))
	return catalog.ExitCode(err)
}

func toolMain(ctx context.Context, proc process, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("tool mode: want one argument (the tool), got %d: %w", len(args), catalog.ErrUsage)
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 1<<30))
	if err != nil {
		return fmt.Errorf("tool mode: read operation: %v: %w", err, catalog.ErrIO)
	}
	var op toolproto.Op
	if err := json.Unmarshal(b, &op); err != nil {
		return fmt.Errorf("tool mode: decode operation: %v: %w", err, catalog.ErrInternal)
	}
	if op.Tool != args[0] {
		return fmt.Errorf("tool mode: operation for %q given to %q: %w", op.Tool, args[0], catalog.ErrInternal)
	}
	if op.Tool == "safe_bash" {
		return bashMain(ctx, proc, op, stdout)
	}
	root, err := workspace.Open(op.Root)
	if err != nil {
		return fmt.Errorf("%s: %w", op.Tool, err)
	}
	defer root.Close()
	fw := toolproto.NewWriter(stdout)
	var meta toolproto.Meta
	var sc *scrub.Scrubber
	if op.Tool != "safe_read" || op.Gap == nil {
		// Page mode scrubs nothing (the daemon scrubs the page), so it does
		// not wait for a scrubber an init from the pool may not have built.
		if sc, err = toolScrubber(op.Rules); err != nil {
			return fmt.Errorf("%s: scrubber: %v: %w", op.Tool, err, catalog.ErrConfig)
		}
	}
	switch op.Tool {
	case "safe_read":
		if op.Gap != nil {
			err = renderGap(root, op, fw)
		} else {
			err = readFile(root, op, sc, fw)
		}
	case "safe_write":
		err = writeFile(root, op, sc, fw)
	default:
		err = fmt.Errorf("tool mode: %q: %w", op.Tool, catalog.ErrUnknownTool)
	}
	if err != nil {
		fw.Flush()
		return err
	}
	if ferr := fw.Meta(meta); ferr != nil {
		return fmt.Errorf("%s: send output: %v: %w", op.Tool, ferr, catalog.ErrIO)
	}
	return nil
}

// defaultScrubber is the tool-side scrubber with the default rules. A pooled
// sandbox builds it while it waits for a call (Warm).
var defaultScrubber = sync.OnceValues(func() (*scrub.Scrubber, error) { return scrub.New(nil) })

// Warm prepares, in a sandbox that waits for its call, what every tool run
// needs and no call changes (ns.Hooks.Warm).
func Warm() {
	defaultScrubber()
	// The threads safe_bash's init must not lack once the command runs
	// (reserveThreads), started while the sandbox waits in the pool.
	threadsOnce.Do(func() { reserveThreads(runtime.GOMAXPROCS(0) + 6) })
}

// threadsOnce makes the thread reservation happen once per process: in Warm
// (off the call's path) when the sandbox was pooled, else at the call; a
// call that comes while Warm is still at it waits for it.
var threadsOnce sync.Once

// toolScrubber returns the scrubber for a call's extra rules.
func toolScrubber(rules string) (*scrub.Scrubber, error) {
	if rules == "" {
		return defaultScrubber()
	}
	return scrub.New(&scrub.Options{ExtraConfig: rules})
}

// scrubMargin is how far the tool's scrub looks past the ends of a window.
const scrubMargin = 16 << 10
