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
	// frameRaw is output the tool did not scrub: a gap read again for a
	// continuation page, which the daemon cuts the page from and scrubs
	// (its layer scrubs every byte that leaves).
	frameRaw = 'R'
	// frameGap stands for a run of the output the tool did not send (JSON
	// gapFrame): the middle of a long read, which the first response does
	// not show. The daemon keeps the frame, not the bytes.
	frameGap = 'G'
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

// gapFrame describes a gap: the numbered rendering of the file's bytes
// [From, To), which a page gets by having them read and rendered again
// (safe_read's page mode, with the gap in fileOp.Gap).
type gapFrame struct {
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Line    int   `json:"line"`     // the line From is in
	AtStart bool  `json:"at_start"` // From starts that line: its number is part of the gap
	Len     int64 `json:"len"`      // bytes of the rendering
	Lines   int64 `json:"lines"`    // newlines in it
	// Blocks cut [From, To) in runs of Block bytes (the last one shorter),
	// so that a page reads and renders only the blocks it shows, not the
	// whole gap.
	Block  int64      `json:"block"`
	Blocks []gapBlock `json:"blocks"`
}

// gapBlock is where a block of a gap starts, and what its bytes were.
type gapBlock struct {
	At      int64 `json:"at"`       // offset of its rendering in the gap's
	Line    int   `json:"line"`     // the line its first byte is in
	AtStart bool  `json:"at_start"` // its first byte starts that line
	// CRC is the CRC-32C of its bytes: a page is made only from the bytes
	// the first read saw; an edit of them refuses it.
	CRC uint32 `json:"crc"`
}

// gapBlockSize is the block size for a gap of n bytes: 256 KiB, or more for
// a gap of over 128 MiB, so that a gap frame stays under 512 blocks.
func gapBlockSize(n int64) int64 { return max(256<<10, (n+511)/512) }

// valid checks a gap frame's numbers against each other: the daemon keeps
// it, and a page acts on it later.
func (g *gapFrame) valid() bool {
	if g.From < 0 || g.To <= g.From || g.Len < g.To-g.From || g.Lines < 0 || g.Line < 1 || g.Block < 1 ||
		int64(len(g.Blocks)) != (g.To-g.From+g.Block-1)/g.Block {
		return false
	}
	at := int64(-1)
	for i, b := range g.Blocks {
		if b.At <= at || b.At >= g.Len || b.Line < 1 || (i == 0 && (b.At != 0 || b.Line != g.Line || b.AtStart != g.AtStart)) {
			return false
		}
		at = b.At
	}
	return true
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

// gap writes a gap frame.
func (f *frameWriter) gap(g gapFrame) error {
	b, _ := json.Marshal(g)
	return f.frame(frameGap, b)
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
// Text is handed on as it arrives, piece by piece, never gathered: a large
// output crosses the daemon without being copied here. Only the small frames
// (secrets, the report) are collected whole.
type frameReader struct {
	text    func(p []byte, scrubbed bool) error
	secret  func(s secretFrame) error
	gap     func(g gapFrame) error // nil: a gap is a malformed frame
	meta    *toolMeta
	gotMeta bool

	hdr    []byte // a header being read
	inBody bool
	kind   byte
	left   uint64 // bytes of the current body still to come
	body   []byte // a small frame's body being gathered
	err    error
}

var errBadFrame = errors.New("malformed output frame from the sandboxed tool")

// maxSmallFrame bounds a secret or report frame.
const maxSmallFrame = 1 << 20

func (r *frameReader) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := len(p)
	for len(p) > 0 || (r.inBody && r.left == 0) {
		if !r.inBody {
			// The header: a type byte and a uvarint, at most 11 bytes.
			r.hdr = append(r.hdr, p[0])
			p = p[1:]
			if len(r.hdr) < 2 {
				continue
			}
			size, k := binary.Uvarint(r.hdr[1:])
			if k == 0 {
				if len(r.hdr) > 1+binary.MaxVarintLen64 {
					r.err = errBadFrame
					return 0, r.err
				}
				continue // header incomplete
			}
			if k < 0 || size > maxFrame {
				r.err = errBadFrame
				return 0, r.err
			}
			r.kind, r.left, r.inBody = r.hdr[0], size, true
			r.hdr, r.body = r.hdr[:0], r.body[:0]
			switch r.kind {
			case frameText, frameRaw:
			case frameSecret, frameMeta, frameGap:
				if size > maxSmallFrame {
					r.err = errBadFrame
					return 0, r.err
				}
			default:
				r.err = fmt.Errorf("%w: type %q", errBadFrame, r.kind)
				return 0, r.err
			}
			continue
		}
		take := int(min(uint64(len(p)), r.left))
		chunk := p[:take]
		p = p[take:]
		r.left -= uint64(take)
		switch r.kind {
		case frameText, frameRaw:
			if len(chunk) > 0 {
				if err := r.text(chunk, r.kind == frameText); err != nil {
					r.err = err
					return 0, err
				}
			}
		default:
			r.body = append(r.body, chunk...)
		}
		if r.left == 0 {
			r.inBody = false
			if r.kind == frameSecret || r.kind == frameMeta || r.kind == frameGap {
				if err := r.handle(r.kind, r.body); err != nil {
					r.err = err
					return 0, err
				}
			}
		}
	}
	return n, nil
}

func (r *frameReader) handle(kind byte, p []byte) error {
	switch kind {
	case frameSecret:
		var s secretFrame
		if err := json.Unmarshal(p, &s); err != nil || s.Rule == "" {
			return errBadFrame
		}
		return r.secret(s)
	case frameGap:
		var g gapFrame
		if r.gap == nil || json.Unmarshal(p, &g) != nil || !g.valid() {
			return errBadFrame
		}
		return r.gap(g)
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
func (r *frameReader) complete() bool { return r.err == nil && !r.inBody && len(r.hdr) == 0 }
