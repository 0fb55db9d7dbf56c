package lite

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := []Event{{Output: []byte("a\x00\xffb")}, {Result: &Result{ExitCode: 2, TokensUsed: 7}}}
	for i := range in {
		if err := Write(&buf, &in[i]); err != nil {
			t.Fatal(err)
		}
	}
	var a, b Event
	if err := Read(&buf, &a, 1<<20); err != nil || string(a.Output) != "a\x00\xffb" {
		t.Fatalf("first: %+v %v", a, err)
	}
	if err := Read(&buf, &b, 1<<20); err != nil || b.Result == nil || b.Result.ExitCode != 2 || b.Result.TokensUsed != 7 {
		t.Fatalf("second: %+v %v", b, err)
	}
	if err := Read(&buf, &b, 1<<20); err != io.EOF {
		t.Fatalf("after the last message: %v, want io.EOF", err)
	}
}

func TestReadLimits(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"too large", binary.BigEndian.AppendUint32(nil, 1<<30), ErrTooLarge},
		{"short body", append(binary.BigEndian.AppendUint32(nil, 10), "{}"...), io.ErrUnexpectedEOF},
		{"short header", []byte{0, 0}, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		var e Event
		if err := Read(bytes.NewReader(tt.in), &e, 1<<20); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

// The proxy links this package so that it need not link gRPC or protobuf; keep
// it that way (their initialisation doubled the proxy's start-up).
func TestProxyLinksNeitherGRPCNorProtobuf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/contextd/contextd/cmd/contextd-proxy").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "google.golang.org/") {
			t.Errorf("the proxy links %s", p)
		}
	}
}

// frameOf is what a frame reader must make of b with limit max, worked out
// from the format: the error class (nil: none; errAny: an error of no
// class), the body and whether it is a raw frame.
func frameOf(b []byte, max int) (class error, body []byte, raw bool) {
	switch {
	case len(b) == 0:
		return io.EOF, nil, false
	case len(b) < 4:
		return io.ErrUnexpectedEOF, nil, false
	}
	n := int(binary.BigEndian.Uint32(b) &^ rawFrame)
	raw = b[0]&0x80 != 0
	switch {
	case n > max:
		return ErrTooLarge, nil, raw
	case len(b)-4 < n:
		return io.ErrUnexpectedEOF, nil, raw
	}
	return nil, b[4 : 4+n], raw
}

// jsonFrame frames body as Write does.
func jsonFrame(body string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// errAny stands for an error that has no class to check with errors.Is.
var errAny = errors.New("some error")

// checkRead holds the outcome of a read of b (err, and the reader's bytes
// left) to want, for a frame whose body is n bytes long; ok reports whether
// the read succeeded as it should.
func checkRead(t *testing.T, b []byte, err, want error, n, left int) (ok bool) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%q: %v, want no error", b, err)
	case want == errAny && err == nil, want != nil && want != errAny && !errors.Is(err, want):
		t.Fatalf("%q: error %v, want %v", b, err, want)
	}
	if want != nil {
		return false
	}
	if wantLeft := len(b) - 4 - n; left != wantLeft {
		t.Fatalf("%q: %d bytes left after one message, want %d", b, left, wantLeft)
	}
	return true
}

// sameAfterWrite checks that v, written by Write and read back by read,
// encodes as it did.
func sameAfterWrite(t *testing.T, v, again any, read func(io.Reader, int) error) {
	t.Helper()
	before, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, v); err != nil {
		t.Fatal(err)
	}
	if err := read(&buf, buf.Len()); err != nil {
		t.Fatalf("%s written again does not read: %v", before, err)
	}
	if after, _ := json.Marshal(again); string(after) != string(before) {
		t.Fatalf("written again, %s reads as %s", before, after)
	}
}

