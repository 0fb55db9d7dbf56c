package intercept

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/contextd/contextd/mcp/jsonscan"
)

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Path
		err  bool
	}{
		{"", nil, false},
		{"params", Path{{Name: "params", Index: -1}}, false},
		{"params.arguments.path", Path{{Name: "params", Index: -1}, {Name: "arguments", Index: -1}, {Name: "path", Index: -1}}, false},
		{"result.content[0].text", Path{{Name: "result", Index: -1}, {Name: "content", Index: -1}, {Index: 0}, {Name: "text", Index: -1}}, false},
		{`params.arguments["file.name"]`, Path{{Name: "params", Index: -1}, {Name: "arguments", Index: -1}, {Name: "file.name", Index: -1}}, false},
		{`a["x]y"].b`, Path{{Name: "a", Index: -1}, {Name: "x]y", Index: -1}, {Name: "b", Index: -1}}, false},
		{"[2][3]", Path{{Index: 2}, {Index: 3}}, false},
		{".a", nil, true},
		{"a.", nil, true},
		{"a..b", nil, true},
		{"a[", nil, true},
		{"a[-1]", nil, true},
		{"a[x]", nil, true},
		{"a[0]b", nil, true},
		{"a]", nil, true},
		{`a["unterminated]`, nil, true},
		{"a.[0]", nil, true},
	} {
		got, err := ParsePath(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParsePath(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("ParsePath(%q) = %v, want %v", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParsePath(%q)[%d] = %+v, want %+v", tc.in, i, got[i], tc.want[i])
			}
		}
		// String writes a path ParsePath reads back the same.
		back, err := ParsePath(got.String())
		if err != nil || back.String() != got.String() {
			t.Errorf("ParsePath(%q).String() = %q does not read back: %v", tc.in, got.String(), err)
		}
	}
}

