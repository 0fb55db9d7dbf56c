package lite

import (
	"bytes"
	"encoding/binary"
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

// FuzzRead: the daemon reads requests from any local process of its user.
func FuzzRead(f *testing.F) {
	var ok bytes.Buffer
	Write(&ok, &Request{Call: &Call{Tool: "safe_bash", Input: []byte(`{"command":"true"}`), Cwd: "/"}})
	f.Add(ok.Bytes())
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Request
		err := Read(bytes.NewReader(b), &r, 1<<16)
		if err == nil && len(b) < 4 {
			t.Fatal("a message shorter than its header was accepted")
		}
	})
}

// FuzzReadEvent: the proxy reads events from the socket; a frame is read
// whole or refused, and a raw one is never taken for JSON or the reverse.
func FuzzReadEvent(f *testing.F) {
	var ok bytes.Buffer
	WriteOutput(&ok, []byte("out"))
	Write(&ok, &Event{Result: &Result{ExitCode: 3}})
	f.Add(ok.Bytes())
	f.Add([]byte{0x80, 0, 0, 1, '{'})
	f.Add([]byte{0x80, 0, 0, 9, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		var ev Event
		err := ReadEvent(bytes.NewReader(b), &ev, 1<<16)
		if err != nil || len(b) < 4 {
			return
		}
		n := int(binary.BigEndian.Uint32(b) &^ rawFrame)
		if b[0]&0x80 != 0 && !bytes.Equal(ev.Output, b[4:4+n]) {
			t.Fatalf("raw frame of %d bytes read as %q", n, ev.Output)
		}
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
