// Package plugins runs installed plugin tools: one instance per workspace and tool, started in a contextd sandbox built from the tool's approved manifest, kept warm between calls, stopped when idle, and replaced after it crashed, was killed or hung.
package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/daemon/plugins/pluginpolicy"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
)

// Options are what the runtime needs of the daemon.
type Options struct {
	Store toolstore.Store
	// Enablement records which installed tools each project enables
	// (contextd-proxy install --tools); nil: every tool everywhere.
	Enablement *toolstore.Enablement
	Runner     runner.Runner
	Sandbox    *sandboxenv.Builder
	Config     *config.Config
	Logger     *slog.Logger
	// RunDir holds the instances' socket and scratch directories. It must
	// be short: a unix socket's path is at most 107 bytes. Default:
	// $XDG_RUNTIME_DIR/contextd/p.
	RunDir string
	// RetryStart is how long after a failed start the calls of that tool
	// in that workspace get the same failure without another sandbox being
	// made for them. Default: 10 s.
	RetryStart time.Duration
}

// Runtime is the daemon's plugin tools: the installed ones, read from the
// tool store's lock whenever it changed, and their running instances.
//
// Lock order: Runtime.mu, then instance.mu; a start runs without either.
type Runtime struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	stamp  string
	tools  map[string]*entry
	loaded error
	pool   map[poolKey]*slot
	failed map[poolKey]failedStart
	closed bool
}

// entry is one installed tool as its calls need it.
type entry struct {
	tool   *toolstore.Tool
	m      *toolmanifest.Manifest
	schema *jsonschema.Resolved
	egress []egress.Rule
}

// New returns the runtime; it reads the store on the first lookup.
func New(opts Options) *Runtime {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RunDir == "" {
		opts.RunDir = filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "contextd", "p")
	}
	if opts.RetryStart == 0 {
		opts.RetryStart = 10 * time.Second
	}
	return &Runtime{opts: opts, log: opts.Logger, tools: map[string]*entry{}, pool: map[poolKey]*slot{}, failed: map[poolKey]failedStart{}}
}

// Has reports whether name is an installed tool (reading the lock again if
// it changed).
func (r *Runtime) Has(name string) bool {
	_, err := r.lookup(name)
	return err == nil
}

// Names are the installed tools.
func (r *Runtime) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloadLocked()
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	return out
}

// lookup is the installed tool name, or ErrUnknownTool.
func (r *Runtime) lookup(name string) (*entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloadLocked()
	if e, ok := r.tools[name]; ok {
		return e, nil
	}
	if r.loaded != nil {
		return nil, fmt.Errorf("%q: %w (the tool store could not be read: %v)", name, catalog.ErrUnknownTool, r.loaded)
	}
	return nil, fmt.Errorf("%q: %w", name, catalog.ErrUnknownTool)
}

// reloadLocked reads the lock again when it changed since the last read. An
// entry that cannot be read is left out (and logged): the other tools
// still serve. Instances of a tool removed or replaced are stopped.
func (r *Runtime) reloadLocked() {
	stamp, err := r.opts.Store.Stamp()
	if err == nil && stamp == r.stamp && r.loaded == nil {
		return
	}
	lock, err := r.opts.Store.Load()
	if err != nil {
		r.loaded = err
		r.log.Warn("plugin tools: the tool store cannot be read", "err", err)
		return
	}
	r.stamp, r.loaded = stamp, nil
	tools := map[string]*entry{}
	for _, name := range lock.Names() {
		e, err := r.load(lock.Tools[name])
		if err != nil {
			r.log.Warn("plugin tools: a tool is left out", "tool", name, "err", err)
			continue
		}
		tools[name] = e
	}
	r.tools = tools
	for k, s := range r.pool {
		if e, ok := tools[k.tool]; !ok || e.tool.Checksum != k.checksum {
			delete(r.pool, k)
			go s.stop("the tool was removed or updated")
		}
	}
}

// load reads what a call of t needs: its approved manifest, its schema and
// its egress rules.
func (r *Runtime) load(t *toolstore.Tool) (*entry, error) {
	m, err := r.opts.Store.Approved(t)
	if err != nil {
		return nil, err
	}
	raw, err := r.opts.Store.File(t, toolstore.SchemaName)
	if err != nil {
		return nil, fmt.Errorf("tool %s: read %s: %w", t.Name, toolstore.SchemaName, err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("tool %s: %s: %w", t.Name, toolstore.SchemaName, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %s: %w", t.Name, toolstore.SchemaName, err)
	}
	rules, err := pluginpolicy.CompileEgress(t.Name, m.Permissions.Egress)
	if err != nil {
		return nil, err
	}
	return &entry{tool: t, m: m, schema: rs, egress: rules}, nil
}

// Tool is an installed tool's description, for listings.
type Tool struct {
	Name, Version, Description string
	Schema                     json.RawMessage
}

// Describe is the installed tool name's description and schema.
func (r *Runtime) Describe(name string) (Tool, error) {
	e, err := r.lookup(name)
	if err != nil {
		return Tool{}, err
	}
	raw, _ := r.opts.Store.File(e.tool, toolstore.SchemaName)
	return Tool{Name: name, Version: e.tool.Version, Description: e.m.Description, Schema: raw}, nil
}

// Decode checks a call's input against the tool's schema.
func (r *Runtime) Decode(name string, input []byte) (*Call, error) {
	e, err := r.lookup(name)
	if err != nil {
		return nil, err
	}
	in := bytes.TrimSpace(input)
	if len(in) == 0 {
		in = []byte("{}")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, fmt.Errorf("%s: the input is not one JSON value: %w", name, catalog.ErrBadInput)
	}
	// The validator wants JSON's own types: decode again without Number.
	var plain any
	if err := json.Unmarshal(in, &plain); err != nil {
		return nil, fmt.Errorf("%s: input: %v: %w", name, err, catalog.ErrBadInput)
	}
	if err := e.schema.Validate(plain); err != nil {
		return nil, fmt.Errorf("%s: input does not match its schema.json: %v: %w", name, err, catalog.ErrBadInput)
	}
	return &Call{rt: r, e: e, input: in}, nil
}

// Enabled refuses a call of name in the workspace root when the project
// chose not to enable it. The choice is read from the user's state
// directory, never from the project, whose files the agent can write.
func (r *Runtime) Enabled(name, root string) error {
	if r.opts.Enablement == nil {
		return nil
	}
	c, err := r.opts.Enablement.Of(root)
	if err != nil {
		return fmt.Errorf("tool %s: which tools %s enables cannot be read: %w", name, root, err)
	}
	if !c.Enables(name) {
		return fmt.Errorf("tool %s is installed but not enabled in %s (contextd-proxy install --tools %s, in the project): %w", name, root, name, catalog.ErrPolicy)
	}
	return nil
}

// Close stops every instance and waits until their sandboxes are gone.
func (r *Runtime) Close() {
	r.mu.Lock()
	r.closed = true
	slots := make([]*slot, 0, len(r.pool))
	for k, s := range r.pool {
		slots = append(slots, s)
		delete(r.pool, k)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop("the daemon is stopping")
		}()
	}
	wg.Wait()
}

// idleStop is how long an instance is kept without a call.
func (r *Runtime) idleStop() time.Duration {
	if d := r.opts.Config.Plugins.IdleStop.Duration; d > 0 {
		return d
	}
	return 5 * time.Minute
}
