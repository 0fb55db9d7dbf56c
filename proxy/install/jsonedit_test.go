package install

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The parser accepts exactly what encoding/json accepts (strict mode), and
// JSONC comments and trailing commas only in JSONC mode.
func TestParseJSON(t *testing.T) {
	tests := []struct {
		src         string
		strict, cok bool
	}{
		{`{}`, true, true},
		{` {"a": [1, -2.5e+3, true, false, null, "x\"\u00e9\n"]} `, true, true},
		{`[]`, true, true},
		{`"s"`, true, true},
		{`0`, true, true},
		{`{"a":1,}`, false, true},
		{`[1,]`, false, true},
		{"{// c\n\"a\": 1}", false, true},
		{`{/* c */"a": /* d */ 1}`, false, true},
		{`{"a": 1 /* open`, false, false},
		{`{,}`, false, false},
		{`[,]`, false, false},
		{`{"a" 1}`, false, false},
		{`{"a": 01}`, false, false},
		{`{"a": 1.}`, false, false},
		{`{"a": -}`, false, false},
		{`{"a": "\x"}`, false, false},
		{`{"a": "\u12"}`, false, false},
		{"{\"a\": \"\t\"}", false, false},
		{`{"a": tru}`, false, false},
		{`{a: 1}`, false, false},
		{`{"a": 1}}`, false, false},
		{``, false, false},
		{`{"a": 1} x`, false, false},
		{strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), false, false},
	}
	for _, tt := range tests {
		_, err := parseJSON([]byte(tt.src), false)
		if (err == nil) != tt.strict {
			t.Errorf("strict %q: err %v, want ok=%v", tt.src, err, tt.strict)
		}
		if tt.strict != json.Valid([]byte(tt.src)) && !strings.HasPrefix(tt.src, "[[[[") {
			t.Errorf("%q: the table disagrees with encoding/json", tt.src)
		}
		_, err = parseJSON([]byte(tt.src), true)
		if (err == nil) != tt.cok {
			t.Errorf("jsonc %q: err %v, want ok=%v", tt.src, err, tt.cok)
		}
	}
	_, err := parseJSON([]byte("{\n  \"a\": 1,\n  \"b\" 2\n}"), false)
	if se, ok := err.(*SyntaxError); !ok || se.Line != 3 || se.Col != 7 {
		t.Errorf("error position: %v", err)
	}
}

// Insertions look like their neighbours; removing what was inserted gives the
// text back byte for byte.
func TestInsertRemove(t *testing.T) {
	tests := []struct {
		name, src string
		path      []string // the object to insert into
		want      string
	}{
		{"empty root", "{}\n", nil, "{\n  \"k\": {\n    \"x\": 1\n  }\n}\n"},
		{"indented", "{\n    \"a\": 1\n}", nil, "{\n    \"a\": 1,\n    \"k\": {\n        \"x\": 1\n    }\n}"},
		{"tabs, CRLF", "{\r\n\t\"a\": 1\r\n}", nil, "{\r\n\t\"a\": 1,\r\n\t\"k\": {\r\n\t\t\"x\": 1\r\n\t}\r\n}"},
		{"one line", `{"a":1}`, nil, `{"a":1,"k":{"x":1}}`},
		{"one line, spaced", `{ "a": 1 }`, nil, `{ "a": 1, "k": {"x":1} }`},
		{"nested", "{\n  \"o\": {\n    \"a\": 1\n  }\n}", []string{"o"}, "{\n  \"o\": {\n    \"a\": 1,\n    \"k\": {\n      \"x\": 1\n    }\n  }\n}"},
		{"nested empty", "{\n  \"o\": {}\n}", []string{"o"}, "{\n  \"o\": {\n    \"k\": {\n      \"x\": 1\n    }\n  }\n}"},
		{"trailing comma", "{\n  \"a\": 1,\n}", nil, "{\n  \"a\": 1,\n  \"k\": {\n    \"x\": 1\n  },\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte(tt.src)
			root, err := parseJSON(src, true)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := walk(root, tt.path)
			key := "k"
			out := insertItem(src, c, &key, []byte(`{"x":1}`), styleOf(src, root))
			if string(out) != tt.want {
				t.Fatalf("insert:\n%q\nwant\n%q", out, tt.want)
			}
			root2, err := parseJSON(out, true)
			if err != nil {
				t.Fatalf("insert made invalid JSON: %v", err)
			}
			c2, _ := walk(root2, tt.path)
			_, i := c2.get("k")
			if back := removeItem(out, c2, i); string(back) != tt.src {
				t.Errorf("remove:\n%q\nwant\n%q", back, tt.src)
			}
		})
	}
}

