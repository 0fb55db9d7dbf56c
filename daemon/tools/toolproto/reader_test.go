package toolproto

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/workspace"
)

// frameEvent is one call a Reader made to a handler.
type frameEvent struct {
	kind   byte // frameText, frameRaw, frameSecret, frameFile or frameGap
	text   []byte
	secret Secret
	file   workspace.FileID
	gap    Gap
}

// decoding is all a Reader reported about one stream.
type decoding struct {
	events   []frameEvent
	meta     Meta
	gotMeta  bool
	complete bool
	err      error
}

// decodeCut feeds b to a new Reader in writes of step bytes, stopping at the
// first error. Besides recording what the Reader reported, it checks the
// Writer contract around errors: a write that fails took nothing, the
// failure sticks (a later write gets the same error), and a failed stream
// is never complete.
func decodeCut(t *testing.T, b []byte, step int) decoding {
	t.Helper()
	var d decoding
	add := func(e frameEvent) {
		// Text arrives in pieces that depend on how the stream was cut;
		// runs of one kind are joined so that two cuts compare equal.
		if n := len(d.events); n > 0 && (e.kind == frameText || e.kind == frameRaw) && d.events[n-1].kind == e.kind {
			d.events[n-1].text = append(d.events[n-1].text, e.text...)
			return
		}
		d.events = append(d.events, e)
	}
	r := &Reader{
		OnText: func(p []byte, scrubbed bool) error {
			if len(p) == 0 {
				t.Errorf("OnText called with no bytes")
			}
			kind := byte(frameRaw)
			if scrubbed {
				kind = frameText
			}
			add(frameEvent{kind: kind, text: append([]byte{}, p...)})
			return nil
		},
		OnSecret: func(s Secret) error { add(frameEvent{kind: frameSecret, secret: s}); return nil },
		OnFile:   func(id workspace.FileID) error { add(frameEvent{kind: frameFile, file: id}); return nil },
		OnGap:    func(g Gap) error { add(frameEvent{kind: frameGap, gap: g}); return nil },
	}
	for len(b) > 0 {
		n := min(step, len(b))
		took, err := r.Write(b[:n])
		if err != nil {
			if took != 0 {
				t.Errorf("a failed Write reports %d bytes taken", took)
			}
			if _, again := r.Write([]byte{frameText, 0}); again != err {
				t.Errorf("a Write after the error %q returned %v, not that same error", err, again)
			}
			d.err = err
			break
		}
		if took != n {
			t.Errorf("Write took %d of %d bytes without an error", took, n)
		}
		b = b[n:]
	}
	d.meta, d.gotMeta = r.Meta()
	d.complete = r.Complete()
	if d.err != nil && d.complete {
		t.Errorf("stream complete after the error %v", d.err)
	}
	return d
}

// reported renders the handler calls and the report, one line each, so that
// two decodings are compared (and shown) as text.
func (d decoding) reported() string {
	var b strings.Builder
	for _, e := range d.events {
		switch e.kind {
		case frameText, frameRaw:
			fmt.Fprintf(&b, "%c %q\n", e.kind, e.text)
		case frameSecret:
			fmt.Fprintf(&b, "S %q %x\n", e.secret.Rule, e.secret.Secret)
		case frameFile:
			fmt.Fprintf(&b, "F %q\n", e.file.Key())
		case frameGap:
			g, _ := json.Marshal(e.gap)
			fmt.Fprintf(&b, "G %s\n", g)
		}
	}
	if d.gotMeta {
		m, _ := json.Marshal(d.meta)
		fmt.Fprintf(&b, "M %s\n", m)
	}
	return b.String()
}

// String is reported with how the stream ended.
func (d decoding) String() string {
	return fmt.Sprintf("%scomplete %v, error %v", d.reported(), d.complete, d.err)
}

