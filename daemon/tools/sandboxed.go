package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/workspace"
)

// holeExtraWriter is an Out that takes what the tool found in a gap: its
// salient blocks and its outline (respond.Pipe with salience).
type holeExtraWriter interface {
	HoleExtra(blocks []salience.Block, total int, outline []string)
}

// holeWriter is an Out that takes a gap in place of the bytes it stands
// for (respond.Pipe): n bytes with lines newlines, which source (opaque to
// it, JSON gapSource) lets FillGap make again.
type holeWriter interface {
	io.Writer
	Hole(n, lines int64, source []byte) error
}

// gapSource is what the daemon keeps of a gap: enough to read it again.
type gapSource struct {
	Tool    string        `json:"tool"`
	Root    string        `json:"root"`
	Rel     string        `json:"rel"`
	Display string        `json:"display"`
	Gap     toolproto.Gap `json:"gap"`
}

// maxGapPage bounds what one FillGap asks of the sandbox; a page reads
// well under a MiB.
const maxGapPage = 16 << 20

// FillGap fills p with bytes [off, off+len(p)) of a gap's rendering (source
// as the output's Hole got it), read again from the file in safe_read's
// sandbox, unscrubbed: the caller scrubs what it returns. env needs Config,
// Runner and Sandbox; the place and the output are the gap's own. A file whose
// bytes in the gap changed since the first read is refused
// (catalog.ErrUnknownContinuation).
func FillGap(ctx context.Context, env *Env, source []byte, off int64, p []byte) Outcome {
	var src gapSource
	if err := json.Unmarshal(source, &src); err != nil || src.Tool != "safe_read" || src.Root == "" {
		return Outcome{Err: fmt.Errorf("safe_read: the stored page source is unreadable: %w", catalog.ErrInternal)}
	}
	if off < 0 || len(p) > maxGapPage || off+int64(len(p)) > src.Gap.Len {
		return Outcome{Err: fmt.Errorf("safe_read: page range %d+%d outside the gap of %d bytes: %w", off, len(p), src.Gap.Len, catalog.ErrInternal)}
	}
	if len(p) == 0 {
		return Outcome{}
	}
	var got bytes.Buffer
	got.Grow(len(p))
	e := *env
	e.Place = workspace.Place{Root: src.Root, Cwd: src.Root, LogicalRoot: src.Root}
	e.Out = &got
	o := runFileOp(ctx, &e, toolproto.Op{Tool: "safe_read", Root: src.Root, Rel: src.Rel, Display: src.Display,
		Gap: &src.Gap, Skip: off, N: int64(len(p))}, "", gitguard.Find(src.Root))
	if o.Err != nil {
		return o
	}
	if got.Len() != len(p) {
		o.Err = fmt.Errorf("safe_read: page of %s: %d bytes read again, want %d: %w", src.Display, got.Len(), len(p), catalog.ErrInternal)
		return o
	}
	copy(p, got.Bytes())
	return o
}

// runFileOp runs op through the call's runner and turns the tool process's report
// back into an outcome. source is the file the output comes from, for the
// placeholders of the secrets in it ("" when none). The file tools get the
// same shield as safe_bash (sandboxenv: Reader, Writer).
//
// git is the call's Find of the workspace's git entries (safe_write's git
// guard fingerprints the same).
func runFileOp(ctx context.Context, env *Env, op toolproto.Op, source string, git gitguard.Layout) (o Outcome) {
	kind := sandboxenv.Writer
	if op.Content == nil {
		kind = sandboxenv.Reader
	}
	sb, err := env.Sandbox.Build(sandboxenv.Request{Kind: kind, Name: op.Tool, Workspace: env.Place.Root,
		Session: env.Session, CallerEnv: env.CallerEnv, Git: &git})
	// After the run: the sandbox, and every process in it, is gone by then.
	defer func() { sb.Release(o.Gone) }()
	if err != nil {
		return Outcome{Err: fmt.Errorf("%s: %w", op.Tool, err)}
	}
	spec := runner.Spec{Dir: env.Place.Root, Env: sb.Vars, Timeout: env.Config.Tools.FileTimeout.Duration}
	sb.Apply(&spec)
	o = runSandboxed(ctx, env, op, source, spec)
	o.Warnings = append(o.Warnings, sb.Warnings...)
	return o
}

