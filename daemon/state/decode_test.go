package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/toolspec"
)

func TestDecode(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		tool  string
		input string
		ok    bool
	}{
		// Common to all: strict JSON objects.
		{"memory_get", ``, false},
		{"memory_get", `   `, false},
		{"memory_get", `[]`, false},
		{"memory_get", `"id"`, false},
		{"memory_get", `null`, false},
		{"memory_get", `{"id":"a"`, false},
		{"memory_get", `{"id":"a"} {}`, false},
		{"memory_get", `{"id":"a"} x`, false},
		{"memory_get", `{"id":"a"}` + "\n", true},
		{"memory_get", `{"id":"a","ID":"b"}`, false},
		{"memory_get", `{"ID":"a"}`, false},
		{"memory_get", `{"id":"a","id":"b"}`, false},
		{"memory_get", `{"id":"a","extra":1}`, false},
		{"memory_get", `{"id":null}`, false},
		{"memory_get", `{"id":5}`, false},

		// memory_store.
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"success"}`, true},
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"failure","tags":["A","b","a"],"scope":"global"}`, true},
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"success","scope":"project","tags":[]}`, true},
		{"memory_store", `{"title":"t","description":"Use it for X, e.g. Docker builds, not for Y.","content":"c","outcome":"success"}`, true},
		{"memory_store", `{"title":"t","description":"Use it. Not for Y.","content":"c","outcome":"success"}`, false},
		{"memory_store", `{"title":"t","description":"Line\nbreak","content":"c","outcome":"success"}`, false},
		{"memory_store", `{"title":"` + long(120) + `","description":"d","content":"c","outcome":"success"}`, true},
		{"memory_store", `{"title":"` + long(121) + `","description":"d","content":"c","outcome":"success"}`, false},
		{"memory_store", `{"title":"t","description":"` + long(300) + `","content":"c","outcome":"success"}`, true},
		{"memory_store", `{"title":"t","description":"` + long(301) + `","content":"c","outcome":"success"}`, false},
		{"memory_store", `{"title":"  ","description":"d","content":"c","outcome":"success"}`, false},
		{"memory_store", `{"description":"d","content":"c","outcome":"success"}`, false},
		{"memory_store", `{"title":"t","content":"c","outcome":"success"}`, false},
		{"memory_store", `{"title":"t","description":"d","content":" \n","outcome":"success"}`, false},
		{"memory_store", `{"title":"t","description":"d","content":"c"}`, false},
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"Success"}`, false},
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"success","scope":"team"}`, false},
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"success","tags":[""]}`, false},
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"success","tags":"a"}`, false},
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"success","tags":[1]}`, false},
		{"memory_store", `{"title":"t","description":"d","content":"c","outcome":"success","tags":["` + long(41) + `"]}`, false},
		{"memory_store", `{"title":"t\u001b[31m","description":"d","content":"c","outcome":"success"}`, false},

		// memory_search.
		{"memory_search", `{"query":"flaky tests"}`, true},
		{"memory_search", `{"query":"q","limit":10}`, true},
		{"memory_search", `{"query":"q","limit":11}`, false},
		{"memory_search", `{"query":"q","limit":0}`, false},
		{"memory_search", `{"query":"q","limit":1.5}`, false},
		{"memory_search", `{"query":"q","limit":"3"}`, false},
		{"memory_search", `{"query":""}`, false},
		{"memory_search", `{"query":"` + long(1001) + `"}`, false},
		{"memory_search", `{}`, false},

		// memory_get.
		{"memory_get", `{"id":"0f8fad5b-d9cb-469f-a165-70867728950e"}`, true},
		{"memory_get", `{"id":""}`, false},
		{"memory_get", `{"id":"a b"}`, false},
		{"memory_get", `{"id":"` + long(129) + `"}`, false},

		// memory_feedback.
		{"memory_feedback", `{"id":"m","helpful":true}`, true},
		{"memory_feedback", `{"id":"m","helpful":false}`, true},
		{"memory_feedback", `{"id":"m"}`, false},
		{"memory_feedback", `{"id":"m","helpful":"yes"}`, false},
		{"memory_feedback", `{"id":"m","helpful":1}`, false},
		{"memory_feedback", `{"helpful":true}`, false},

		// checkpoint_save.
		{"checkpoint_save", `{"summary":"s"}`, true},
		{"checkpoint_save", `{"summary":"s","name":"n","context":"c","full":"f"}`, true},
		{"checkpoint_save", `{"summary":" "}`, false},
		{"checkpoint_save", `{"name":"n"}`, false},
		{"checkpoint_save", `{"summary":"s","name":"` + long(121) + `"}`, false},
		{"checkpoint_save", `{"summary":"s","name":"a\nb"}`, false},
		{"checkpoint_save", `{"summary":"s","context":7}`, false},

		// checkpoint_restore.
		{"checkpoint_restore", `{}`, true},
		{"checkpoint_restore", `{"latest":true}`, true},
		{"checkpoint_restore", `{"id":"c","level":"full"}`, true},
		{"checkpoint_restore", `{"level":"summary"}`, true},
		{"checkpoint_restore", `{"id":"c","latest":false}`, true},
		{"checkpoint_restore", `{"id":"c","latest":true}`, false},
		{"checkpoint_restore", `{"latest":false}`, false},
		{"checkpoint_restore", `{"level":"all"}`, false},
		{"checkpoint_restore", `{"id":"a b"}`, false},

		// checkpoint_list.
		{"checkpoint_list", `{}`, true},
		{"checkpoint_list", `{"limit":50}`, true},
		{"checkpoint_list", `{"limit":51}`, false},
		{"checkpoint_list", `{"limit":-1}`, false},

		// branch.
		{"branch", `{"description":"find the parser"}`, true},
		{"branch", `{"description":"d","budget":100}`, true},
		{"branch", `{"description":"d","budget":1048576}`, true},
		{"branch", `{"description":"d","budget":99}`, false},
		{"branch", `{"description":"d","budget":1048577}`, false},
		{"branch", `{"description":""}`, false},
		{"branch", `{"budget":500}`, false},
		{"branch", `{"description":"` + long(1001) + `"}`, false},

		// return.
		{"return", `{"summary":"found it"}`, true},
		{"return", `{"summary":"s","id":"b1"}`, true},
		{"return", `{"summary":""}`, false},
		{"return", `{"id":"b1"}`, false},
		{"return", `{"summary":"s","id":"b 1"}`, false},
	}
	for _, tt := range tests {
		c, err := toolNamed(t, tt.tool).Decode([]byte(tt.input))
		if tt.ok {
			if err != nil || c == nil {
				t.Errorf("%s.Decode(%.80s) = %v", tt.tool, tt.input, err)
			}
			continue
		}
		if c != nil || !errors.Is(err, catalog.ErrBadInput) {
			t.Errorf("%s.Decode(%.80s) = %v, %v; want an ErrBadInput", tt.tool, tt.input, c, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), tt.tool+": ") {
			t.Errorf("error %q does not name the tool", err)
		}
	}
}

