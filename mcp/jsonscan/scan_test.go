package jsonscan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// valid is what Document accepts: what encoding/json accepts, in UTF-8,
// nested at most MaxDepth deep.
func valid(b []byte) bool {
	return json.Valid(b) && utf8.Valid(b) && nesting(b) <= MaxDepth
}

// nesting is the deepest nesting of the JSON in b (which json.Valid
// accepts): brackets outside strings.
func nesting(b []byte) int {
	depth, deepest, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func TestDocument(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `-0.0E+0`, `true`, `false`, `null`, `"\u00e9\n\"\\\/\b\f\r\t"`,
		`{"a":[1,{"b":null}],"c":"d"}`, " \t\r\n{\"a\" : 1 }\n ", `"\ud800"`, `"\uDFFF\ud83d\ude00"`, "\"\u00e9\U0001F600\"",
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `{,}`, `[,]`, `01`, `-01`, `1.`, `.5`, `-`, `+1`, `1e`, `1e+`, `0x1`, `NaN`, `Infinity`,
		`"\x"`, `"\u12"`, `"\u12g4"`, `"\U1234"`, "\"a\tb\"", "\"a\x00b\"", "\"a\x7fb\"", `{"a" 1}`, `{"a":}`, `{a:1}`, `{'a':1}`,
		`[1 2]`, `tru`, `nul`, `True`, `{} {}`, `1 2`, `"`, `"abc`, `"\"`, `//c`, `/*c*/1`, "\ufeff1",
		"\"\xff\"", "\"\xc3\x28\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"",
		"1\xff", "\xff",
	} {
		b := []byte(in)
		_, _, err := Document(b)
		if (err == nil) != valid(b) {
			t.Errorf("Document(%q): error %v; encoding/json says valid %v, UTF-8 valid %v", in, err, json.Valid(b), utf8.Valid(b))
		}
		if err != nil && !errors.Is(err, ErrSyntax) {
			t.Errorf("Document(%q): %v does not wrap ErrSyntax", in, err)
		}
	}
}

func TestDepth(t *testing.T) {
	nest := func(n int) []byte {
		return []byte(strings.Repeat(`{"a":[`, n/2) + strings.Repeat("[", n%2) + strings.Repeat("]", n%2) + strings.Repeat("]}", n/2))
	}
	for _, n := range []int{MaxDepth - 1, MaxDepth} {
		if _, _, err := Document(nest(n)); err != nil {
			t.Errorf("%d containers: %v", n, err)
		}
	}
	for _, n := range []int{MaxDepth + 1, 3 * MaxDepth} {
		_, _, err := Document(nest(n))
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "nested too deep") || !json.Valid(nest(n)) {
			t.Errorf("%d containers: %v", n, err)
		}
	}
	// Empty containers count as well: the limit is on what is opened.
	if _, _, err := Document([]byte(strings.Repeat("[", MaxDepth) + "{}" + strings.Repeat("]", MaxDepth))); err == nil {
		t.Errorf("an empty object past the limit was accepted")
	}
	// The depth a walk starts at counts: Object, Array and Value at depth
	// d allow MaxDepth-d more containers, Open and More keep count.
	deep := nest(MaxDepth - 1)
	if _, err := Value(deep, 0, 1); err != nil {
		t.Errorf("Value at depth 1: %v", err)
	}
	if _, err := Value(deep, 0, 2); err == nil {
		t.Errorf("Value at depth 2 went past the limit")
	}
	if _, err := Object(deep, 0, 2, nil); err == nil {
		t.Errorf("Object at depth 2 went past the limit")
	}
	s := Scanner{B: []byte(`[[1],[]]`)}
	if empty, err := s.Open(); empty || err != nil || s.Depth != 1 {
		t.Fatalf("Open: %v %v depth %d", empty, err, s.Depth)
	}
	if empty, err := s.Open(); empty || err != nil || s.Depth != 2 {
		t.Fatalf("Open: %v %v depth %d", empty, err, s.Depth)
	}
	if err := s.Value(); err != nil {
		t.Fatal(err)
	}
	if more, err := s.More(']'); more || err != nil || s.Depth != 1 {
		t.Fatalf("More: %v %v depth %d", more, err, s.Depth)
	}
	if more, err := s.More(']'); !more || err != nil {
		t.Fatalf("More: %v %v", more, err)
	}
	if empty, err := s.Open(); !empty || err != nil || s.Depth != 1 {
		t.Fatalf("Open of []: %v %v depth %d", empty, err, s.Depth)
	}
	if more, err := s.More(']'); more || err != nil || s.Depth != 0 || s.I != len(s.B) {
		t.Fatalf("More: %v %v depth %d at %d", more, err, s.Depth, s.I)
	}
}

