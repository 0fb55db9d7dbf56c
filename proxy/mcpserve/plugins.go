package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/proxy/install"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/toolstore"
)

// The plugin tools served are those installed in the tool store that the
// workspace enables, with the description and input schema the user
// approved at install. They are read from the store and the enablement
// record, both outside every project, rather than from the tools directory
// install laid out in the project, where a sandboxed agent can write: what
// the model is told about a tool is never the agent's to change. The
// schema is served whole, as the daemon checks the input against it: a
// plugin's input may nest what the built-ins' compact schemas leave out.

// plugins returns the names and served form of the plugin tools o's
// workspace enables, in the store's order. A tool that cannot be served
// is left out with a note, and so is every tool when the store or the
// record cannot be read: the built-ins are served regardless.
func plugins(o *Options, notes io.Writer) ([]string, map[string]compact) {
	note := func(format string, a ...any) {
		fmt.Fprintf(notes, "contextd: note: "+format+"\n", a...)
	}
	store, enabled, err := o.storeAndChoice()
	if err != nil {
		note("no plugin tools served: %v", err)
		return nil, nil
	}
	lock, err := store.Load()
	if err != nil {
		note("no plugin tools served: %v", err)
		return nil, nil
	}
	var names []string
	specs := map[string]compact{}
	for _, n := range lock.Names() {
		if !enabled.Enables(n) {
			continue
		}
		if _, builtin := toolspec.Get(n); builtin || n == continueTool {
			note("plugin tool %s is named like a contextd tool; not served (install it under another name)", n)
			continue
		}
		c, err := pluginSpec(store, lock, n)
		if err != nil {
			note("plugin tool %s not served: %v", n, err)
			continue
		}
		names = append(names, n)
		specs[n] = c
	}
	return names, specs
}

// storeAndChoice is the tool store and the workspace's choice of its tools.
func (o *Options) storeAndChoice() (toolstore.Store, toolstore.Choice, error) {
	store := toolstore.Store{Root: o.ToolStore}
	if store.Root == "" {
		var err error
		if store, err = toolstore.Default(); err != nil {
			return store, toolstore.Choice{}, err
		}
	}
	e := toolstore.Enablement{Path: o.Enablement}
	if e.Path == "" {
		var err error
		if e, err = toolstore.DefaultEnablement(); err != nil {
			return store, toolstore.Choice{}, err
		}
	}
	root := o.Root
	if root == "" {
		cwd, err := os.Getwd()
		if err != nil {
			return store, toolstore.Choice{}, fmt.Errorf("working directory: %v", err)
		}
		if root, err = install.FindRoot(cwd); err != nil {
			return store, toolstore.Choice{}, err
		}
	}
	c, err := e.Of(root)
	return store, c, err
}

// pluginSpec is the served form of the installed tool n: the description
// of its approved manifest and its schema.json, compacted.
func pluginSpec(store toolstore.Store, lock *toolstore.Lock, n string) (compact, error) {
	t, err := lock.Get(n)
	if err != nil {
		return compact{}, err
	}
	m, err := store.Approved(t)
	if err != nil {
		return compact{}, err
	}
	schema, err := store.File(t, toolstore.SchemaName)
	if err != nil {
		return compact{}, fmt.Errorf("its %s: %v", toolstore.SchemaName, err)
	}
	if err := toolmanifest.CheckSchema(schema); err != nil {
		return compact{}, fmt.Errorf("its %s: %w", toolstore.SchemaName, err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, schema); err != nil {
		return compact{}, fmt.Errorf("its %s: %v", toolstore.SchemaName, err)
	}
	return compact{Description: m.Description, Schema: b.Bytes()}, nil
}

// addTool registers one tool, refusing with an error what the SDK would
// panic on (a schema it cannot take).
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.AddTool(t, h)
	return nil
}