// runSandboxed runs op in its sandbox (spec holds what differs per tool) and
// decodes the tool's frames: text goes to env.Out, each secret the tool took
// out becomes the session's placeholder for it, tied to source, or, for a
// read, to the file the tool reports it opened.
func runSandboxed(ctx context.Context, env *Env, op toolproto.Op, source string, spec runner.Spec) Outcome {
	op.Rules = env.Rules
	in, err := json.Marshal(op)
	if err != nil {
		return Outcome{Err: fmt.Errorf("%s: encode operation: %v: %w", op.Tool, err, catalog.ErrInternal)}
	}
	var stderr bytes.Buffer
	var opened workspace.FileID
	frames := &toolproto.Reader{
		OnText: func(p []byte, _ bool) error { _, err := env.Out.Write(p); return err },
		OnSecret: func(s toolproto.Secret) error {
			_, err := io.WriteString(env.Out, env.Vault.Placeholder(s.Rule, string(s.Secret), source))
			return err
		},
		// The file the tool opened, once: a read's secrets are tied to
		// it from here on (see safe_read), in both layers.
		OnFile: func(id workspace.FileID) error {
			if opened.Key() != "" {
				return fmt.Errorf("%s: a second file frame: %w", op.Tool, catalog.ErrInternal)
			}
			opened = id
			if op.Tool == "safe_read" && op.Gap == nil {
				source = id.Key()
				if env.Layer != nil {
					env.Layer.Source = source
				}
			}
			return nil
		},
	}
	if hw, ok := env.Out.(holeWriter); ok && op.Window > 0 {
		frames.OnGap = func(g toolproto.Gap) error {
			src, err := json.Marshal(gapSource{Tool: op.Tool, Root: op.Root, Rel: op.Rel, Display: op.Display, Gap: g})
			if err != nil {
				return err
			}
			if err := hw.Hole(g.Len, g.Lines, src); err != nil {
				return err
			}
			if xw, ok := env.Out.(holeExtraWriter); ok && (len(g.Salient) > 0 || len(g.Outline) > 0) {
				bs := make([]salience.Block, 0, len(g.Salient))
				for _, b := range g.Salient {
					kind := salience.Failure
					if b.Kind == toolproto.BlockSummary {
						kind = salience.Summary
					}
					bs = append(bs, salience.Block{FirstLine: b.FirstLine, LastLine: b.LastLine, MatchLine: b.FirstLine,
						Name: b.Rule, Family: b.Family, Kind: kind, Text: []byte(b.Text)})
				}
				xw.HoleExtra(bs, g.Failures, g.Outline)
			}
			return nil
		}
	}
	spec.Tool, spec.Mode, spec.Args, spec.Stdin = op.Tool, runner.Tool, []string{op.Tool}, in
	tw := &timedWriter{w: frames}
	spec.Output, spec.Stderr = tw, &limitedBuffer{buf: &stderr, max: 64 << 10}
	ex, err := env.Runner.Run(ctx, spec)
	meta, gotMeta := frames.Meta()
	o := Outcome{Layers: ex.Layers, Stages: meta.Stages, File: opened, Gone: ex.Gone}
	if o.Stages != nil {
		o.Stages["daemon_side"] = float64(tw.spent.Microseconds()) / 1000
	}
	for rule, n := range meta.Findings {
		if o.Findings == nil {
			o.Findings = map[string]int{}
		}
		o.Findings[rule] += n
	}
	switch {
	case err != nil:
		o.Err = fmt.Errorf("%s: %w", op.Tool, err)
	case ex.TimedOut:
		o.ExitCode, o.Err = catalog.ExitTimeout, fmt.Errorf("%s: killed after %s: %w", op.Tool, spec.Timeout, catalog.ErrTimeout)
	case ex.Canceled:
		o.ExitCode, o.Err = ex.Code, canceled(ctx)
	case !frames.Complete() || (ex.Code == 0 && !gotMeta):
		o.Err = fmt.Errorf("%s: the sandboxed tool's output ended early (exit %d): %s: %w",
			op.Tool, ex.Code, firstLine(stderr.String()), catalog.ErrInternal)
	case meta.ExitCode != nil:
		o.ExitCode = *meta.ExitCode
	case ex.Code == 0:
	default:
		o.Err = toolFailure(op.Tool, ex.Code, stderr.Bytes())
	}
	return o
}

// toolFailure is the error of a tool process that exited with code: the
// catalog error it reported as JSON on stderr, or, when it could not (it
// crashed), an internal error quoting stderr.
func toolFailure(tool string, code int, stderr []byte) error {
	var d catalog.Detail
	if json.Unmarshal(bytes.TrimSpace(stderr), &d) == nil && d.Code != "" {
		return catalog.FromDetail(&d)
	}
	return fmt.Errorf("%s: the sandboxed tool failed (exit %d): %s: %w",
		tool, code, firstLine(string(stderr)), catalog.ErrInternal)
}

// firstLine is what an error message quotes of a crashed tool's stderr (a Go
// runtime's crash report runs to kilobytes): its first line, at most 300
// bytes.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// limitedBuffer keeps at most max bytes: a tool's error report is small, and a
// broken tool must not make the daemon buffer without bound.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// timedWriter adds up the time its writes take: the daemon's side of a
// tool's output (decoding, scrubbing, storing), for the debug log.
type timedWriter struct {
	w     io.Writer
	spent time.Duration
}

func (t *timedWriter) Write(p []byte) (int, error) {
	start := time.Now()
	n, err := t.w.Write(p)
	t.spent += time.Since(start)
	return n, err
}
