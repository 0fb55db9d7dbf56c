package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
)

func TestClassify(t *testing.T) {
	long := strings.Repeat("x", MaxMethodLen+1)
	tests := []struct {
		name   string
		raw    string
		kind   Kind
		id     string
		method string
		tool   string
		cancel string
		err    bool
	}{
		{name: "request", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, kind: KindRequest, id: "1", method: "tools/list"},
		{name: "request string id", raw: `{"method":"ping","id":"a-1","jsonrpc":"2.0"}`, kind: KindRequest, id: `"a-1"`, method: "ping"},
		{name: "request with params first", raw: `{"params":{"arguments":{"x":[1,{"name":"no"}]},"name":"echo"},"id":7,"jsonrpc":"2.0","method":"tools/call"}`, kind: KindRequest, id: "7", method: "tools/call", tool: "echo"},
		{name: "tools/call escaped name", raw: `{"jsonrpc":"2.0","id":2,"method":"tools\/call","params":{"name":"ec\u0068o"}}`, kind: KindRequest, id: "2", method: "tools/call", tool: "echo"},
		{name: "tools/call notification", raw: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"rm"}}`, kind: KindNotification, method: "tools/call", tool: "rm"},
		{name: "tools/call notification without a name", raw: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":1}}`, kind: KindNotification, method: "tools/call"},
		{name: "tools/call notification without params", raw: `{"jsonrpc":"2.0","method":"tools/call"}`, kind: KindNotification, method: "tools/call"},
		{name: "notification", raw: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kind: KindNotification, method: "notifications/initialized"},
		{name: "cancellation", raw: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"x"}}`, kind: KindNotification, method: "notifications/cancelled", cancel: "5"},
		{name: "cancellation without id", raw: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`, kind: KindNotification, method: "notifications/cancelled"},
		{name: "response", raw: `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, kind: KindResponse, id: "1"},
		{name: "response null result", raw: `{"jsonrpc":"2.0","id":1,"result":null}`, kind: KindResponse, id: "1"},
		{name: "error", raw: `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}`, kind: KindError, id: `"x"`},
		{name: "error null id", raw: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, kind: KindError, id: "null"},
		{name: "whitespace around", raw: " \t\r\n{ \"jsonrpc\" : \"2.0\" , \"id\" : -1.5e3 , \"result\" : { } }\n ", kind: KindResponse, id: "-1.5e3"},
		{name: "unknown fields", raw: `{"jsonrpc":"2.0","id":1,"result":{},"x-extra":{"a":[true,false,null,"\u00e9"]}}`, kind: KindResponse, id: "1"},

		{name: "empty", raw: ``, err: true},
		{name: "blank", raw: `   `, err: true},
		{name: "not object", raw: `"hello"`, err: true},
		{name: "no jsonrpc", raw: `{"id":1,"method":"x"}`, err: true, id: "1", method: "x"},
		{name: "wrong version", raw: `{"jsonrpc":"1.0","id":1,"method":"x"}`, err: true},
		{name: "version not string", raw: `{"jsonrpc":2.0,"id":1,"method":"x"}`, err: true},
		{name: "method not string", raw: `{"jsonrpc":"2.0","id":1,"method":3}`, err: true, id: "1"},
		{name: "empty method", raw: `{"jsonrpc":"2.0","id":1,"method":""}`, err: true},
		{name: "long method", raw: `{"jsonrpc":"2.0","id":1,"method":"` + long + `"}`, err: true},
		{name: "id object", raw: `{"jsonrpc":"2.0","id":{},"method":"x"}`, err: true},
		{name: "id bool", raw: `{"jsonrpc":"2.0","id":true,"method":"x"}`, err: true},
		{name: "null id request", raw: `{"jsonrpc":"2.0","id":null,"method":"x"}`, err: true},
		{name: "result null id", raw: `{"jsonrpc":"2.0","id":null,"result":{}}`, err: true},
		{name: "result no id", raw: `{"jsonrpc":"2.0","result":{}}`, err: true},
		{name: "error no id", raw: `{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}`, err: true},
		{name: "error not object", raw: `{"jsonrpc":"2.0","id":1,"error":"bad"}`, err: true},
		{name: "result and error", raw: `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, err: true},
		{name: "method and result", raw: `{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, err: true},
		{name: "nothing", raw: `{"jsonrpc":"2.0","id":1}`, err: true},
		{name: "params scalar", raw: `{"jsonrpc":"2.0","id":1,"method":"x","params":3}`, err: true},
		{name: "tools/call no params", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, err: true},
		{name: "tools/call no name", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, err: true},
		{name: "tools/call name not string", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}`, err: true},
		{name: "tools/call array params", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["echo"]}`, err: true},
		{name: "duplicate method", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`, err: true},
		{name: "duplicate method by escape", raw: `{"jsonrpc":"2.0","id":1,"method":"a","m\u0065thod":"b"}`, err: true},
		{name: "duplicate id", raw: `{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`, err: true},
		{name: "folded method", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`, err: true},
		{name: "folded id", raw: `{"jsonrpc":"2.0","ID":1,"method":"x"}`, err: true},
		{name: "kelvin-folded key", raw: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{},\"re\u017fult\":1}", err: true},
		{name: "duplicate tool name", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","name":"evil"}}`, err: true},
		{name: "folded tool name", raw: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","NAME":"evil"}}`, err: true},
		{name: "duplicate tool name in a notification", raw: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"safe","name":"evil"}}`, err: true},
		{name: "folded tool name in a notification", raw: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"safe","Name":"evil"}}`, err: true},
		{name: "trailing data", raw: `{"jsonrpc":"2.0","method":"x"}{}`, err: true},
		{name: "trailing comma", raw: `{"jsonrpc":"2.0","method":"x",}`, err: true},
		{name: "broken deep value", raw: `{"jsonrpc":"2.0","id":1,"result":{"a":[1,2,{"b":tru}]}}`, err: true},
		{name: "bad number", raw: `{"jsonrpc":"2.0","id":01,"result":{}}`, err: true},
		{name: "bad escape", raw: `{"jsonrpc":"2.0","id":1,"result":"\x"}`, err: true},
		{name: "control char", raw: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\tb\"}", err: true},
		{name: "invalid utf-8", raw: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}", err: true},
		{name: "unterminated", raw: `{"jsonrpc":"2.0","id":1,"result":{"a":[`, err: true},
		{name: "empty batch", raw: `[]`, err: true},
		{name: "batch of scalars", raw: `[1,2]`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := Classify([]byte(tt.raw))
			if tt.err {
				if err == nil {
					t.Fatalf("Classify(%s) = %+v, want an error", tt.raw, info)
				}
				if !errors.Is(err, ErrInvalid) || !errors.Is(err, catalog.ErrBadInput) {
					t.Errorf("error %v does not wrap ErrInvalid and catalog.ErrBadInput", err)
				}
				if info.Kind != KindInvalid {
					t.Errorf("Kind = %v, want invalid", info.Kind)
				}
				if tt.id != "" && string(info.ID) != tt.id || tt.method != "" && info.Method != tt.method {
					t.Errorf("partial Info = id %s method %q, want %s %q", info.ID, info.Method, tt.id, tt.method)
				}
				return
			}
			if err != nil {
				t.Fatalf("Classify(%s): %v", tt.raw, err)
			}
			if info.Kind != tt.kind || string(info.ID) != tt.id || info.Method != tt.method || info.Tool != tt.tool || string(info.CancelID) != tt.cancel {
				t.Errorf("Classify(%s) = %v id=%s method=%q tool=%q cancel=%s, want %v %s %q %q %s",
					tt.raw, info.Kind, info.ID, info.Method, info.Tool, info.CancelID, tt.kind, tt.id, tt.method, tt.tool, tt.cancel)
			}
		})
	}
}

