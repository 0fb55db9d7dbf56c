package tools_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/toolspec"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		tool  string
		input string
		ok    bool
	}{
		// safe_bash
		{"safe_bash", `{"command":"ls"}`, true},
		{"safe_bash", `{"command":"ls","timeout":5,"cwd":"sub"}`, true},
		{"safe_bash", ` {"command":"ls"} ` + "\n", true},
		{"safe_bash", `{"command":"ls","timeout":null}`, true},
		{"safe_bash", `{"command":"ls","extra":1}`, false},
		{"safe_bash", `{"command":"ls","Timeout":5}`, false},
		{"safe_bash", `{"Command":"ls"}`, false},
		{"safe_bash", `{"COMMAND":"ls"}`, false},
		{"safe_bash", `{"command":"ls","command":"rm -rf x"}`, false},
		{"safe_bash", `{"command":"ls"}{"command":"pwd"}`, false},
		{"safe_bash", `{"command":"ls"} {}`, false},
		{"safe_bash", `{"command":"ls"}]`, false},
		{"safe_bash", `{"command":"ls"} x`, false},
		{"safe_bash", `{"command":"ls"`, false},
		{"safe_bash", `{"command":1}`, false},
		{"safe_bash", `{"command":["ls"]}`, false},
		{"safe_bash", `{"command":"ls","timeout":"5"}`, false},
		{"safe_bash", `{"command":"ls","timeout":1.5}`, false},
		{"safe_bash", `{"command":"ls","timeout":0}`, false},
		{"safe_bash", `{"command":"ls","timeout":-1}`, false},
		{"safe_bash", `{"command":"ls","timeout":99999999999999999999}`, false},
		{"safe_bash", `{"command":"ls","cwd":3}`, false},
		{"safe_bash", `{"command":""}`, false},
		{"safe_bash", `{"command":"   \n"}`, false},
		{"safe_bash", `{"command":"ls\u0000rm"}`, false},
		{"safe_bash", `{"command":null}`, false},
		{"safe_bash", `{}`, false},
		{"safe_bash", `{"timeout":5}`, false},
		{"safe_bash", `null`, false},
		{"safe_bash", `[]`, false},
		{"safe_bash", `"ls"`, false},
		{"safe_bash", ``, false},
		{"safe_bash", "  \n", false},
		// safe_read
		{"safe_read", `{"path":"a.txt"}`, true},
		{"safe_read", `{"path":"a.txt","offset":1,"limit":1}`, true},
		{"safe_read", `{"path":"a.txt","offset":0}`, false},
		{"safe_read", `{"path":"a.txt","limit":0}`, false},
		{"safe_read", `{"path":"a.txt","limit":-3}`, false},
		{"safe_read", `{"path":"a.txt","offset":"2"}`, false},
		{"safe_read", `{"path":""}`, false},
		{"safe_read", `{"path":7}`, false},
		{"safe_read", `{}`, false},
		{"safe_read", `{"path":"a","lines":3}`, false},
		{"safe_read", `{"Path":"a"}`, false},
		{"safe_read", `{"path":"a"}{"path":"b"}`, false},
		// safe_write
		{"safe_write", `{"path":"a.txt","content":"x"}`, true},
		{"safe_write", `{"path":"a.txt","content":""}`, true},
		{"safe_write", `{"content":"","path":"a.txt"}`, true},
		{"safe_write", `{"path":"a.txt"}`, false},
		{"safe_write", `{"path":"a.txt","content":null}`, false},
		{"safe_write", `{"content":"x"}`, false},
		{"safe_write", `{"path":"","content":"x"}`, false},
		{"safe_write", `{"path":"a.txt","content":5}`, false},
		{"safe_write", `{"path":"a.txt","content":"x","mode":"0755"}`, false},
		{"safe_write", `{"path":"a.txt","content":"x","PATH":"b.txt"}`, false},
		{"safe_write", `{"path":"a.txt","path":"b.txt","content":"x"}`, false},
		{"safe_write", `{"path":"a.txt","content":"x"} trailing`, false},
	}
	reg := tools.Default()
	for _, tt := range tests {
		tool, err := reg.Get(tt.tool)
		if err != nil {
			t.Fatal(err)
		}
		call, err := tool.Decode([]byte(tt.input))
		switch {
		case tt.ok && err != nil:
			t.Errorf("%s.Decode(%s): %v", tt.tool, tt.input, err)
		case tt.ok && call == nil:
			t.Errorf("%s.Decode(%s): nil call", tt.tool, tt.input)
		case !tt.ok && !errors.Is(err, catalog.ErrBadInput):
			t.Errorf("%s.Decode(%s) = %v, want %s", tt.tool, tt.input, err, catalog.ErrBadInput.Code)
		case !tt.ok && call != nil:
			t.Errorf("%s.Decode(%s): call with an error", tt.tool, tt.input)
		}
	}
}