func TestLookup(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"/etc/passwd","n":[1,2,{"x":true}],"a.b":null}}}`)
	for _, tc := range []struct {
		path string
		want string
		ok   bool
	}{
		{"params.name", `"read"`, true},
		{"params.arguments.path", `"/etc/passwd"`, true},
		{"params.arguments.n[2].x", `true`, true},
		{"params.arguments.n[3]", ``, false},
		{`params.arguments["a.b"]`, `null`, true},
		{"params.arguments.path.deeper", ``, false}, // through a string: not found, no error
		{"params.missing", ``, false},
		{"id[0]", ``, false},
		{"", string(msg), true},
	} {
		s, e, ok, err := lookup(msg, 0, len(msg), MustPath(tc.path))
		if err != nil {
			t.Errorf("lookup(%s): %v", tc.path, err)
			continue
		}
		if ok != tc.ok || ok && string(msg[s:e]) != tc.want {
			t.Errorf("lookup(%s) = %q, %v; want %q, %v", tc.path, msg[s:e], ok, tc.want, tc.ok)
		}
	}
	// A duplicate member name on the path is an error, not a guess.
	dup := []byte(`{"params":{"name":"a","name":"b"}}`)
	if _, _, _, err := lookup(dup, 0, len(dup), MustPath("params.name")); !errors.Is(err, jsonscan.ErrDuplicate) {
		t.Errorf("lookup through a duplicate name: %v, want jsonscan.ErrDuplicate", err)
	}
	// So is the name in another letter case, which Go peers read as the
	// same member and others do not.
	folded := []byte(`{"params":{"name":"a","NAME":"b"}}`)
	if _, _, _, err := lookup(folded, 0, len(folded), MustPath("params.name")); !errors.Is(err, jsonscan.ErrDuplicate) {
		t.Errorf("lookup through a folded duplicate: %v, want jsonscan.ErrDuplicate", err)
	}
	// Off the path, duplicates are not this lookup's business.
	if _, _, ok, err := lookup(dup, 0, len(dup), MustPath("params")); err != nil || !ok {
		t.Errorf("lookup(params) with duplicates inside: %v, %v", ok, err)
	}
}

func TestSetDeletePath(t *testing.T) {
	for _, tc := range []struct {
		name, doc, path, val string
		del                  bool
		want                 string
		err                  bool
	}{
		{name: "replace keeps the rest byte for byte", doc: `{"a": 1 ,  "b":[1.50, 2e3]}`, path: "a", val: `"x"`, want: `{"a": "x" ,  "b":[1.50, 2e3]}`},
		{name: "add to an object", doc: `{"a":1}`, path: "b", val: `true`, want: `{"a":1,"b":true}`},
		{name: "add to an empty object", doc: `{ }`, path: "b", val: `2`, want: `{ "b":2}`},
		{name: "create the way there", doc: `{"params":{}}`, path: "params.arguments.dry_run", val: `true`, want: `{"params":{"arguments":{"dry_run":true}}}`},
		{name: "array element", doc: `{"a":[1,2,3]}`, path: "a[1]", val: `{"k":"v"}`, want: `{"a":[1,{"k":"v"},3]}`},
		{name: "missing element", doc: `{"a":[1]}`, path: "a[4]", val: `0`, err: true},
		{name: "through a string", doc: `{"a":"s"}`, path: "a.b", val: `0`, err: true},
		{name: "whole message", doc: `{"a":1}`, path: "", val: `[]`, want: `[]`},
		{name: "quoted name", doc: `{}`, path: `["a\"b"]`, val: `1`, want: `{"a\"b":1}`},
		{name: "delete first", doc: `{"a":1, "b":2, "c":3}`, path: "a", del: true, want: `{"b":2, "c":3}`},
		{name: "delete middle", doc: `{"a":1, "b":2, "c":3}`, path: "b", del: true, want: `{"a":1, "c":3}`},
		{name: "delete last", doc: `{"a":1, "b":2, "c":3}`, path: "c", del: true, want: `{"a":1, "b":2}`},
		{name: "delete only", doc: `{"a":{"x":1}}`, path: "a.x", del: true, want: `{"a":{}}`},
		{name: "delete element", doc: `[1,2,3]`, path: "[1]", del: true, want: `[1,3]`},
		{name: "delete missing", doc: `{"a":1}`, path: "b.c", del: true, want: `{"a":1}`},
		{name: "delete duplicate", doc: `{"a":1,"a":2}`, path: "a", del: true, err: true},
		{name: "delete folded duplicate", doc: `{"a":1,"A":2}`, path: "a", del: true, err: true},
		{name: "set beside a folded name", doc: `{"Key":1}`, path: "key", val: `2`, err: true},
		{name: "delete beside other duplicates", doc: `{"a":1,"b":2,"b":3}`, path: "a", del: true, want: `{"b":2,"b":3}`},
	} {
		var out []byte
		var err error
		if tc.del {
			out, _, err = deletePath([]byte(tc.doc), MustPath(tc.path))
		} else {
			out, err = setPath([]byte(tc.doc), MustPath(tc.path), []byte(tc.val))
		}
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if string(out) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, out, tc.want)
		}
		if !json.Valid(out) {
			t.Errorf("%s: result is not JSON: %s", tc.name, out)
		}
	}
}

// FuzzPathOps runs lookups and edits at untrusted paths on untrusted
// messages: nothing panics, and every edit that succeeds leaves valid JSON.
func FuzzPathOps(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"path":"/a"}}}`), "params.arguments.path", []byte(`"v"`))
	f.Add([]byte(`{"result":{"content":[{"type":"text","text":"hi"}]}}`), "result.content[0].text", []byte(`{"a":[1]}`))
	f.Add([]byte(`[1,{"a":"b"}]`), `[1]["a"]`, []byte(`null`))
	f.Add([]byte(`{"a":{"a":1,"a":2}}`), "a.a", []byte(`0`))
	f.Fuzz(func(t *testing.T, doc []byte, path string, val []byte) {
		p, err := ParsePath(path)
		if err != nil {
			return
		}
		// Whether the scanner's reading agrees with encoding/json's is
		// jsonscan's test; here, only that an edit keeps JSON valid.
		s, e, err := jsonscan.Document(doc)
		if err != nil {
			return
		}
		if vs, ve, ok, err := lookup(doc, s, e, p); err == nil && ok && !json.Valid(doc[vs:ve]) {
			t.Fatalf("lookup(%s) returned %q, not a JSON value", path, doc[vs:ve])
		}
		if json.Valid(val) {
			if out, err := setPath(doc, p, val); err == nil && !json.Valid(out) {
				t.Fatalf("setPath(%s, %s) on %s made invalid JSON: %s", path, val, doc, out)
			}
		}
		if out, _, err := deletePath(doc, p); err == nil && !json.Valid(out) {
			t.Fatalf("deletePath(%s) on %s made invalid JSON: %s", path, doc, out)
		}
	})
}

// FuzzMatch evaluates conditions with untrusted paths, regular expressions
// and values on untrusted messages: compiling either fails cleanly or the
// evaluation runs without a panic, and a message that is not JSON is an
// error, never a match.
func FuzzMatch(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"path":"/etc/a"}}}`), "params.arguments.path", "^/etc/", `"/etc/a"`)
	f.Add([]byte(`{"params":{"level":"debug"}}`), "params.level", "", `"debug"`)
	f.Add([]byte(`{"a":[1,2.0,{"b":null}]}`), "a[1]", "2", `2`)
	f.Add([]byte(`{"a":{"a":1,"a":2}}`), "a.a", "1", ``)
	f.Fuzz(func(t *testing.T, msg []byte, path, re, equals string) {
		c := Condition{Path: path, Matches: re}
		if equals != "" {
			var v any
			if json.Unmarshal([]byte(equals), &v) != nil {
				return
			}
			c.Equals = v
		}
		yes := true
		c.Exists = &yes
		m, err := compileMatch(&Match{Method: "tools/*", When: []Condition{c}})
		if err != nil {
			return
		}
		ok, err := m.matches(&matchCtx{method: "tools/call", raw: msg})
		if !json.Valid(msg) && (ok || err == nil) {
			t.Fatalf("invalid JSON %q: match %v, error %v", msg, ok, err)
		}
	})
}