// FuzzRead: the daemon reads requests from any local process of its user.
// Whatever the bytes, Read takes exactly one frame: the errors are those the
// format calls for (io.EOF, io.ErrUnexpectedEOF for a cut frame,
// ErrTooLarge past the limit, an error for a raw frame or a body that is not
// a Request), and a request it reads, written again, reads the same.
func FuzzRead(f *testing.F) {
	var ok bytes.Buffer
	Write(&ok, &Request{Call: &Call{Tool: "safe_bash", Input: []byte(`{"command":"true"}`), Cwd: "/", Env: map[string]string{"A": "1"}}})
	f.Add(ok.Bytes())
	f.Add(append(ok.Bytes(), 0, 0, 0, 2, '{', '}'))
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0, 0, 0, 3, '{', '}'})
	f.Add([]byte{0, 0, 0, 1, '{'})
	f.Add([]byte{0, 0, 0, 2})
	f.Add([]byte{0, 0, 1})
	f.Add([]byte{})
	f.Add([]byte{0x80, 0, 0, 2, '{', '}'})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add(jsonFrame(`{"call":{"input": [1, 2], "env":{"B":"\u00e9"}}}`))
	f.Add(jsonFrame(`{"call":1.5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		const max = 1 << 16
		want, body, raw := frameOf(b, max)
		if want == nil && (raw || json.Unmarshal(body, new(Request)) != nil) {
			want = errAny
		}
		var r Request
		in := bytes.NewReader(b)
		err := Read(in, &r, max)
		if !checkRead(t, b, err, want, len(body), in.Len()) {
			return
		}
		var again Request
		sameAfterWrite(t, &r, &again, func(in io.Reader, max int) error { return Read(in, &again, max) })
	})
}

// FuzzReadEvent: the proxy reads a call's events from the daemon. Whatever
// the bytes, ReadEvent takes exactly one frame, with the errors the format
// calls for; a raw frame is the event's output, byte for byte, and nothing
// else; an event read from JSON, written again, reads the same.
func FuzzReadEvent(f *testing.F) {
	var ok bytes.Buffer
	WriteOutput(&ok, []byte("out"))
	Write(&ok, &Event{Result: &Result{ExitCode: 3}})
	f.Add(ok.Bytes())
	f.Add(ok.Bytes()[7:])
	f.Add([]byte{0x80, 0, 0, 1, '{'})
	f.Add([]byte{0x80, 0, 0, 0})
	f.Add([]byte{0x80, 0, 0, 9, 'x'})
	f.Add([]byte{0, 0, 0, 2, '[', ']'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add(append(jsonFrame(`{"output":"b3V0","admin":{ "a" : 1 }}`), "xyz"...))
	f.Fuzz(func(t *testing.T, b []byte) {
		const max = 1 << 16
		want, body, raw := frameOf(b, max)
		if want == nil && !raw && json.Unmarshal(body, new(Event)) != nil {
			want = errAny
		}
		var ev Event
		in := bytes.NewReader(b)
		err := ReadEvent(in, &ev, max)
		if !checkRead(t, b, err, want, len(body), in.Len()) {
			return
		}
		if raw {
			if !bytes.Equal(ev.Output, body) || ev.Result != nil || ev.Error != nil || ev.Status != nil || ev.Wrap != nil || ev.Admin != nil {
				t.Fatalf("raw frame %q read as %+v", body, ev)
			}
			return
		}
		var again Event
		sameAfterWrite(t, &ev, &again, func(in io.Reader, max int) error { return ReadEvent(in, &again, max) })
	})
}

// A call's output comes as raw frames to a client that asked, mixed with JSON
// events; ReadEvent reads both, and Read (which expects JSON) refuses a raw
// frame instead of misreading it.
func TestRawOutputFrames(t *testing.T) {
	var buf bytes.Buffer
	out := []byte("a\x00\xff\"b\\\n")
	if err := WriteOutput(&buf, out); err != nil {
		t.Fatal(err)
	}
	// An older daemon sends output as JSON: still read.
	if err := Write(&buf, &Event{Output: []byte("json")}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&buf, &Event{Result: &Result{ExitCode: 1}}); err != nil {
		t.Fatal(err)
	}
	var a, b, c Event
	if err := ReadEvent(&buf, &a, 1<<20); err != nil || !bytes.Equal(a.Output, out) || a.Result != nil {
		t.Fatalf("raw frame: %+v %v", a, err)
	}
	if err := ReadEvent(&buf, &b, 1<<20); err != nil || string(b.Output) != "json" {
		t.Fatalf("JSON output: %+v %v", b, err)
	}
	if err := ReadEvent(&buf, &c, 1<<20); err != nil || c.Result == nil || c.Result.ExitCode != 1 {
		t.Fatalf("result: %+v %v", c, err)
	}

	buf.Reset()
	WriteOutput(&buf, out)
	var req Request
	if err := Read(&buf, &req, 1<<20); err == nil || !strings.Contains(err.Error(), "raw output frame") {
		t.Fatalf("Read of a raw frame: %v", err)
	}
	buf.Reset()
	WriteOutput(&buf, make([]byte, 100))
	if err := ReadEvent(&buf, &a, 99); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("raw frame over the limit: %v", err)
	}
}

// An older daemon ignores RawOutput (json.Unmarshal skips unknown members);
// an older proxy never sends it, and a request without it decodes to false.
func TestRawOutputOptional(t *testing.T) {
	var buf bytes.Buffer
	Write(&buf, &Request{Call: &Call{Tool: "t"}})
	if !strings.Contains(buf.String(), `{"call":`) || strings.Contains(buf.String(), "raw_output") {
		t.Fatalf("request without the flag: %q", buf.String()[4:])
	}
	var req Request
	if err := Read(&buf, &req, 1<<20); err != nil || req.RawOutput {
		t.Fatalf("%+v %v", req, err)
	}
	type oldRequest struct {
		Call *Call `json:"call,omitempty"`
	}
	Write(&buf, &Request{Call: &Call{Tool: "t"}, RawOutput: true})
	var old oldRequest
	if err := Read(&buf, &old, 1<<20); err != nil || old.Call == nil || old.Call.Tool != "t" {
		t.Fatalf("an older daemon's decode: %+v %v", old, err)
	}
}

// BenchmarkOutput sends one piece of a call's output and reads it back, as
// JSON (base64 in a document) and as a raw frame, side by side.
func BenchmarkOutput(b *testing.B) {
	for _, n := range []int{2 << 10, 8 << 10, 64 << 10, 1 << 20} {
		data := bytes.Repeat([]byte("ok  \tgithub.com/x/y\t0.01s\n"), n/26+1)[:n]
		for _, mode := range []string{"json", "raw"} {
			b.Run(fmt.Sprintf("%s/%dKiB", mode, n>>10), func(b *testing.B) {
				var buf bytes.Buffer
				b.SetBytes(int64(n))
				for b.Loop() {
					buf.Reset()
					var err error
					if mode == "raw" {
						err = WriteOutput(&buf, data)
					} else {
						err = Write(&buf, &Event{Output: data})
					}
					var ev Event
					if err == nil {
						err = ReadEvent(&buf, &ev, 64<<20)
					}
					if err != nil || len(ev.Output) != n {
						b.Fatalf("%v, %d bytes", err, len(ev.Output))
					}
				}
			})
		}
	}
}
