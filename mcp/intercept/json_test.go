package intercept

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

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

// FuzzMatch evaluates a condition with an untrusted path, regular
// expression and value on an untrusted message, and holds the result to
// refHolds, a reading of the message with encoding/json that follows
// Condition's documentation: a message the MCP path's scanner refuses is a
// syntax error (jsonscan.ErrSyntax), never a match; on one it accepts, a
// name along the path that is there twice or in another letter case is a
// duplicate error (jsonscan.ErrDuplicate) and anything else is a yes or a
// no, the reference's. Compiling fails only for a path that does not
// parse, a regular expression that does not compile or a condition with
// no test.
func FuzzMatch(f *testing.F) {
	const (
		noExists uint8 = iota
		mustExist
		mustNotExist
	)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"path":"/etc/a"}}}`), "params.arguments.path", "^/etc/", `"/etc/a"`, mustExist)
	f.Add([]byte(`{"params":{"level":"debug"}}`), "params.level", "", `"debug"`, noExists)
	f.Add([]byte(`{"a":[1,2.0,{"b":null}]}`), "a[1]", "2", `2`, mustExist)
	f.Add([]byte(`{"a":[1,2.0,{"b":null}]}`), "a[2].b", "", ``, mustExist)
	f.Add([]byte(`{"a":[1,2.0,{"b":null}]}`), "a[3]", "", ``, mustNotExist)
	f.Add([]byte(`{"a":{"a":1,"a":2}}`), "a.a", "1", ``, mustExist)
	f.Add([]byte(`{"a":{"x":1,"X":2}}`), "a.x", "", `1`, noExists)
	f.Add([]byte(`{"a":{"x":1,"X":2}}`), "a.y", "", ``, mustNotExist)
	f.Add([]byte(`{"a":1}`), "b", "", `1`, mustNotExist)
	f.Add([]byte(`{"a":1}`), "b", "", ``, mustNotExist)
	f.Add([]byte(`{"a":1}`), "a.b", "", ``, mustNotExist)
	f.Add([]byte(`{"a": { "b" : [ true ] }}`), "a", `"b" : \[`, `{"b":[true]}`, noExists)
	f.Add([]byte(`{"k":"\u0041\ud800"}`), `["k"]`, "^A\uFFFD$", `"A\ufffd"`, noExists)
	f.Add([]byte(`{"n":1e400}`), "n", "", `1`, noExists)
	f.Add([]byte(`{"n":1e400}`), "n", "e400", `null`, noExists)
	f.Add([]byte("{\"s\":\"\xff\"}"), "s", ".", ``, noExists)
	f.Add([]byte(strings.Repeat("[", jsonscan.MaxDepth+1)+strings.Repeat("]", jsonscan.MaxDepth+1)), "", "", ``, mustExist)
	f.Add([]byte(`{"a":1,}`), "a", "", ``, mustExist)
	f.Fuzz(func(t *testing.T, msg []byte, path, re, equals string, exists uint8) {
		c := Condition{Path: path, Matches: re}
		var want any // the value equals gives, decoded; nil: no equals test
		if equals != "" {
			if json.Unmarshal([]byte(equals), &want) != nil {
				return
			}
			c.Equals = want
		}
		switch exists % 3 {
		case mustExist:
			c.Exists = new(true)
		case mustNotExist:
			c.Exists = new(false)
		}
		cond := fmt.Sprintf("path %q, equals %q, matches %q, exists %s", path, equals, re, [...]string{"unset", "true", "false"}[exists%3])
		m, err := compileMatch(&Match{Method: "tools/*", When: []Condition{c}})
		p, perr := ParsePath(path)
		rx, rerr := regexp.Compile(re)
		if bad := perr != nil || re != "" && rerr != nil || want == nil && re == "" && c.Exists == nil; bad != (err != nil) {
			t.Fatalf("condition %s: compile error %v", cond, err)
		}
		if err != nil {
			return
		}
		if re == "" {
			rx = nil
		}

		ok, err := m.matches(&matchCtx{method: "tools/call", raw: msg})
		if !json.Valid(msg) || !utf8.Valid(msg) || nesting(msg) > jsonscan.MaxDepth {
			if ok || !errors.Is(err, jsonscan.ErrSyntax) {
				t.Fatalf("message %q is not strict JSON: match %v, error %v", msg, ok, err)
			}
			return
		}
		wantOK, dup := refHolds(msg, p, want, rx, c.Exists)
		switch {
		case dup:
			if ok || !errors.Is(err, jsonscan.ErrDuplicate) {
				t.Fatalf("%q, condition %s: match %v, error %v; want a duplicate name error", msg, cond, ok, err)
			}
		case err != nil || ok != wantOK:
			t.Fatalf("%q, condition %s: match %v, error %v; want %v", msg, cond, ok, err, wantOK)
		}
	})
}

// refHolds evaluates a condition on msg (valid JSON) as Condition documents
// it, reading the message with encoding/json: every test given must hold,
// equals and matches only on a value that is there. dup: a name along
// path is ambiguous, which no test may get past.
func refHolds(msg []byte, path Path, equals any, re *regexp.Regexp, exists *bool) (ok, dup bool) {
	val, found, dup := refLookup(msg, path)
	if dup {
		return false, true
	}
	ok = true
	if exists != nil {
		ok = ok && *exists == found
	}
	if equals != nil {
		// Compared as JSON values: decoded, numbers as float64. A value
		// encoding/json cannot decode (a number out of range) equals
		// nothing.
		var v any
		ok = ok && found && json.Unmarshal(val, &v) == nil && reflect.DeepEqual(v, equals)
	}
	if re != nil {
		// A string is matched decoded, anything else as its JSON text.
		text := string(val)
		var s string
		if found && json.Unmarshal(val, &s) == nil {
			text = s
		}
		ok = ok && found && re.MatchString(text)
	}
	return ok, false
}

// refLookup follows path from the top of msg, decoding one level at a time
// with encoding/json and keeping every member in order: a name is found
// when exactly one member has it and none has it in another letter case
// (dup otherwise), an index when the array is that long; a step into
// anything else finds nothing.
func refLookup(msg []byte, path Path) (val json.RawMessage, found, dup bool) {
	if json.Unmarshal(msg, &val) != nil {
		panic("refLookup on invalid JSON")
	}
	for _, st := range path {
		if st.Index >= 0 {
			var elems []json.RawMessage
			if val[0] != '[' || json.Unmarshal(val, &elems) != nil || st.Index >= len(elems) {
				return nil, false, false
			}
			val = elems[st.Index]
			continue
		}
		if val[0] != '{' {
			return nil, false, false
		}
		var next json.RawMessage
		exact, folded := 0, 0
		dec := json.NewDecoder(bytes.NewReader(val))
		dec.Token() // the '{'
		for dec.More() {
			name, _ := dec.Token()
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				panic(err)
			}
			switch {
			case name == st.Name:
				exact++
				next = v
			case strings.EqualFold(name.(string), st.Name):
				folded++
			}
		}
		if exact > 1 || folded > 0 {
			return nil, false, true
		}
		if exact == 0 {
			return nil, false, false
		}
		val = next
	}
	return val, true, false
}

// nesting is how many objects and arrays are open at once, at most, in
// valid JSON.
func nesting(b []byte) int {
	depth, most := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			most = max(most, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return most
}