// Removing items the user placed around comments keeps the comments and the
// document valid.
func TestRemoveAroundComments(t *testing.T) {
	for _, src := range []string{
		"{\n  \"a\": 1, // one\n  \"k\": 2 // two\n}",
		"{\n  \"k\": 2, // two\n  \"a\": 1\n}",
		"{ /* x */ \"k\": 2 /* y */ }",
		"{\n  \"a\": 1 /* z */,\n  \"k\": 2,\n}",
		"[1, /* c */ 2]",
	} {
		root, err := parseJSON([]byte(src), true)
		if err != nil {
			t.Fatal(err)
		}
		i := len(root.elems) - 1
		if root.kind == '{' {
			_, i = root.get("k")
		}
		out := removeItem([]byte(src), root, i)
		after, err := parseJSON(out, true)
		if err != nil {
			t.Errorf("%q -> %q: %v", src, out, err)
			continue
		}
		if after.items() != root.items()-1 || strings.Count(string(out), "/") != strings.Count(src, "/") {
			t.Errorf("%q -> %q", src, out)
		}
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2,{"b":null}]}`, "{\n // c\n \"a\": 1,\n}", `[1,]`, `"\u00e9"`, `-0.5e-3`, `{"a":"b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		n, err := parseJSON(src, false)
		if err == nil {
			if !json.Valid(src) {
				t.Fatalf("accepted invalid JSON %q", src)
			}
			// What the parser read means what encoding/json reads (when that
			// can hold it: 1e1000 is valid JSON but no float64).
			var a, b any
			var buf bytes.Buffer
			strict(src, n, &buf)
			if json.Unmarshal(src, &a) == nil && (json.Unmarshal(buf.Bytes(), &b) != nil || !reflect.DeepEqual(a, b)) {
				t.Fatalf("%q re-encoded as %q", src, buf.Bytes())
			}
		} else if json.Valid(src) && !strings.Contains(err.Error(), "nested too deeply") {
			t.Fatalf("refused valid JSON %q: %v", src, err)
		}
		if n, err := parseJSON(src, true); err == nil {
			var buf bytes.Buffer
			strict(src, n, &buf)
			if !json.Valid(buf.Bytes()) {
				t.Fatalf("JSONC %q re-encoded as invalid %q", src, buf.Bytes())
			}
		}
	})
}

// FuzzInsertRemove: in any object of any document, inserting a member and
// removing it again leaves the meaning unchanged, and the bytes too when the
// document has no comments and the object was not empty.
func FuzzInsertRemove(f *testing.F) {
	for _, s := range []string{"{}", "{\n  \"a\": 1\n}", `{"a":{"b":[1,2]},"c":{}}`, "{\r\n\t\"a\": {\r\n\t\t\"b\": 1\r\n\t}\r\n}", "{\"a\": 1, // c\n}"} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, src []byte, pick uint8) {
		root, err := parseJSON(src, true)
		if err != nil {
			return
		}
		var objs []*jnode
		var collect func(n *jnode)
		collect = func(n *jnode) {
			if n.kind == '{' {
				objs = append(objs, n)
			}
			for _, m := range n.members {
				collect(m.val)
			}
			for _, e := range n.elems {
				collect(e)
			}
		}
		collect(root)
		if len(objs) == 0 {
			return
		}
		target := objs[int(pick)%len(objs)]
		wasEmpty := target.items() == 0
		key := "contextd-fuzz-key"
		out := insertItem(src, target, &key, []byte(`{"type":"stdio","args":["mcp"]}`), styleOf(src, root))
		root2, err := parseJSON(out, true)
		if err != nil {
			t.Fatalf("insert into %q made invalid %q: %v", src, out, err)
		}
		// Find the inserted member: the object at the same start offset.
		var target2 *jnode
		var find func(n *jnode)
		find = func(n *jnode) {
			if n.kind == '{' && n.start == target.start {
				target2 = n
			}
			for _, m := range n.members {
				find(m.val)
			}
			for _, e := range n.elems {
				find(e)
			}
		}
		find(root2)
		if target2 == nil {
			t.Fatalf("lost the object after inserting into %q: %q", src, out)
		}
		v, i := target2.get(key)
		if v == nil || i != target2.items()-1 || !sameJSON(out, v, []byte(`{"type":"stdio","args":["mcp"]}`)) {
			t.Fatalf("inserted member missing or wrong in %q", out)
		}
		back := removeItem(out, target2, i)
		root3, err := parseJSON(back, true)
		if err != nil {
			t.Fatalf("remove from %q made invalid %q: %v", out, back, err)
		}
		if !reflect.DeepEqual(decoded(back, root3), decoded(src, root)) {
			t.Fatalf("insert+remove changed the meaning of %q: %q", src, back)
		}
		if !bytes.Contains(src, []byte("/")) && (!wasEmpty || bytes.Equal(src[target.start:target.end], []byte("{}"))) && !bytes.Equal(back, src) {
			t.Fatalf("insert+remove changed the bytes:\n%q\n%q", src, back)
		}
	})
}