// Decode errors describe the problem without quoting values (they may be secrets).
func TestDecodeErrorsDoNotQuoteInput(t *testing.T) {
	const secret = "hunter2-SECRET-TOKEN"
	for _, in := range []string{
		`{"command":"` + secret + `","timeout":"` + secret + `"}`,
		`{"command":"` + secret + `"} ` + secret,
		`{"command":"` + secret + `",`,
		`{"command":"` + secret + `","` + "x" + `":1}`,
	} {
		_, err := tools.SafeBash{}.Decode([]byte(in))
		if err == nil {
			t.Fatalf("Decode(%s) succeeded", in)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q quotes the input", err)
		}
	}
}

// sandboxed are the published tools this package implements (the state
// tools are daemon/state's).
func sandboxed() []string {
	var out []string
	for _, n := range toolspec.Names() {
		if strings.HasPrefix(n, "safe_") {
			out = append(out, n)
		}
	}
	return out
}

func TestRegistry(t *testing.T) {
	reg := tools.Default()
	if got := reg.Names(); !slices.Equal(got, sandboxed()) {
		t.Errorf("registry %v, published sandboxed toolspecs %v", got, sandboxed())
	}
	for _, n := range reg.Names() {
		tool, err := reg.Get(n)
		if err != nil || tool.Name() != n {
			t.Errorf("Get(%s) = %v, %v", n, tool, err)
		}
	}
	if _, err := reg.Get("safe_rm"); !errors.Is(err, catalog.ErrUnknownTool) {
		t.Errorf("Get(safe_rm) = %v", err)
	}
}

