package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

var classifySeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"y"}}}`,
	`{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"a","Method":"b"}`,
	`{"jsonrpc":"2.0","\u0069d":1e2,"method":"x\ud800"}`,
	`{"jsonrpc":"2.0","id":-0.0e-0,"result":[[[{}]]]}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xc3\x28\"}",
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`,
}

// FuzzClassify: Classify never panics, refuses what encoding/json does not
// accept, and for what it accepts reads the same id, method and tool as
// encoding/json does, by map and by (case-insensitive) struct.
func FuzzClassify(f *testing.F) {
	for _, s := range classifySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		info, err := Classify(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || info.Kind != KindInvalid {
				t.Fatalf("error %v with kind %v", err, info.Kind)
			}
			return
		}
		if info.Kind == KindBatch {
			var elems []json.RawMessage
			if err := json.Unmarshal(raw, &elems); err != nil {
				t.Fatalf("accepted batch %q: %v", raw, err)
			}
			if len(elems) != len(info.Batch) {
				t.Fatalf("batch of %d, encoding/json sees %d", len(info.Batch), len(elems))
			}
			for i, el := range elems {
				checkAgainstEncodingJSON(t, el, info.Batch[i])
			}
			return
		}
		checkAgainstEncodingJSON(t, raw, info)
		if k := Key(ClientToServer, info.ID); (k == "") != (info.Kind == KindNotification || string(info.ID) == "null") {
			t.Errorf("%q: key %q for %v with id %s", raw, k, info.Kind, info.ID)
		}
	})
}

// FuzzReader: framing arbitrary bytes never panics, never returns a message
// holding a "\n" or over the limit, and loses no non-blank line: what it
// returns, rejoined, is the input's non-blank lines (lines over the limit,
// blank or not, are reported as too large).
func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\r\n\n"), uint16(0))
	f.Add([]byte("123456\nok\r\n  \n\rx"), uint16(5))
	f.Add([]byte("\r\r\n\n\r"), uint16(1))
	f.Fuzz(func(t *testing.T, in []byte, max uint16) {
		limit := int(max % 64)
		for _, src := range []io.Reader{bytes.NewReader(in), iotest.OneByteReader(bytes.NewReader(in))} {
			r := NewReader(src, limit)
			eff := limit
			if eff <= 0 {
				eff = DefaultMaxMessage
			}
			var got [][]byte
			large := 0
			for range len(in) + 2 {
				m, err := r.Read()
				if err == io.EOF {
					break
				}
				if errors.Is(err, ErrTooLarge) {
					large++
					continue
				}
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				if bytes.IndexByte(m, '\n') >= 0 || len(m) > eff || blank(m) {
					t.Fatalf("bad message %q (limit %d)", m, eff)
				}
				got = append(got, m)
			}
			var want [][]byte
			wantLarge := 0
			for _, line := range bytes.Split(in, []byte("\n")) {
				line = bytes.TrimSuffix(line, []byte("\r"))
				if len(line) > eff { // even a blank one: the size is known first
					wantLarge++
					continue
				}
				if blank(line) {
					continue
				}
				want = append(want, line)
			}
			if large != wantLarge || !bytes.Equal(bytes.Join(got, []byte{0}), bytes.Join(want, []byte{0})) || len(got) != len(want) {
				t.Fatalf("got %q (%d too large), want %q (%d)", got, large, want, wantLarge)
			}
		}
	})
}

// FuzzCorrelate feeds a correlator messages built from untrusted bytes in both
// directions: it never panics, Pending never goes negative or above Len, Len
// never passes the bound, and a request answered is forgotten.
func FuzzCorrelate(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"a"}`), []byte(`{"jsonrpc":"2.0","id":1.0,"result":{}}`), []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`), uint8(3))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"x","method":"a"},{"jsonrpc":"2.0","id":"y","method":"b"}]`), []byte(`[{"jsonrpc":"2.0","id":"y","result":1}]`), []byte(`{}`), uint8(0))
	f.Fuzz(func(t *testing.T, a, b, c []byte, ops uint8) {
		const bound = 4
		corr := NewCorrelator(bound)
		msgs := [][]byte{a, b, c}
		for i := range 12 {
			raw := msgs[i%3]
			dir := ClientToServer
			if ops>>(i%8)&1 == 1 {
				dir = ServerToClient
			}
			info, err := Classify(raw)
			if err != nil {
				continue
			}
			m := &Message{Seq: uint64(i + 1), Dir: dir, Info: info, Raw: raw}
			corr.Request(m)
			if info.Kind == KindRequest {
				if _, ok := corr.Answer(dir.Reverse(), info.ID); !ok && Key(dir, info.ID) != "" {
					t.Fatalf("request %q not found right after it was remembered", raw)
				}
				corr.Request(m)
			}
			if _, _, ok := corr.Response(m); ok && info.Kind == KindResponse {
				if _, again := corr.Answer(dir, info.ID); again {
					t.Fatalf("response %q matched twice", raw)
				}
			}
			p1, p2, n := corr.Pending(ClientToServer), corr.Pending(ServerToClient), corr.Len()
			if p1 < 0 || p2 < 0 || p1+p2 > n || n > bound {
				t.Fatalf("pending %d+%d, len %d, bound %d", p1, p2, n, bound)
			}
		}
	})
}
