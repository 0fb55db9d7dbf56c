package lite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := []Event{{Output: []byte("a\x00\xffb")}, {Result: &Result{ExitCode: 2, Refs: []string{}, TokensUsed: 7}}}
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