func TestClassifyErrorsDoNotQuoteContent(t *testing.T) {
	secret := "ghp_" + strings.Repeat("A", 36)
	for _, raw := range []string{
		`{"jsonrpc":"` + secret + `","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","method":"` + secret + `"}`,
		`{"jsonrpc":"2.0","id":1,"result":"` + secret + `\q"}`,
	} {
		_, err := Classify([]byte(raw))
		if err == nil {
			t.Fatalf("Classify(%s): no error", raw)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q quotes the message", err)
		}
	}
}

func TestClassifyBatch(t *testing.T) {
	raw := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},
	          {"jsonrpc":"2.0","method":"notifications/progress","params":{}},
	          {"jsonrpc":"2.0","id":"s1","result":{}}]`
	info, err := Classify([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != KindBatch || len(info.Batch) != 3 {
		t.Fatalf("got %v with %d elements", info.Kind, len(info.Batch))
	}
	want := []Kind{KindRequest, KindNotification, KindResponse}
	for i, el := range info.Batch {
		if el.Kind != want[i] {
			t.Errorf("element %d: %v, want %v", i, el.Kind, want[i])
		}
	}
	if info.Batch[0].Tool != "a" || string(info.Batch[2].ID) != `"s1"` {
		t.Errorf("elements read wrong: %+v", info.Batch)
	}

	// One bad element spoils the batch; the good ones before it are reported.
	info, err = Classify([]byte(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b","method":"c"}]`))
	if !errors.Is(err, ErrInvalid) || info.Kind != KindInvalid || len(info.Batch) != 2 ||
		info.Batch[0].Kind != KindRequest || info.Batch[1].Kind != KindInvalid || string(info.Batch[1].ID) != "2" {
		t.Errorf("bad batch: %v, %+v", err, info)
	}

	var big bytes.Buffer
	big.WriteByte('[')
	for i := 0; i <= MaxBatch; i++ {
		if i > 0 {
			big.WriteByte(',')
		}
		big.WriteString(`{"jsonrpc":"2.0","method":"n"}`)
	}
	big.WriteByte(']')
	if _, err := Classify(big.Bytes()); !errors.Is(err, ErrInvalid) {
		t.Errorf("batch over MaxBatch: %v", err)
	}
}