// Decode normalizes what it accepts.
func TestDecodeNormalizes(t *testing.T) {
	c, err := MemoryStore{}.Decode([]byte(`{"title":"  Flaky  ","description":" d ","content":"c","outcome":"success","tags":["Go","sqlite","go"," CI "]}`))
	if err != nil {
		t.Fatal(err)
	}
	in := c.(*memoryStoreCall).in
	if in.Title != "Flaky" || in.Description != "d" || !slices.Equal(in.Tags, []string{"ci", "go", "sqlite"}) {
		t.Errorf("normalized to %+v", in)
	}
}

// Decode errors never quote values: they may be secrets.
func TestDecodeErrorsDoNotQuoteInput(t *testing.T) {
	const secret = "hunter2-SECRET-TOKEN"
	for _, tl := range Tools() {
		for _, in := range []string{
			`{"` + secret + `":1}`,
			`{"id":"` + secret + `",`,
			`{"summary":"` + secret + `"} ` + secret,
			`{"limit":"` + secret + `"}`,
			`{"tags":["` + secret + `"],"scope":"` + secret + `"}`,
		} {
			_, err := tl.Decode([]byte(in))
			if err != nil && strings.Contains(err.Error(), secret) && !strings.Contains(in, `{"`+secret) {
				t.Errorf("%s: error %q quotes the input", tl.Name(), err)
			}
		}
	}
}

func TestSentences(t *testing.T) {
	tests := []struct {
		s string
		n int
	}{
		{"Use it when the build is slow.", 1},
		{"Use it when the build is slow, not when tests fail", 1},
		{"Use it for Go, e.g. Docker builds, not for Y.", 1},
		{"Use it for files, i.e. Regular ones.", 1},
		{"Works with v1.26. Not with older ones.", 2},
		{"Use it! Really.", 2},
		{"Use it! Really! Always.", 3},
		{"Use it etc. And more", 1},
		{"Compare a vs. B first", 1},
		{"See J. Smith's note", 1},
		{"Is it flaky? Run it again.", 2},
		{"Ends.", 1},
		{"version 1.2.3 works", 1},
	}
	for _, tt := range tests {
		if got := sentences(tt.s); got != tt.n {
			t.Errorf("sentences(%q) = %d, want %d", tt.s, got, tt.n)
		}
	}
}

