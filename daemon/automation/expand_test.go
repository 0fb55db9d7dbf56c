package automation_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/automation"
	"github.com/contextd/contextd/daemon/config"
)

const pushPayload = `{
  "ref": "refs/heads/$(touch pwned)",
  "after": "0123456789abcdef",
  "size": 1.50e3,
  "forced": false,
  "pusher": {"name": "Ada \"the\" Lovelace", "email": null},
  "commits": [{"id": "c0", "tags": ["a", "b"]}, {"id": "c1", "message": "fix: ü ✓\n; rm -rf ~"}],
  "repository": {"owner": { "login" : "octo" }, "topics": []},
  "0": "zero key"
}`

func compiled(t testing.TB, edit func(*config.Automation)) *automation.Automation {
	a := base(t)
	edit(&a)
	c, err := automation.Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExpandEnv(t *testing.T) {
	c := compiled(t, func(a *config.Automation) {
		a.Env = map[string]string{
			"REF": "ref", "SIZE": "size", "FORCED": "forced", "NAME_": "pusher.name", "EMAIL": "pusher.email",
			"C1": "commits.1.message", "C1B": "commits[1].id", "TAG": "commits[0].tags[1]", "OWNER": "repository.owner",
			"TOPICS": "repository.topics", "ZERO": "0", "GONE": "commits.2.id", "DEEP": "ref.x",
		}
	})
	input, env, warnings, err := c.Expand([]byte(pushPayload))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CONTEXTD_HOOK_REF":    "refs/heads/$(touch pwned)", // data: the command quotes "$CONTEXTD_HOOK_REF"
		"CONTEXTD_HOOK_SIZE":   "1.50e3",                    // a number as the payload spells it
		"CONTEXTD_HOOK_FORCED": "false",
		"CONTEXTD_HOOK_NAME_":  `Ada "the" Lovelace`,
		"CONTEXTD_HOOK_C1":     "fix: ü ✓\n; rm -rf ~",
		"CONTEXTD_HOOK_C1B":    "c1",
		"CONTEXTD_HOOK_TAG":    "b",
		"CONTEXTD_HOOK_OWNER":  `{ "login" : "octo" }`, // an object as its JSON, byte for byte
		"CONTEXTD_HOOK_TOPICS": "[]",
		"CONTEXTD_HOOK_ZERO":   "zero key",
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env:\n got %q\nwant %q", env, want)
	}
	// The missing, the null and the path through a string: unset, each said.
	if len(warnings) != 3 || !strings.Contains(strings.Join(warnings, "\n"), "CONTEXTD_HOOK_EMAIL is unset") {
		t.Errorf("warnings %q", warnings)
	}
	// The template is untouched by the payload.
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil || in["command"] != `echo "$CONTEXTD_HOOK_REF"` || in["timeout"] != 60.0 || len(in) != 2 {
		t.Errorf("input %s, %v", input, err)
	}
}

func TestExpandArgs(t *testing.T) {
	// memory_search has no "tags" field: Compile refuses it.
	a := base(t)
	a.Tool, a.Env, a.Args = "memory_search", nil, map[string]string{"tags": "x"}
	if _, err := automation.Compile(a); !errors.Is(err, catalog.ErrConfig) {
		t.Fatalf("unknown args field: %v", err)
	}

	c := compiled(t, func(a *config.Automation) {
		a.Tool, a.Env = "plugtool", nil
		a.Input = map[string]any{"query": "fallback", "limit": int64(3)}
		a.Args = map[string]string{"query": "commits.1.message", "tags": "commits.0.tags", "who": "pusher", "none": "pusher.email", "missing": "nope"}
	})
	input, env, warnings, err := c.Expand([]byte(pushPayload))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"limit":3,"none":null,"query":"fix: ü ✓\n; rm -rf ~","tags":["a","b"],"who":{"name":"Ada \"the\" Lovelace","email":null}}`
	if string(input) != want || len(env) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], `"missing"`) {
		t.Errorf("Expand = %s, %v, %q;\nwant %s", input, env, warnings, want)
	}
}

func TestExpandRefusals(t *testing.T) {
	c := compiled(t, func(a *config.Automation) { a.Env = map[string]string{"V": "v"} })
	for _, tc := range []struct{ name, payload, wants string }{
		{"not JSON", `{"v": `, "not JSON"},
		{"NUL", `{"v": "a\u0000b"}`, "CONTEXTD_HOOK_V from v: the value holds a NUL"},
		{"oversize", `{"v": "` + strings.Repeat("x", automation.MaxEnvValue+1) + `"}`, "CONTEXTD_HOOK_V from v: the value is 65537 bytes"},
		{"credential", `{"v": "ghp_0123456789abcdefghijABCDEFGHIJ0123"}`, "CONTEXTD_HOOK_V from v: the value looks like a credential"},
		{"jwt", `{"v": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc"}`, "looks like a credential"},
	} {
		_, _, _, err := c.Expand([]byte(tc.payload))
		if !errors.Is(err, catalog.ErrBadInput) || !strings.Contains(err.Error(), tc.wants) || !strings.HasPrefix(err.Error(), "automation ci: ") {
			t.Errorf("%s: %v; want %s naming %q", tc.name, err, catalog.ErrBadInput.Code, tc.wants)
		}
		if err != nil && strings.Contains(err.Error(), "ghp_") {
			t.Errorf("%s: the error repeats the value: %v", tc.name, err)
		}
	}
	// Together the variables stay under MaxEnvTotal.
	env := map[string]string{}
	payload := map[string]string{}
	for _, n := range []string{"A", "B", "C", "D", "E"} {
		env[n] = strings.ToLower(n)
		payload[strings.ToLower(n)] = strings.Repeat("x y ", automation.MaxEnvValue/4-10)
	}
	c = compiled(t, func(a *config.Automation) { a.Env = env })
	b, _ := json.Marshal(payload)
	if _, _, _, err := c.Expand(b); !errors.Is(err, catalog.ErrBadInput) || !strings.Contains(err.Error(), "together") {
		t.Errorf("total: %v", err)
	}
}