func TestClassifyDepth(t *testing.T) {
	// The envelope's own object counts, as it does for encoding/json (whose
	// limit, 10000, is far above MaxDepth).
	nest := func(n int) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	}
	if _, err := Classify(nest(MaxDepth)); !errors.Is(err, ErrInvalid) || !json.Valid(nest(MaxDepth)) {
		t.Errorf("depth %d: %v", MaxDepth+1, err)
	}
	if _, err := Classify(nest(MaxDepth - 1)); err != nil || !json.Valid(nest(MaxDepth-1)) {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	// Objects and arrays count alike: the envelope and 2*255 containers.
	n := (MaxDepth - 2) / 2
	ok := `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat(`{"a":[`, n) + strings.Repeat("]}", n) + `}`
	if _, err := Classify([]byte(ok)); err != nil {
		t.Errorf("depth %d: %v", 2*n+1, err)
	}
	over := `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat(`{"a":[`, n+1) + strings.Repeat("]}", n+1) + `}`
	if _, err := Classify([]byte(over)); !errors.Is(err, ErrInvalid) {
		t.Errorf("depth %d: %v", 2*n+3, err)
	}
	// A batch's array counts as well.
	batch := `[{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2) + `}]`
	if _, err := Classify([]byte(batch)); err != nil {
		t.Errorf("batch at depth %d: %v", MaxDepth, err)
	}
	batch = `[{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}]`
	if _, err := Classify([]byte(batch)); !errors.Is(err, ErrInvalid) {
		t.Errorf("batch at depth %d: %v", MaxDepth+1, err)
	}
}

// TestClassifyAgreesWithEncodingJSON checks the envelope against encoding/json's
// reading of the same bytes, by map (exact keys, as JavaScript peers read them)
// and by struct (case-insensitive keys, as Go peers read them).
func TestClassifyAgreesWithEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x\u00e9\ud83d\ude00"}}`,
		`{"jsonrpc":"2.0","id":"\u0031\"","method":"a\/b\\c"}`,
		`{"jsonrpc":"2.0","id":1e400,"result":{}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\ud800 lone\"}",
	} {
		info, err := Classify([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		checkAgainstEncodingJSON(t, []byte(raw), info)
	}
}

func checkAgainstEncodingJSON(t *testing.T, raw []byte, info Info) {
	t.Helper()
	if !json.Valid(raw) {
		t.Fatalf("Classify accepted %q, which encoding/json says is not JSON", raw)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("map decode of %q: %v", raw, err)
	}
	if !bytes.Equal(m["id"], info.ID) {
		t.Errorf("%q: id %s, encoding/json says %s", raw, info.ID, m["id"])
	}
	var method string
	if len(m["method"]) > 0 {
		if err := json.Unmarshal(m["method"], &method); err != nil {
			t.Fatalf("%q: method: %v", raw, err)
		}
	}
	if method != info.Method {
		t.Errorf("%q: method %q, encoding/json says %q", raw, info.Method, method)
	}
	var st struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if err := json.Unmarshal(raw, &st); err == nil {
		if st.Method != info.Method || !bytes.Equal(st.ID, info.ID) || st.JSONRPC != "2.0" {
			t.Errorf("%q: struct decode sees method %q id %s version %q, Classify %q %s", raw, st.Method, st.ID, st.JSONRPC, info.Method, info.ID)
		}
		if info.Method == "tools/call" && info.Kind == KindRequest && st.Params.Name != info.Tool {
			t.Errorf("%q: struct decode sees tool %q, Classify %q", raw, st.Params.Name, info.Tool)
		}
	} else if info.Method == "tools/call" {
		t.Errorf("%q: Classify accepted a tools/call encoding/json cannot decode: %v", raw, err)
	}
}