// The tools are the published ones, and each schema.json lists exactly the
// fields of the tool's input struct: same types, same required set.
func TestSchemasMatchInputs(t *testing.T) {
	inputs := map[string]any{
		"memory_store": MemoryStoreInput{}, "memory_search": MemorySearchInput{}, "memory_get": MemoryGetInput{},
		"memory_feedback": MemoryFeedbackInput{}, "checkpoint_save": CheckpointSaveInput{},
		"checkpoint_restore": CheckpointRestoreInput{}, "checkpoint_list": CheckpointListInput{},
		"branch": BranchInput{}, "return": ReturnInput{},
	}
	var names []string
	for _, tl := range Tools() {
		names = append(names, tl.Name())
	}
	for _, n := range names {
		if _, ok := toolspec.Get(n); !ok {
			t.Errorf("%s has no toolspec", n)
		}
	}
	for _, n := range toolspec.Names() {
		if !strings.HasPrefix(n, "safe_") && !slices.Contains(names, n) {
			t.Errorf("toolspec %s is not a state tool", n)
		}
	}
	if len(inputs) != len(names) {
		t.Fatalf("inputs for %d of %d tools", len(inputs), len(names))
	}
	for name, in := range inputs {
		spec, _ := toolspec.Get(name)
		var sc struct {
			Properties map[string]struct {
				Type string `json:"type"`
				Enum []any  `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(spec.Schema, &sc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rt := reflect.TypeOf(in)
		var required []string
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			key, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			p, ok := sc.Properties[key]
			if !ok {
				t.Errorf("%s: field %q is not in schema.json", name, key)
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			want := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "integer", reflect.Bool: "boolean", reflect.Slice: "array"}[ft.Kind()]
			if p.Type != want && !(p.Type == "" && len(p.Enum) > 0 && want == "string") {
				t.Errorf("%s.%s: schema type %q, Go %s", name, key, p.Type, f.Type)
			}
			if !strings.Contains(opts, "omitempty") {
				required = append(required, key)
			}
		}
		if len(sc.Properties) != rt.NumField() {
			t.Errorf("%s: %d schema properties, %d fields", name, len(sc.Properties), rt.NumField())
		}
		slices.Sort(required)
		slices.Sort(sc.Required)
		if !slices.Equal(required, sc.Required) {
			t.Errorf("%s: required %v in schema.json, %v in Go", name, sc.Required, required)
		}
	}
}

// inputOf returns the decoded (normalized) input a call holds.
func inputOf(c toolcall.Call[*Env]) any {
	switch c := c.(type) {
	case *memoryStoreCall:
		return c.in
	case *memorySearchCall:
		return c.in
	case *memoryGetCall:
		return c.in
	case *memoryFeedbackCall:
		return c.in
	case *checkpointSaveCall:
		return c.in
	case *checkpointRestoreCall:
		return c.in
	case *checkpointListCall:
		return c.in
	case *branchCall:
		return c.in
	case *returnCall:
		return c.in
	}
	panic("unknown call type")
}

// FuzzDecode: no state tool's Decode panics; an accepted input comes back,
// encoded again, as the same input, and encodes only keys it was given.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"title":"t","description":"d.","content":"c","outcome":"success","tags":["B","a"],"scope":"global"}`,
		`{"query":"q","limit":3}`,
		`{"id":"x"}`,
		`{"id":"x","helpful":false}`,
		`{"summary":"s","name":"n","context":"c","full":"f"}`,
		`{"id":"c","latest":true,"level":"full"}`,
		`{"limit":50}`,
		`{"description":"d","budget":100}`,
		`{"summary":"s","id":"b"}`,
		`{"id":"a","ID":"b"}`,
		`{"id":null}`,
		`{"id":"\ud800"}`,
		`{} {}`,
		`{"tags":[null]}`,
	}
	all := Tools()
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	f.Fuzz(func(t *testing.T, which uint8, input string) {
		tl := all[int(which)%len(all)]
		c, err := tl.Decode([]byte(input))
		if err != nil {
			if c != nil {
				t.Fatalf("a call and an error together")
			}
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("%s: error of class %s: %v", tl.Name(), catalog.ClassOf(err).Code, err)
			}
			return
		}
		in := inputOf(c)
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := tl.Decode(b)
		if err != nil {
			t.Fatalf("%s: %s accepted, re-encoded as %s refused: %v", tl.Name(), input, b, err)
		}
		if in2 := inputOf(c2); !reflect.DeepEqual(in, in2) {
			t.Fatalf("%s: %+v re-decoded as %+v", tl.Name(), in, in2)
		}
		given := map[string]json.RawMessage{}
		if err := json.NewDecoder(bytes.NewReader([]byte(input))).Decode(&given); err != nil {
			t.Fatalf("accepted input is not an object: %v", err)
		}
		var back map[string]json.RawMessage
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		for k := range back {
			if _, ok := given[k]; !ok {
				t.Fatalf("%s: re-encoding added %q", tl.Name(), k)
			}
		}
	})
}
