package intercept

import (
	"bytes"
	"errors"
	"testing"

	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/jsonscan"
)

// FuzzClassifiedEnvelope: for every message (and every batch element)
// jsonrpc.Classify accepts, the envelope the engine takes from the
// classification is the one it reads itself: same kind, id, method and
// tool, and readEnvelope refuses nothing Classify accepts. The engine's
// allowlist and pins rest on this.
func FuzzClassifiedEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"y"}}}`,
		` {"jsonrpc":"2.0","id":"a\u0062","method":"tools/c\u0061ll","params":{"n\u0061me":"e\u0063ho"}} `,
		`{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"rm"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","id":2,"result":null}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","ID":2}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","name":"b"}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","NAME":"b"}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":3}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		info, err := jsonrpc.Classify(raw)
		if err != nil {
			return
		}
		check := func(b []byte, in *jsonrpc.Info) {
			got, ok := classifiedEnvelope(b, in)
			want, err := readEnvelope(b)
			if err != nil {
				t.Fatalf("%q: Classify accepts it (%v), readEnvelope refuses: %v", b, in.Kind, err)
			}
			if !ok {
				t.Fatalf("%q: no envelope from %+v", b, in)
			}
			if got.kind != want.kind || got.method != want.method || got.tool != want.tool || !bytes.Equal(got.id, want.id) ||
				(got.id == nil) != (want.id == nil) || got.valid != want.valid || got.object != want.object ||
				got.start != want.start || got.end != want.end {
				t.Fatalf("%q: envelope from the classification %+v, read %+v", b, got, want)
			}
		}
		if info.Kind != jsonrpc.KindBatch {
			check(raw, &info)
			return
		}
		s, _, err := jsonscan.Document(raw)
		if err != nil {
			t.Fatalf("%q: Classify accepts it, document refuses: %v", raw, err)
		}
		i := 0
		if _, err := jsonscan.Array(raw, s, 0, func(_, a, z int) error {
			if i >= len(info.Batch) {
				t.Fatalf("%q: more elements than the %d classified", raw, len(info.Batch))
			}
			check(raw[a:z:z], &info.Batch[i])
			i++
			return nil
		}); err != nil || i != len(info.Batch) {
			t.Fatalf("%q: %d elements of %d, %v", raw, i, len(info.Batch), err)
		}
	})
}

// TestReadEnvelopeRefusesAmbiguity: what the engine reads itself (an edit of
// a held message) is held to Classify's rule: an envelope member, or the
// tool's name, that appears twice or also in another letter case is refused.
func TestReadEnvelopeRefusesAmbiguity(t *testing.T) {
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`,
		`{"jsonrpc":"2.0","ID":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","NAME":"evil"}}`,
	} {
		if env, err := readEnvelope([]byte(raw)); !errors.Is(err, jsonscan.ErrDuplicate) {
			t.Errorf("%s: %+v, %v", raw, env, err)
		}
	}
	env, err := readEnvelope([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","x":1,"x":2},"y":1,"Y":2}`))
	if err != nil || env.tool != "a" || env.kind != jsonrpc.KindRequest {
		t.Errorf("duplicates outside the envelope and the tool's name: %+v, %v", env, err)
	}
}
