package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/daemontest"
	"github.com/contextd/contextd/internal/toolstoretest"
	"github.com/contextd/contextd/toolstore"
	"github.com/contextd/contextd/wire/lite"
)

const (
	helloSchema = `{
  "type": "object",
  "properties": {"who": {"type": "object", "properties": {"name": {"type": "string"}}}},
  "required": ["who"]
}`
	lintSchema = `{"type":"object","properties":{"path":{"type":"string"}}}`
)

// pluginEnv is a tool store with hello, lint and broken (whose schema is
// not an object's), and the record of the projects' choices.
func pluginEnv(t *testing.T) (root string, o *Options, notes *bytes.Buffer) {
	t.Helper()
	base := t.TempDir()
	toolstoretest.Write(t, filepath.Join(base, "store"),
		toolstoretest.Tool{Name: "hello", Description: "Say hello", Schema: helloSchema, Doc: "# hello\n"},
		toolstoretest.Tool{Name: "lint", Description: "Lint a file", Schema: lintSchema},
		toolstoretest.Tool{Name: "broken", Description: "Broken", Schema: `{"type":"string"}`})
	notes = &bytes.Buffer{}
	root = filepath.Join(base, "proj")
	return root, &Options{Root: root, ToolStore: filepath.Join(base, "store"), Enablement: filepath.Join(base, "state", toolstore.EnabledName), Notes: notes}, notes
}

func listed(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

// The tool list holds the plugin tools the workspace enables, with the
// description and the whole input schema the user approved; a tool that
// cannot be served is left out with a note.
func TestPluginsListed(t *testing.T) {
	root, o, notes := pluginEnv(t)
	tests := []struct {
		name   string
		choice *toolstore.Choice // nil: none recorded
		want   []string
	}{
		{"nothing recorded", nil, []string{"hello", "lint"}},
		{"all", &toolstore.Choice{All: true}, []string{"hello", "lint"}},
		{"hello only", &toolstore.Choice{Tools: []string{"hello", "broken"}}, []string{"hello"}},
		{"none", &toolstore.Choice{}, nil},
	}
	e := toolstore.Enablement{Path: o.Enablement}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.choice != nil {
				if err := e.Set(root, *tt.choice); err != nil {
					t.Fatal(err)
				}
			}
			notes.Reset()
			_, cs := connect(t, o)
			tools := listed(t, cs)
			var got []string
			for n := range tools {
				if !builtinTool(n) && n != continueTool {
					got = append(got, n)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("plugin tools listed %v, want %v", got, tt.want)
			}
			if !builtinTool("safe_bash") || tools["safe_bash"] == nil || tools[continueTool] == nil {
				t.Error("the built-ins are not all listed")
			}
			if h := tools["hello"]; h != nil {
				schema, _ := json.Marshal(h.InputSchema)
				var got, want any
				json.Unmarshal(schema, &got)
				json.Unmarshal([]byte(helloSchema), &want)
				if h.Description != "Say hello" || !reflect.DeepEqual(got, want) {
					t.Errorf("hello listed as %q %s, want the approved description and the whole schema", h.Description, schema)
				}
			}
			brokenEnabled := tt.choice == nil || tt.choice.Enables("broken")
			if got := strings.Contains(notes.String(), "plugin tool broken not served"); got != brokenEnabled {
				t.Errorf("notes %q: a note on broken %v, want %v", notes.String(), got, brokenEnabled)
			}
		})
	}
}

// A plugin tool's call goes to the daemon as a built-in's does, and its
// cut result pages through continue.
func TestPluginCallOverMCP(t *testing.T) {
	root, o, _ := pluginEnv(t)
	if err := (toolstore.Enablement{Path: o.Enablement}).Set(root, toolstore.Choice{Tools: []string{"hello"}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []*lite.Call
	o.Socket = daemontest.Fake(t, func(c *lite.Call) ([]byte, *lite.Result) {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		if c.Continue != "" {
			return []byte("part two\n"), &lite.Result{}
		}
		return []byte("part one\n"), &lite.Result{ExitCode: 2, Truncated: true, Continue: "c42", Warnings: []string{"w"}}
	})
	cwd := t.TempDir()
	t.Chdir(cwd)
	srv, cs := connect(t, o)

	steps := []struct {
		tool    string
		args    any
		isError bool
		text    string // prefix
		call    *lite.Call
	}{
		{"hello", map[string]any{"who": map[string]any{"name": "ann"}}, false,
			"part one\n[exit status 2]\n[warning: w]\n[truncated: call continue with {\"ref\":\"hello:c42\"} for the next part]\n",
			&lite.Call{Tool: "hello", Input: json.RawMessage(`{"who":{"name":"ann"}}`)}},
		{continueTool, map[string]any{"ref": "hello:c42"}, false, "part two\n", &lite.Call{Tool: "hello", Continue: "c42"}},
		{continueTool, map[string]any{"ref": "lint:c42"}, true, "CTXD-E040: ", nil},
	}
	for _, st := range steps {
		mu.Lock()
		before := len(calls)
		mu.Unlock()
		text, isError := callText(t, cs, st.tool, st.args)
		if isError != st.isError || !strings.HasPrefix(text, st.text) {
			t.Errorf("%s %v: isError %v, text %q; want %v, %q", st.tool, st.args, isError, text, st.isError, st.text)
		}
		mu.Lock()
		got := calls[before:]
		mu.Unlock()
		if st.call == nil {
			if len(got) != 0 {
				t.Errorf("%s %v: reached the daemon: %+v", st.tool, st.args, got[0])
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("%s %v: %d calls reached the daemon", st.tool, st.args, len(got))
		}
		c := got[0]
		if c.Tool != st.call.Tool || string(c.Input) != string(st.call.Input) || c.Continue != st.call.Continue || c.Session != srv.Session() || c.Cwd != cwd {
			t.Errorf("%s %v: call %+v, want %+v in session %s, cwd %s", st.tool, st.args, c, st.call, srv.Session(), cwd)
		}
	}
}
