package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrorResponse(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want string
	}{
		{"7", `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"no \"way\"\n"}}`},
		{`"a"`, `{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"no \"way\"\n"}}`},
		{"", `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"no \"way\"\n"}}`},
	} {
		got := ErrorResponse(json.RawMessage(tc.id), CodeInternalError, "no \"way\"\n")
		if string(got) != tc.want {
			t.Errorf("ErrorResponse(%s) = %s", tc.id, got)
		}
		info, err := Classify(got)
		if err != nil || info.Kind != KindError {
			t.Errorf("ErrorResponse(%s) classifies as %v, %v", tc.id, info.Kind, err)
		}
	}
}

func TestLookup(t *testing.T) {
	raw := []byte(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p\u0031","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{}}}`)
	for _, tc := range []struct {
		path []string
		want string
	}{
		{[]string{"params", "name"}, `"p\u0031"`},
		{[]string{"params", "_meta", "io.modelcontextprotocol/protocolVersion"}, `"2026-07-28"`},
		{[]string{"params", "missing"}, ""},
		{[]string{"id", "x"}, ""},
		{nil, string(raw)},
	} {
		got, err := Lookup(raw, tc.path...)
		if err != nil || string(got) != tc.want {
			t.Errorf("Lookup(%q) = %s, %v; want %s", tc.path, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":1,"A":2}`, `{"a":`, `{"a":1} x`} {
		if _, err := Lookup([]byte(bad), "a"); !errors.Is(err, ErrInvalid) {
			t.Errorf("Lookup in %s: %v", bad, err)
		}
	}
}

func BenchmarkClassify(b *testing.B) {
	for _, tc := range []struct{ name, msg string }{
		{"call", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world","n":[1,2,3]}}}`},
		{"result-64KiB", `{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` + string(make64k()) + `"}]}}`},
		{"result-1MiB-structured", structuredResult(1 << 20)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			msg := []byte(tc.msg)
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if _, err := Classify(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func make64k() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = "abcdefgh ijklmnop\\n"[i%19]
	}
	if b[len(b)-1] == '\\' {
		b[len(b)-1] = 'x'
	}
	return b
}

// structuredResult is a tools/call result of about size bytes whose
// structuredContent is many small objects: what a scanner pays per value,
// key and bracket, where result-64KiB measures one long string.
func structuredResult(size int) string {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":42,"result":{"content":[],"structuredContent":{"rows":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"row %d","ok":true,"score":-%d.25e-3,"tags":["a","b\u00e9"],"next":null}`, i, i, i%97)
	}
	b.WriteString(`]}}}`)
	return b.String()
}
