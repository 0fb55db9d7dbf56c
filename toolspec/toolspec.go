// Package toolspec holds what an agent learns about each tool: its name, its input
// schema (schema.json) and its one-paragraph manual (TOOL.md), embedded so the proxy
// can install them and the daemon can list them.
package toolspec

import (
	"embed"
	"slices"
)

//go:embed */schema.json */TOOL.md
var files embed.FS

// Spec is one tool's published description.
type Spec struct {
	Name   string
	Schema []byte // schema.json
	Doc    []byte // TOOL.md
}

// names lists the tools in the order they are installed and shown.
var names = []string{
	"safe_bash", "safe_read", "safe_write",
	"memory_search", "memory_get", "memory_store", "memory_feedback",
	"checkpoint_save", "checkpoint_restore", "checkpoint_list",
	"branch", "return",
}

// Kind is where a tool runs, which decides what a call of it needs.
type Kind int

const (
	// Unknown is the kind of a name that is not a tool.
	Unknown Kind = iota
	// Sandboxed tools run a process in a sandbox of its own (namespaces,
	// seccomp, a transient scope): safe_bash, safe_read, safe_write.
	Sandboxed
	// State tools run in the daemon and touch only its own store:
	// memories, checkpoints, branches.
	State
)

// kinds is each tool's kind; TestKinds checks that every listed tool has one.
var kinds = map[string]Kind{
	"safe_bash": Sandboxed, "safe_read": Sandboxed, "safe_write": Sandboxed,
	"memory_search": State, "memory_get": State, "memory_store": State, "memory_feedback": State,
	"checkpoint_save": State, "checkpoint_restore": State, "checkpoint_list": State,
	"branch": State, "return": State,
}

// KindOf returns the kind of the named tool (Unknown for a name that is not
// a tool).
func KindOf(name string) Kind { return kinds[name] }

// All returns every tool's spec.
func All() []Spec {
	out := make([]Spec, 0, len(names))
	for _, n := range names {
		s, _ := Get(n)
		out = append(out, s)
	}
	return out
}

// Names returns the tool names.
func Names() []string { return slices.Clone(names) }

// Get returns the spec of the named tool.
func Get(name string) (Spec, bool) {
	if !slices.Contains(names, name) {
		return Spec{}, false
	}
	schema, err1 := files.ReadFile(name + "/schema.json")
	doc, err2 := files.ReadFile(name + "/TOOL.md")
	if err1 != nil || err2 != nil {
		// A name without files is a build mistake caught by the package's tests.
		return Spec{}, false
	}
	return Spec{Name: name, Schema: schema, Doc: doc}, true
}
