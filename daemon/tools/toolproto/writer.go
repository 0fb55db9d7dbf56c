package toolproto

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"time"

	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/workspace"
)

// Writer is the tool's side: it writes the frames of the tool's output,
// counts the secrets it sends and times the tool's stages for the report.
// Not safe for concurrent use.
type Writer struct {
	w        *bufio.Writer
	findings map[string]int
	start    time.Time
	stages   map[string]float64
}

// NewWriter returns a Writer onto w (the tool's stdout).
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), findings: map[string]int{}, start: time.Now()}
}

// Mark records the end of a stage of the tool's work (for Meta).
func (f *Writer) Mark(stage string) {
	if f.stages == nil {
		f.stages = map[string]float64{}
	}
	f.stages[stage] = float64(time.Since(f.start).Microseconds()) / 1000
}

func (f *Writer) frame(kind byte, p []byte) error {
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
func (f *Writer) data(kind byte, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), 1<<20)
		if err := f.frame(kind, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// Text writes output the tool scrubbed and in which it found no secret.
func (f *Writer) Text(p []byte) error { return f.data(frameText, p) }

// Raw writes output the tool did not scrub (a page of a gap, which the
// daemon scrubs).
func (f *Writer) Raw(p []byte) error { return f.data(frameRaw, p) }

// Scrubbed writes text with the findings in it (offsets relative to text)
// taken out: text frames around secret frames.
func (f *Writer) Scrubbed(text []byte, fs []scrub.Finding) error {
	at := 0
	for _, fd := range fs {
		if fd.Start < at || fd.End > len(text) {
			continue // overlapping or out of range: the finder guarantees neither
		}
		if err := f.data(frameText, text[at:fd.Start]); err != nil {
			return err
		}
		if err := f.Secret(fd.Rule, text[fd.Start:fd.End]); err != nil {
			return err
		}
		at = fd.End
	}
	return f.data(frameText, text[at:])
}

// Secret writes a secret frame and counts it.
func (f *Writer) Secret(rule string, secret []byte) error {
	b, _ := json.Marshal(Secret{Rule: rule, Secret: secret})
	f.findings[rule]++
	return f.frame(frameSecret, b)
}

// Gap writes a gap frame.
func (f *Writer) Gap(g Gap) error {
	b, _ := json.Marshal(g)
	return f.frame(frameGap, b)
}

// File writes a file frame: the file the tool opened (or made).
func (f *Writer) File(id workspace.FileID) error {
	b, _ := json.Marshal(id)
	return f.frame(frameFile, b)
}

// Meta writes the report, the findings and stages counted here included,
// and flushes.
func (f *Writer) Meta(m Meta) error {
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

// Flush sends what is buffered.
func (f *Writer) Flush() error { return f.w.Flush() }
