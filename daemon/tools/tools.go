// Package tools is the daemon's half of each tool: decode, policy, plan and the sandboxed run.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/workspace"
)

// Env is everything a tool call may use: its inputs. What the call produced
// besides its output comes back in its Outcome.
type Env struct {
	Place   workspace.Place
	Session string
	Peer    peer.Cred
	// CallerEnv is the caller's environment as the proxy sent it, already reduced
	// to the allowlist (see Environ).
	CallerEnv map[string]string
	Config    *config.Config
	Runner    runner.Runner
	// Out receives the tool's output as it is produced, already scrubbed by the
	// tool (placeholders in place of secrets).
	Out io.Writer
	// Vault numbers the session's secrets (placeholders) and gives them back
	// to safe_write.
	Vault *scrub.Vault
	// Layer is the daemon's own scrub of this call's output; a tool that reads
	// a file sets its Source before any output, so that a secret the daemon
	// catches is tied to the file it came from.
	Layer *respond.Layer
	// Rules is the user's extra gitleaks configuration, for the tool's scrub.
	Rules string
	// Window is how much of each end of a long output the tool scrubs itself
	// (the part a first response can show).
	Window int
	// Salience is the salience pass's rules, for a tool that runs it in
	// its sandbox (safe_read's middle); nil when the pass is off.
	Salience *salience.Set
	// Store holds memories, checkpoints and branches for the state tools;
	// nil when it could not be opened (they fail with
	// catalog.ErrStoreUnavailable).
	Store store.Store
	// Counter counts tokens with the response pipeline's tokenizer.
	Counter *budget.Counter
	// Budget is the call's response budget in tokens (what the daemon will
	// let out); a tool may use it to shape its output.
	Budget int
	// Scrubber is the daemon's scrubber (default and user rules), for what
	// the daemon itself shows a call (the scrubbed configuration copies).
	Scrubber *scrub.Scrubber
	// Sandbox builds what a sandboxed tool's process sees beyond the
	// system: the shield, $HOME, the network, the limits.
	Sandbox *sandboxenv.Builder
}

// Outcome is how a run ended and what it ran under. Err is the tool's own
// failure (a missing file, a timeout), reported to the caller in the result,
// not as a protocol error.
type Outcome struct {
	ExitCode int
	Err      error
	// Layers are the sandbox layers the tool's process ran under (zero when
	// no process ran: the state tools).
	Layers sandboxinfo.Layers
	// Source is the file the output came from ("" for command output).
	Source string
	// File is the file the tool opened (safe_read) or made (safe_write),
	// as the sandbox saw it; zero when it did not say.
	File workspace.FileID
	// Findings are the tool's own scrub's catches by rule.
	Findings map[string]int
	// Warnings for the caller (not failures); the audit record has them too.
	Warnings []string
	// Egress is what went through the egress proxy the tool's process had,
	// nil when it had none: where its rules come from and each
	// connection, allowed or refused, for the audit record, and the lines
	// for the caller (how to allow a refused host), for the result only.
	Egress *netview.Summary
	// Stages are the sandboxed tool's own timings (ms since it started), for
	// the debug log.
	Stages map[string]float64
	// gone is the sandbox's runner.Exit.Gone: what must outlive its mounts
	// is released after it (runner.AfterGone).
	gone <-chan struct{}
}

// Call is a decoded, valid call, ready to run.
type Call interface {
	Run(ctx context.Context, env *Env) Outcome
}

// Tool decodes input into a Call. A decode error is the caller's mistake and wraps
// catalog.ErrBadInput.
type Tool interface {
	Name() string
	Decode(input []byte) (Call, error)
}

// Registry maps names to tools.
type Registry struct{ tools map[string]Tool }

// NewRegistry returns a registry of the given tools.
func NewRegistry(ts ...Tool) *Registry {
	r := &Registry{tools: map[string]Tool{}}
	for _, t := range ts {
		r.tools[t.Name()] = t
	}
	return r
}

// Default returns the registry of every built-in tool.
func Default() *Registry { return NewRegistry(SafeBash{}, SafeRead{}, SafeWrite{}) }

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, error) {
	t, ok := r.tools[name]
	if !ok {
		return nil, fmt.Errorf("%q: %w", name, catalog.ErrUnknownTool)
	}
	return t, nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// decodeStrict decodes one JSON object into v, refusing unknown fields and trailing
// data, so a misspelled key is an error and not a silently ignored option.
func decodeStrict(tool string, input []byte, v any) error {
	return DecodeStrict(tool, input, v, false)
}

// DecodeStrict is decodeStrict for the tools of other packages (daemon/state).
// With noNull a key whose value is null is refused too (leave it out to get
// its default).
func DecodeStrict(tool string, input []byte, v any, noNull bool) error {
	if len(bytes.TrimSpace(input)) == 0 {
		return fmt.Errorf("%s: empty input, expected a JSON object: %w", tool, catalog.ErrBadInput)
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: input: %s: %w", tool, jsonProblem(err), catalog.ErrBadInput)
	}
	if dec.More() {
		return fmt.Errorf("%s: input: data after the JSON object: %w", tool, catalog.ErrBadInput)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: input: data after the JSON object: %w", tool, catalog.ErrBadInput)
	}
	if err := exactKeys(input, v, noNull); err != nil {
		return fmt.Errorf("%s: input: %v: %w", tool, err, catalog.ErrBadInput)
	}
	return nil
}

// exactKeys refuses what encoding/json lets through: a key that matches a field only
// case-insensitively ("PATH" for "path") and a key given twice. json picks one of
// the values silently, so a schema validator or a policy reading the same input
// would see another path or command than the tool runs. v is a pointer to the
// struct input was decoded into, which is known to be one valid JSON object.
func exactKeys(input []byte, v any, noNull bool) error {
	known := map[string]bool{}
	rt := reflect.TypeOf(v).Elem()
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("expected a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errors.New("invalid JSON")
		}
		key, _ := tok.(string)
		switch {
		case !known[key]:
			return fmt.Errorf("unknown field %q (field names are lower case, as in schema.json)", key)
		case seen[key]:
			return fmt.Errorf("field %q given twice", key)
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return errors.New("invalid JSON")
		}
		if noNull && string(val) == "null" {
			return fmt.Errorf("field %q is null; leave it out to use its default", key)
		}
	}
	return nil
}

// jsonProblem describes a decode error without quoting the input (it may hold
// secrets).
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s, not %s", te.Field, te.Type.Kind(), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated JSON"
	}
	return err.Error() // e.g. `json: unknown field "x"`: names the key, not the value
}

func missing(tool, field string) error {
	return fmt.Errorf("%s: %q is required: %w", tool, field, catalog.ErrBadInput)
}
