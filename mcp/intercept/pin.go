package intercept

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonscan"
)

// Pin is what contextd remembers of one tool of one server: the hash of its
// description and schemas as the user accepted them.
type Pin struct {
	// Server is the server's name (set by Get and List; Put takes the server
	// as its own argument).
	Server string
	Tool   string
	// Hash is the accepted hash, "sha256:<hex>" (see ToolHash).
	Hash string
	// Pending is the hash a later tools/list showed, different from Hash and
	// not approved yet ("" when none). Calls are refused while the server
	// shows it.
	Pending string
	// Pinned is when Hash was set: first sight, or the last approval.
	Pinned time.Time
	// Changed is when Pending was first seen (zero when none).
	Changed time.Time
}

// PinStore keeps pins. The daemon's is package mcp/store's, in SQLite;
// MemoryPins keeps them for the life of a process. Implementations are safe
// for concurrent use.
type PinStore interface {
	// Get returns server's pin for tool, and false when it has none.
	Get(ctx context.Context, server, tool string) (Pin, bool, error)
	// Put stores p as server's pin for p.Tool, replacing any.
	Put(ctx context.Context, server string, p Pin) error
	// List returns server's pins ordered by tool, or every server's (ordered
	// by server, then tool) when server is "".
	List(ctx context.Context, server string) ([]Pin, error)
}

// MemoryPins is a PinStore in memory: pins last as long as it does. The
// zero value is ready to use.
type MemoryPins struct {
	mu   sync.Mutex
	pins map[[2]string]Pin
}

// Get implements PinStore.
func (m *MemoryPins) Get(_ context.Context, server, tool string) (Pin, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pins[[2]string{server, tool}]
	return p, ok, nil
}

// Put implements PinStore.
func (m *MemoryPins) Put(_ context.Context, server string, p Pin) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pins == nil {
		m.pins = map[[2]string]Pin{}
	}
	p.Server = server
	m.pins[[2]string{server, p.Tool}] = p
	return nil
}

// List implements PinStore.
func (m *MemoryPins) List(_ context.Context, server string) ([]Pin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Pin
	for k, p := range m.pins {
		if server == "" || k[0] == server {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].Tool < out[j].Tool
	})
	return out, nil
}

// pinnedMembers are the members of a tool (in tools/list) that its pin
// covers: everything a model reads to decide how to call it, and what the
// tool promises to return. name is the key, and _meta (free-form, often
// changing) is left out.
var pinnedMembers = []string{"title", "description", "inputSchema", "outputSchema", "annotations"}

// ToolHash returns the pin hash of a tool as tools/list shows it (one element
// of result.tools, JSON): SHA-256 over the canonical JSON of its pinned
// members — objects with sorted keys, no insignificant space, strings with
// their escapes resolved — so that reformatting alone never changes it.
func ToolHash(tool []byte) (string, error) {
	s, _, err := jsonscan.Document(tool)
	if err != nil {
		return "", err
	}
	if tool[s] != '{' {
		return "", fmt.Errorf("a tool is not a JSON object")
	}
	sel := map[string]json.RawMessage{}
	for _, name := range pinnedMembers {
		m, ok, err := jsonscan.Find(tool, s, name)
		if err != nil {
			return "", err
		}
		if ok {
			sel[name] = tool[m.Start:m.End]
		}
	}
	canon, err := canonicalJSON(sel)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// canonicalJSON re-encodes v with sorted keys (encoding/json sorts map
// keys), numbers kept as written, and no HTML escaping.
func canonicalJSON(v map[string]json.RawMessage) ([]byte, error) {
	decoded := map[string]any{}
	for k, raw := range v {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var x any
		if err := d.Decode(&x); err != nil {
			return nil, err
		}
		decoded[k] = x
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(decoded); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Approve accepts the change waiting for server's tool: its pending hash
// becomes the pinned one, and calls go through again (a running engine
// notices on the next call). A tool with nothing waiting is an error wrapping
// catalog.ErrBadInput.
func Approve(ctx context.Context, ps PinStore, server, tool string) (Pin, error) {
	p, ok, err := ps.Get(ctx, server, tool)
	if err != nil {
		return Pin{}, fmt.Errorf("approve %s %s: %w", server, tool, err)
	}
	if !ok {
		return Pin{}, fmt.Errorf("approve: server %q has no pinned tool %q (pins are made when a tools/list shows the tool): %w",
			server, tool, catalog.ErrBadInput)
	}
	if p.Pending == "" {
		return p, fmt.Errorf("approve: tool %q of server %q has no change waiting for approval: %w", tool, server, catalog.ErrBadInput)
	}
	p.Hash, p.Pending = p.Pending, ""
	p.Pinned, p.Changed = time.Now().UTC(), time.Time{}
	if err := ps.Put(ctx, server, p); err != nil {
		return Pin{}, fmt.Errorf("approve %s %s: %w", server, tool, err)
	}
	p.Server = server
	return p, nil
}