// FuzzExpand: for any payload, Expand never panics; when it succeeds the
// input is valid JSON holding the template's fields, every variable carries
// the prefix, and its value is what the payload holds at its path.
func FuzzExpand(f *testing.F) {
	f.Add([]byte(pushPayload))
	f.Add([]byte(`{"a": {"b": [1, "two", {"c": null}]}, "s": "$(id)"}`))
	f.Add([]byte(`[{"a": 1}]`))
	f.Add([]byte(`"just a string"`))
	f.Add([]byte(`{"a": "\ud800 \u0000"}`))
	c := compiled(f, func(a *config.Automation) {
		a.Tool = "plugtool"
		a.Input = map[string]any{"fixed": "kept"}
		a.Env = map[string]string{"A": "a", "B": "a.b", "B1": "a.b.1", "C": "a.b[2].c", "S": "s", "T": "0.a"}
		a.Args = map[string]string{"arg": "a.b", "s": "s"}
	})
	f.Fuzz(func(t *testing.T, payload []byte) {
		input, env, _, err := c.Expand(payload)
		if err != nil {
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("error of another class: %v", err)
			}
			return
		}
		var in map[string]json.RawMessage
		if !json.Valid(input) || json.Unmarshal(input, &in) != nil || string(in["fixed"]) != `"kept"` {
			t.Fatalf("input %q", input)
		}
		doc, err := decode(payload)
		if err != nil {
			t.Fatalf("accepted a payload that is not JSON: %q", payload)
		}
		paths := map[string][]any{"A": {"a"}, "B": {"a", "b"}, "B1": {"a", "b", 1}, "C": {"a", "b", index(2), "c"}, "S": {"s"}, "T": {0, "a"}}
		for name, v := range env {
			short, ok := strings.CutPrefix(name, automation.EnvPrefix)
			if !ok || paths[short] == nil {
				t.Fatalf("variable %q", name)
			}
			want, found := at(doc, paths[short])
			if !found {
				t.Fatalf("%s = %q, but the payload has nothing there", name, v)
			}
			if s, isString := want.(string); isString && v != s {
				t.Fatalf("%s = %q, want %q", name, v, s)
			}
			if _, isString := want.(string); !isString {
				if got, err := decode([]byte(v)); err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s = %q, not the payload's %v", name, v, want)
				}
			}
		}
	})
}

// decode keeps numbers as written, so that any JSON number compares.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	return v, d.Decode(&v)
}

// index is a path step written [n]: an array's index only.
type index int

// at walks a decoded document independently of the package's own lookup:
// a string step is an object's key; an int step, a bare digit, is an
// object's key or an array's index; an index step an array's index only.
func at(doc any, path []any) (any, bool) {
	for _, p := range path {
		var ok bool
		switch v := doc.(type) {
		case map[string]any:
			switch k := p.(type) {
			case string:
				doc, ok = v[k]
			case int:
				doc, ok = v[string(rune('0'+k))]
			}
		case []any:
			i, isInt := p.(int)
			if j, isIndex := p.(index); isIndex {
				i, isInt = int(j), true
			}
			if ok = isInt && i < len(v); ok {
				doc = v[i]
			}
		}
		if !ok {
			return nil, false
		}
	}
	return doc, doc != nil
}