// schema is the part of a schema.json these tests check.
type schema struct {
	Type                 string `json:"type"`
	AdditionalProperties *bool  `json:"additionalProperties"`
	Properties           map[string]struct {
		Type    string `json:"type"`
		Minimum *int   `json:"minimum"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// field is one JSON field of an input struct.
type field struct {
	name     string
	kind     string // JSON Schema type
	optional bool   // omitempty
}

func fields(t *testing.T, v any) []field {
	t.Helper()
	var out []field
	rt := reflect.TypeOf(v)
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			t.Fatalf("%s.%s has no json tag", rt.Name(), f.Name)
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		kind := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "integer", reflect.Bool: "boolean"}[ft.Kind()]
		if kind == "" {
			t.Fatalf("%s.%s: unexpected type %s", rt.Name(), f.Name, f.Type)
		}
		out = append(out, field{name, kind, strings.Contains(opts, "omitempty")})
	}
	return out
}

// Each published schema.json lists exactly the JSON fields of its input struct, with
// the same types and the same required set, and Decode enforces what it says.
func TestSchemasMatchInputStructs(t *testing.T) {
	cases := []struct {
		tool    string
		input   any
		example map[string]any // a valid input using every field
	}{
		{"safe_bash", tools.BashInput{}, map[string]any{"command": "ls", "timeout": 5, "cwd": "sub", "network": true}},
		{"safe_read", tools.ReadInput{}, map[string]any{"path": "a", "offset": 2, "limit": 3}},
		{"safe_write", tools.WriteInput{}, map[string]any{"path": "a", "content": "x"}},
	}
	if len(cases) != len(sandboxed()) {
		t.Fatalf("a tool is not covered: %v", sandboxed())
	}
	reg := tools.Default()
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			spec, ok := toolspec.Get(tc.tool)
			if !ok {
				t.Fatalf("no toolspec for %s", tc.tool)
			}
			if len(strings.TrimSpace(string(spec.Doc))) == 0 {
				t.Error("empty TOOL.md")
			}
			var s schema
			dec := json.NewDecoder(strings.NewReader(string(spec.Schema)))
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("schema.json: %v", err)
			}
			if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("schema must be an object with additionalProperties false")
			}
			fs := fields(t, tc.input)
			var structNames, structRequired []string
			for _, f := range fs {
				structNames = append(structNames, f.name)
				if !f.optional {
					structRequired = append(structRequired, f.name)
				}
				p, ok := s.Properties[f.name]
				if !ok {
					t.Errorf("field %q is missing from schema.json", f.name)
					continue
				}
				if p.Type != f.kind {
					t.Errorf("field %q: schema type %q, struct type %q", f.name, p.Type, f.kind)
				}
			}
			var schemaNames []string
			for n := range s.Properties {
				schemaNames = append(schemaNames, n)
			}
			sort.Strings(structNames)
			sort.Strings(schemaNames)
			if !slices.Equal(structNames, schemaNames) {
				t.Errorf("schema properties %v, struct fields %v", schemaNames, structNames)
			}
			sort.Strings(structRequired)
			req := slices.Clone(s.Required)
			sort.Strings(req)
			if !slices.Equal(req, structRequired) {
				t.Errorf("schema requires %v, struct requires (no omitempty) %v", req, structRequired)
			}

			// Behaviour: the full example decodes; without a required field it is
			// refused; without an optional one it still decodes; an integer with a
			// schema minimum is refused below it.
			tool, _ := reg.Get(tc.tool)
			if len(tc.example) != len(fs) {
				t.Fatalf("example %v does not use every field", tc.example)
			}
			decode := func(m map[string]any) error {
				b, _ := json.Marshal(m)
				_, err := tool.Decode(b)
				return err
			}
			if err := decode(tc.example); err != nil {
				t.Fatalf("full example: %v", err)
			}
			for name := range s.Properties {
				m := map[string]any{}
				for k, v := range tc.example {
					if k != name {
						m[k] = v
					}
				}
				err := decode(m)
				if slices.Contains(s.Required, name) && !errors.Is(err, catalog.ErrBadInput) {
					t.Errorf("without required %q: %v", name, err)
				}
				if !slices.Contains(s.Required, name) && err != nil {
					t.Errorf("without optional %q: %v", name, err)
				}
				if p := s.Properties[name]; p.Minimum != nil {
					m[name] = *p.Minimum - 1
					for k, v := range tc.example {
						if k != name {
							m[k] = v
						}
					}
					if err := decode(m); !errors.Is(err, catalog.ErrBadInput) {
						t.Errorf("%s = %d (below the schema minimum): %v", name, *p.Minimum-1, err)
					}
				}
			}
		})
	}
}

// FuzzDecode: no input makes a tool's Decode panic, and every refusal is the
// caller's mistake (ErrBadInput). An accepted input is a JSON object.
func FuzzDecode(f *testing.F) {
	seeds := []struct {
		tool  uint8
		input string
	}{
		{0, `{"command":"ls"}`},
		{0, `{"command":"ls","timeout":5,"cwd":"x"}`},
		{0, `{"command":"ls","timeout":-1}`},
		{0, `{"command":"ls"}{}`},
		{0, `{"COMMAND":"ls"}`},
		{1, `{"path":"a","offset":1,"limit":2}`},
		{1, `{"path":"a","offset":1e3}`},
		{1, `[1,2,3]`},
		{2, `{"path":"a","content":""}`},
		{2, `{"path":"a","content":"\ud800"}`},
		{2, `{"path":"a","path":"b","content":"x"}`},
		{2, "\xff"},
	}
	for _, s := range seeds {
		f.Add(s.tool, []byte(s.input))
	}
	all := []tools.Tool{tools.SafeBash{}, tools.SafeRead{}, tools.SafeWrite{}}
	f.Fuzz(func(t *testing.T, which uint8, input []byte) {
		tool := all[int(which)%len(all)]
		call, err := tool.Decode(input)
		if err != nil {
			if call != nil {
				t.Fatal("call returned with an error")
			}
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("%s.Decode(%q): %v is not ErrBadInput", tool.Name(), input, err)
			}
			return
		}
		if call == nil {
			t.Fatal("nil call without an error")
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(input, &m); err != nil || m == nil {
			t.Fatalf("%s accepted %q, which is not one JSON object: %v", tool.Name(), input, err)
		}
	})
}