// encode writes d's handler calls and report again, as a tool would.
func (d decoding) encode(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, e := range d.events {
		var err error
		switch e.kind {
		case frameText:
			err = w.Text(e.text)
		case frameRaw:
			err = w.Raw(e.text)
		case frameSecret:
			err = w.Secret(e.secret.Rule, e.secret.Secret)
		case frameFile:
			err = w.File(e.file)
		case frameGap:
			err = w.Gap(e.gap)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if d.gotMeta {
		// Not w.Meta: it would put the writer's own counts in the report,
		// which has to go back as it was decoded.
		m, err := json.Marshal(d.meta)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.frame(frameMeta, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The daemon decodes whatever the sandbox sends. For any bytes, cut anywhere:
// no panic; the Reader reports the same calls, the same report and the same
// outcome however the stream is cut; an error is a malformed frame
// (errBadFrame), ends the stream and sticks; and what it did report,
// written again by a Writer, decodes to the same calls and report, complete.
// Frames a Writer wrote decode to what it wrote.
func FuzzFrameReader(f *testing.F) {
	var good bytes.Buffer
	fw := NewWriter(&good)
	fw.Text([]byte("hello\n"))
	fw.Secret("github-pat", []byte("ghp_x"))
	fw.File(workspace.FileID{Dev: 2049, Ino: 1234, Path: "/w/app.env"})
	fw.Raw([]byte("raw middle\n"))
	fw.Text(nil)
	fw.Meta(Meta{})
	const goodReported = "T \"hello\\n\"\n" +
		"S \"github-pat\" 6768705f78\n" +
		"F \"2049:1234:/w/app.env\"\n" +
		"R \"raw middle\\n\"\n" +
		"M {\"findings\":{\"github-pat\":1}}\n"

	var gap bytes.Buffer
	gw := NewWriter(&gap)
	gw.Text([]byte("head\n"))
	gw.Gap(Gap{From: 5, To: 20, Len: 40, Lines: 3, Line: 2, AtStart: true, Block: 256 << 10,
		Blocks: []GapBlock{{At: 0, Line: 2, AtStart: true, CRC: 7}}, Outline: []string{"func f()"}})
	gw.Secret("bin", []byte{0xff, 0x00, '\n'})
	gw.Meta(Meta{ExitCode: new(int)})

	// Frames spelled out, not written by a Writer, so that a Writer's
	// mistake cannot make the seeds agree with it.
	literal := func(kind byte, body string) []byte {
		return append(binary.AppendUvarint([]byte{kind}, uint64(len(body))), body...)
	}
	f.Add(bytes.Join([][]byte{
		literal(frameFile, `{"dev":1,"ino":2,"path":"/w/log"}`),
		literal(frameGap, `{"from":0,"to":10,"line":1,"at_start":true,"len":12,"lines":2,"block":262144,"blocks":[{"at":0,"line":1,"at_start":true,"crc":9}]}`),
		literal(frameRaw, "page\n"),
		literal(frameSecret, `{"rule":"aws","secret":"QUtJQQ=="}`),
		literal(frameMeta, `{"exit_code":1,"stages":{"read":0.5}}`),
	}, nil), uint8(6))
	f.Add(good.Bytes(), uint8(3))
	f.Add(gap.Bytes(), uint8(0))
	f.Add(good.Bytes()[:len(good.Bytes())-4], uint8(5)) // the report cut short
	f.Add([]byte{'T', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint8(1))
	f.Add([]byte{'T', 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, uint8(2))
	f.Add([]byte{'S', 3, '{', '}', '}'}, uint8(2))
	f.Add([]byte{'X', 0}, uint8(1))
	f.Add([]byte{'F', 2, '{', '}'}, uint8(1))
	f.Add([]byte("M\x0f{\"findings\":{}}M\x0f{\"exit_code\":3}T\x02ok"), uint8(4))
	f.Add([]byte("S\x1a{\"rule\":\"r\",\"secret\":null}R\x00T\x01a"), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		step := int(cut%16) + 1

		whole := decodeCut(t, data, max(len(data), 1))
		if whole.err != nil && !errors.Is(whole.err, errBadFrame) {
			t.Fatalf("error %v is not a malformed frame (errBadFrame)", whole.err)
		}
		if cut := decodeCut(t, data, step); cut.String() != whole.String() {
			t.Fatalf("%q in writes of %d bytes decodes to\n%s\nin one write to\n%s", data, step, cut, whole)
		}

		again := decodeCut(t, whole.encode(t), step)
		if again.err != nil || !again.complete || again.reported() != whole.reported() {
			t.Fatalf("%q decodes to\n%s\nwritten again, to\n%s", data, whole, again)
		}

		if got := decodeCut(t, good.Bytes(), step); got.err != nil || !got.complete || got.reported() != goodReported {
			t.Fatalf("well-formed frames in writes of %d bytes decode to\n%s", step, got)
		}
	})
}

// No frame may announce more than its kind's limit: the Reader refuses the
// header before any of the body arrives, and takes one at the limit.
func TestFrameLimits(t *testing.T) {
	header := func(kind byte, size uint64) []byte {
		return binary.AppendUvarint([]byte{kind}, size)
	}
	cases := []struct {
		name   string
		header []byte
		bad    bool
	}{
		{"text at the limit", header(frameText, maxFrame), false},
		{"text past the limit", header(frameText, maxFrame+1), true},
		{"raw at the limit", header(frameRaw, maxFrame), false},
		{"raw past the limit", header(frameRaw, maxFrame+1), true},
		{"secret at the limit", header(frameSecret, maxSmallFrame), false},
		{"secret past the limit", header(frameSecret, maxSmallFrame+1), true},
		{"gap at the limit", header(frameGap, maxSmallFrame), false},
		{"gap past the limit", header(frameGap, maxSmallFrame+1), true},
		{"file at the limit", header(frameFile, maxSmallFrame), false},
		{"file past the limit", header(frameFile, maxSmallFrame+1), true},
		{"report at the limit", header(frameMeta, maxSmallFrame), false},
		{"report past the limit", header(frameMeta, maxSmallFrame+1), true},
		{"largest length", header(frameText, 1<<64-1), true},
		{"length past 64 bits", []byte{frameText, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, true},
		{"unknown type", header('X', 0), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Reader{
				OnText:   func([]byte, bool) error { return nil },
				OnSecret: func(Secret) error { return nil },
				OnGap:    func(Gap) error { return nil },
			}
			n, err := r.Write(c.header)
			switch {
			case c.bad && !errors.Is(err, errBadFrame):
				t.Fatalf("header %x: Write = %d, %v; want errBadFrame", c.header, n, err)
			case !c.bad && (err != nil || n != len(c.header)):
				t.Fatalf("header %x: Write = %d, %v; want %d, nil", c.header, n, err, len(c.header))
			case !c.bad && r.Complete():
				t.Fatalf("header %x: complete with the whole body to come", c.header)
			}
		})
	}
}

// A gap's salient blocks cross with their kind: a summary stays a summary.
func TestSalientKindCrosses(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Gap(Gap{From: 0, To: 10, Len: 10, Lines: 1, Line: 1, AtStart: true, Block: 256 << 10,
		Blocks: []GapBlock{{At: 0, Line: 1, AtStart: true}},
		Salient: []SalientBlock{{FirstLine: 1, LastLine: 1, Rule: "summary", Family: "go", Kind: BlockSummary, Text: "ok\n"},
			{FirstLine: 2, LastLine: 2, Rule: "fail", Family: "go", Kind: BlockFailure, Text: "FAIL\n"}}})
	w.Meta(Meta{})
	var got []SalientBlock
	r := &Reader{OnText: func([]byte, bool) error { return nil }, OnGap: func(g Gap) error { got = g.Salient; return nil }}
	if _, err := r.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != BlockSummary || got[1].Kind != BlockFailure {
		t.Fatalf("salient blocks arrived as %+v", got)
	}
}
