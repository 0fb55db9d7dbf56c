package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var seeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"y"}}}`,
	`{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"hi\n\u00e9\ud83d\ude00"}]}}`,
	`[{"a":-0.0e-0,"b":[true,false,null,[],{}]},"\ud800",1E+2]`,
	`{"a":1,"a":2,"A":3,"\u0061":4}`,
	"{\"a\":\"\xc3\x28\"}",
	`{"a":[1,]}`,
	`01`,
	strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
}

// FuzzDocument: the scanner accepts exactly what encoding/json accepts,
// less what it refuses on purpose (invalid UTF-8, nesting past MaxDepth);
// walking what it accepts with the Scanner's steps (Open, Name, More, Text,
// Number, Literal) reads the same value encoding/json decodes, and every
// span Object, Array and Value give is one whole value.
func FuzzDocument(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		start, end, err := Document(b)
		if (err == nil) != valid(b) {
			t.Fatalf("Document(%q): error %v, but valid = %v", b, err, valid(b))
		}
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		if !bytes.Equal(bytes.TrimSpace(b), b[start:end]) {
			t.Fatalf("span %d:%d of %q", start, end, b)
		}
		s := &Scanner{B: b, I: start}
		got, err := walk(t, s)
		if err != nil || s.I != end || s.Depth != 0 {
			t.Fatalf("walk of %q: %v, at %d of %d, depth %d", b, err, s.I, end, s.Depth)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var want any
		if err := d.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: walked %#v, encoding/json decodes %#v", b, got, want)
		}
	})
}

// walk decodes the value at s.I by the Scanner's steps, checking the spans
// Object and Array report on the way; duplicate names keep the last value,
// as encoding/json does.
func walk(t *testing.T, s *Scanner) (any, error) {
	b := s.B
	switch c := b[s.I]; {
	case c == '{':
		var spans []Member
		if end, err := Object(b, s.I, s.Depth, func(m Member) error { spans = append(spans, m); return nil }); err != nil {
			t.Fatalf("Object at %d: %v", s.I, err)
		} else if e, _ := Value(b, s.I, s.Depth); e != end {
			t.Fatalf("Object ends at %d, Value at %d", end, e)
		}
		obj := map[string]any{}
		empty, err := s.Open()
		for n := 0; err == nil && !empty; n++ {
			var start, end int
			var escaped bool
			if start, end, escaped, err = s.Name(); err != nil {
				break
			}
			if m := spans[n]; m.NameStart != start || m.NameEnd != end || m.Escaped != escaped || m.Start != s.I {
				t.Fatalf("member %d: Object says %+v, Name %d:%d at %d", n, m, start, end, s.I)
			}
			k, _ := Unquote(b[start:end], escaped)
			if obj[k], err = walk(t, s); err != nil {
				break
			}
			if spans[n].End != s.I {
				t.Fatalf("member %d ends at %d, Object says %d", n, s.I, spans[n].End)
			}
			var more bool
			more, err = s.More('}')
			empty = !more
		}
		return obj, err
	case c == '[':
		var spans [][2]int
		if _, err := Array(b, s.I, s.Depth, func(_, a, z int) error { spans = append(spans, [2]int{a, z}); return nil }); err != nil {
			t.Fatalf("Array at %d: %v", s.I, err)
		}
		arr := []any{}
		empty, err := s.Open()
		for n := 0; err == nil && !empty; n++ {
			if spans[n][0] != s.I {
				t.Fatalf("element %d at %d, Array says %d", n, s.I, spans[n][0])
			}
			var v any
			if v, err = walk(t, s); err != nil {
				break
			}
			if spans[n][1] != s.I {
				t.Fatalf("element %d ends at %d, Array says %d", n, s.I, spans[n][1])
			}
			arr = append(arr, v)
			var more bool
			more, err = s.More(']')
			empty = !more
		}
		return arr, err
	case c == '"':
		return s.Text()
	case c == 't':
		return true, s.Literal("true")
	case c == 'f':
		return false, s.Literal("false")
	case c == 'n':
		return nil, s.Literal("null")
	default:
		at := s.I
		err := s.Number()
		return json.Number(b[at:s.I]), err
	}
}

// FuzzFind: Find reads the member encoding/json reads, and refuses exactly
// the names that occur twice or also in another letter case.
func FuzzFind(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s), "a")
	}
	f.Add([]byte(`{"name":"x","NAME":"y"}`), "name")
	f.Add([]byte("{\"\u212a\":1}"), "k")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		start, _, err := Document(b)
		if err != nil || b[start] != '{' {
			return
		}
		var names []string
		if _, err := Object(b, start, 0, func(m Member) error {
			n, err := m.Name(b)
			names = append(names, n)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		same, folded := 0, 0
		for _, n := range names {
			switch {
			case n == name:
				same++
			case strings.EqualFold(n, name):
				folded++
			}
		}
		m, ok, err := Find(b, start, name)
		if (err != nil) != (same > 1 || folded > 0) || ok != (same == 1 && folded == 0) {
			t.Fatalf("Find(%q) in %q: %v, %v; %d exact, %d folded", name, b, ok, err, same, folded)
		}
		if err != nil && !errors.Is(err, ErrDuplicate) {
			t.Fatalf("Find(%q) in %q: %v", name, b, err)
		}
		if ok {
			var byMap map[string]json.RawMessage
			if err := json.Unmarshal(b, &byMap); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(byMap[name], b[m.Start:m.End]) {
				t.Fatalf("Find(%q) in %q = %q, encoding/json reads %q", name, b, b[m.Start:m.End], byMap[name])
			}
		}
	})
}