func TestFind(t *testing.T) {
	obj := []byte(`{"name":"a","n\u0061med":1,"x":{"name":"inner","name":"dup"},"k":"\u212a"}`)
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"name", `"a"`, true},
		{"named", `1`, true},
		{"x", `{"name":"inner","name":"dup"}`, true}, // duplicates off the path are not Find's business
		{"missing", ``, false},
	} {
		m, ok, err := Find(obj, 0, tc.name)
		if err != nil || ok != tc.ok || ok && string(obj[m.Start:m.End]) != tc.want {
			t.Errorf("Find(%q) = %q, %v, %v; want %q", tc.name, obj[m.Start:m.End], ok, err, tc.want)
		}
	}
	for _, tc := range []struct {
		obj, name string
		folded    bool
	}{
		{`{"name":"a","name":"b"}`, "name", false},
		{`{"name":"a","n\u0061me":"b"}`, "name", false},
		{`{"name":"a","Name":"b"}`, "name", true},
		{`{"NAME":"b"}`, "name", true},
		{"{\"\u212aey\":1}", "key", true}, // the Kelvin sign folds to k
		{"{\"\u017fig\":1}", "sig", true}, // so does the long s to s
	} {
		_, _, err := Find([]byte(tc.obj), 0, tc.name)
		var de *DuplicateError
		if !errors.As(err, &de) || !errors.Is(err, ErrDuplicate) || de.Folded != tc.folded || strings.Contains(err.Error(), `"b"`) {
			t.Errorf("Find(%s, %q): %v, want a DuplicateError (folded %v)", tc.obj, tc.name, err, tc.folded)
		}
	}
	if _, _, err := Find([]byte(`{"a":1,"b":[}`), 0, "a"); !errors.Is(err, ErrSyntax) {
		t.Errorf("Find in broken JSON: %v", err)
	}
	if _, _, err := Find([]byte(`[1]`), 0, "a"); !errors.Is(err, ErrSyntax) {
		t.Errorf("Find in an array: %v", err)
	}
}

func TestWalk(t *testing.T) {
	b := []byte(` {"a" : [1, "two", {"b":null}] , "c\n":"d"} `)
	var names, values []string
	end, err := Object(b, 1, 0, func(m Member) error {
		n, err := m.Name(b)
		names = append(names, n)
		values = append(values, string(b[m.Start:m.End]))
		return err
	})
	if err != nil || end != len(b)-1 || strings.Join(names, "|") != "a|c\n" || strings.Join(values, "|") != `[1, "two", {"b":null}]|"d"` {
		t.Errorf("Object: %d %v %q %q", end, err, names, values)
	}
	values = nil
	end, err = Array(b, 8, 1, func(n, s, e int) error {
		values = append(values, string(b[s:e]))
		return nil
	})
	if err != nil || b[end-1] != ']' || strings.Join(values, "|") != `1|"two"|{"b":null}` {
		t.Errorf("Array: %d %v %q", end, err, values)
	}
	if s, e, ok, err := Element(b, 8, 2); err != nil || !ok || string(b[s:e]) != `{"b":null}` {
		t.Errorf("Element 2: %q %v %v", b[s:e], ok, err)
	}
	if _, _, ok, err := Element(b, 8, 3); err != nil || ok {
		t.Errorf("Element 3: %v %v", ok, err)
	}
	stop := errors.New("stop")
	if _, err := Object(b, 1, 0, func(Member) error { return stop }); err != stop {
		t.Errorf("fn's error: %v", err)
	}
	if v, err := StringValue([]byte(`"a\u00e9\ud800"`), 0); err != nil || v != "aé\uFFFD" {
		t.Errorf("StringValue: %q %v", v, err)
	}
	if _, err := StringValue([]byte(`1`), 0); !errors.Is(err, ErrSyntax) {
		t.Errorf("StringValue of a number: %v", err)
	}
}

func TestErrorsDoNotQuoteTheInput(t *testing.T) {
	secret := "ghp_" + strings.Repeat("A", 36)
	for _, in := range []string{`{"` + secret + `"}`, `["` + secret + `\q"]`, `[` + secret + `]`, `{"a":"` + secret + "\xff\"}"} {
		_, _, err := Document([]byte(in))
		if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "ghp") {
			t.Errorf("Document(%s): %v", in, err)
		}
	}
}

func TestEqualFold(t *testing.T) {
	for _, tc := range []struct {
		name, key string
	}{
		{"method", "method"}, {"METHOD", "method"}, {"mEtHoD", "method"}, {"jſonrpc", "jsonrpc"},
		{"\u212a", "k"}, {"ıd", "id"}, {"i", "id"}, {"idd", "id"}, {"", "id"}, {"résult", "result"},
		{"İd", "id"}, {"ID", "id"}, {"Id\u0307", "id"},
	} {
		if got, want := EqualFold([]byte(tc.name), tc.key), strings.EqualFold(tc.name, tc.key); got != want {
			t.Errorf("EqualFold(%q, %q) = %v, strings.EqualFold says %v", tc.name, tc.key, got, want)
		}
	}
}
