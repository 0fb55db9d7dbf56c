package tools

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/contextd/contextd/scrub"
)

// A sandboxed tool does not write its output to the daemon as it is: it
// writes frames, so that the secrets it took out travel apart from the text
// and the daemon can number them in the session (the tool cannot: the
// numbering is the session's, and the sandbox must not see the session's
// secrets). A frame is a type byte, a uvarint length and the payload.
const (
	// frameText is output the tool scrubbed (the first layer).
	frameText = 'T'
	// frameRaw is output the tool did not scrub, because it will not leave
	// the daemon unless a continuation page asks for it (the daemon's layer
	// scrubs every byte that leaves).
	frameRaw = 'R'
	// frameSecret is a secret the tool took out at this point of the text:
	// JSON secretFrame. The daemon writes the session's placeholder here.
	frameSecret = 'S'
	// frameMeta is the tool's report (JSON toolMeta), the last frame.
	frameMeta = 'M'
)

// maxFrame bounds one frame; text is written in pieces well below it.
const maxFrame = 16 << 20

type secretFrame struct {
	Rule   string `json:"rule"`
	Secret []byte `json:"secret"` // bytes as they were (base64 in JSON: a secret need not be UTF-8)
}

// toolMeta is what a tool reports besides its output.
type toolMeta struct {
	// ExitCode is safe_bash's command's exit status (128+N for signal N).
	ExitCode *int `json:"exit_code,omitempty"`
	// Findings counts the first layer's catches by rule.
	Findings map[string]int `json:"findings,omitempty"`
	// Stages: milliseconds from the tool's start to the end of each of its
	// stages, for the daemon's debug log.
	Stages map[string]float64 `json:"stages,omitempty"`
}

// frameWriter writes frames; not safe for concurrent use.
type frameWriter struct {
	w        *bufio.Writer
	findings map[string]int
	start    time.Time
	stages   map[string]float64
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 64<<10), findings: map[string]int{}, start: time.Now()}
}

// mark records the end of a stage of the tool's work (for meta).
func (f *frameWriter) mark(stage string) {
	if f.stages == nil {
		f.stages = map[string]float64{}
	}
	f.stages[stage] = float64(time.Since(f.start).Microseconds()) / 1000
}

func (f *frameWriter) frame(kind byte, p []byte) error {
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = kind
	n := binary.PutUvarint(hdr[1:], uint64(len(p)))
	if _, err := f.w.Write(hdr[:1+n]); err != nil {
		return err
	}
	_, err := f.w.Write(p)
	return err
}

// data writes text (scrubbed or raw) in frames of at most 1 MiB.
func (f *frameWriter) data(kind byte, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), 1<<20)
		if err := f.frame(kind, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// scrubbed writes text with the findings in it (offsets relative to text)
// taken out: text frames around secret frames.
func (f *frameWriter) scrubbed(text []byte, fs []scrub.Finding) error {
	at := 0
	for _, fd := range fs {
		if fd.Start < at || fd.End > len(text) {
			continue // overlapping or out of range: the finder guarantees neither
		}
		if err := f.data(frameText, text[at:fd.Start]); err != nil {
			return err
		}
		if err := f.secret(fd.Rule, text[fd.Start:fd.End]); err != nil {
			return err
		}
		at = fd.End
	}
	return f.data(frameText, text[at:])
}

// secret writes a secret frame and counts it.
func (f *frameWriter) secret(rule string, secret []byte) error {
	b, _ := json.Marshal(secretFrame{Rule: rule, Secret: secret})
	f.findings[rule]++
	return f.frame(frameSecret, b)
}

// meta writes the report and flushes.
func (f *frameWriter) meta(m toolMeta) error {
	if len(f.findings) > 0 {
		m.Findings = f.findings
	}
	m.Stages = f.stages
	b, _ := json.Marshal(m)
	if err := f.frame(frameMeta, b); err != nil {
		return err
	}
	return f.w.Flush()
}

func (f *frameWriter) flush() error { return f.w.Flush() }

// frameReader is the daemon's side: an io.Writer that takes the tool's
// stdout in whatever pieces it arrives and calls its handlers frame by frame.
type frameReader struct {
	text    func(p []byte, scrubbed bool) error
	secret  func(s secretFrame) error
	meta    *toolMeta
	gotMeta bool

	buf []byte
	err error
}

var errBadFrame = errors.New("malformed output frame from the sandboxed tool")

func (r *frameReader) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	r.buf = append(r.buf, p...)
	for {
		if len(r.buf) == 0 {
			break
		}
		size, n := binary.Uvarint(r.buf[1:])
		if n == 0 {
			break // header incomplete
		}
		if n < 0 || size > maxFrame {
			r.err = errBadFrame
			return 0, r.err
		}
		end := 1 + n + int(size)
		if len(r.buf) < end {
			break
		}
		if err := r.handle(r.buf[0], r.buf[1+n:end]); err != nil {
			r.err = err
			return 0, err
		}
		r.buf = r.buf[end:]
	}
	// Keep the partial frame; drop the consumed prefix's memory now and then.
	if cap(r.buf) > 4<<20 && len(r.buf) < 1<<20 {
		r.buf = append([]byte(nil), r.buf...)
	}
	return len(p), nil
}

func (r *frameReader) handle(kind byte, p []byte) error {
	switch kind {
	case frameText, frameRaw:
		return r.text(p, kind == frameText)
	case frameSecret:
		var s secretFrame
		if err := json.Unmarshal(p, &s); err != nil || s.Rule == "" {
			return errBadFrame
		}
		return r.secret(s)
	case frameMeta:
		if err := json.Unmarshal(p, r.meta); err != nil {
			return errBadFrame
		}
		r.gotMeta = true
		return nil
	}
	return fmt.Errorf("%w: type %q", errBadFrame, kind)
}

// complete reports whether the stream ended on a frame boundary.
func (r *frameReader) complete() bool { return r.err == nil && len(r.buf) == 0 }
