package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/contextd/contextd/sandboxinfo"
)

// FormatVersion is the "v" of every record this package writes. A reader
// refuses records of a version it does not know rather than misjudge them.
const FormatVersion = 1

// Record kinds. A tool call has the empty kind; the others are written by the
// log itself.
const (
	KindCall      = ""
	KindReset     = "chain-reset" // Open found the log damaged and restarted the chain
	KindRetention = "retention"   // old files were deleted by Options.MaxFiles
	KindEgress    = "egress"      // a wrapped MCP server ended: its connections through the egress proxy
	KindGitGuard  = "git-guard"   // a wrapped MCP server ended: what it changed of git's entries, reverted
	KindHook      = "hook"        // a webhook delivery was refused: Tool is hook:NAME, Error its code, Reason its class
)

// Record is one line of the audit log. The caller fills in what it knows about
// a call; Append sets V, Seq, Prev and Hash, and Time when it is zero. Nothing
// in a record may hold a secret: Args must already be scrubbed, findings are
// counted by rule id only.
type Record struct {
	V    int       `json:"v"`
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"` // when the call started, UTC
	Kind string    `json:"kind,omitempty"`

	PeerPID int32  `json:"peer_pid,omitempty"`
	PeerUID uint32 `json:"peer_uid,omitempty"`
	PeerExe string `json:"peer_exe,omitempty"` // the caller's /proc/PID/exe, as far as it could be read

	Session   string          `json:"session,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"` // the input, scrubbed; not JSON: Append stores it as a string, with a warning
	Cwd       string          `json:"cwd,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
	Sandbox   Sandbox         `json:"sandbox,omitzero"`

	ExitCode       int    `json:"exit_code,omitempty"` // the tool's exit status, or contextd's own for its failures
	Error          string `json:"error,omitempty"`     // catalog code of contextd's failure, e.g. "CTXD-E020"
	DurationMS     int64  `json:"duration_ms,omitempty"`
	BytesProduced  int64  `json:"bytes_produced,omitempty"`  // output of the tool before scrubbing and budget
	TokensReturned int    `json:"tokens_returned,omitempty"` // what the agent received
	Truncated      bool   `json:"truncated,omitempty"`
	ContinueOf     string `json:"continue_of,omitempty"` // the reference this call is the next page of

	Findings         map[string]int `json:"findings,omitempty"`           // secrets scrubbed, by gitleaks rule id
	SecondLayer      int            `json:"second_layer,omitempty"`       // secrets the daemon's scrub caught after the sandbox's
	SecondLayerRules map[string]int `json:"second_layer_rules,omitempty"` // the same, by rule id
	Warnings         []string       `json:"warnings,omitempty"`           // what the caller was told besides its output; never a connection
	// Egress lists the connections the call's program made through the
	// egress proxy (Sandbox.EgressRules says where its rules come from):
	// host, port, method where the proxy saw it, bytes each way, allowed
	// or refused and the rule or reason that decided. Records written
	// before the proxy was named also have a warning per refused host.
	Egress []sandboxinfo.Connection `json:"egress,omitempty"`
	// Plugin is the plugin tool that ran: its version, source, what the
	// lock pinned and its tree's checksum.
	Plugin *sandboxinfo.Plugin `json:"plugin,omitempty"`

	Reason string `json:"reason,omitempty"` // why a chain-reset or retention record was written

	// CallID and Via name a call that came through the HTTP API: the id
	// GET /v1/calls/{id} knows it by, and "http" or "hook:NAME". Both are
	// left out otherwise, so records of other calls read as they always did.
	CallID string `json:"call_id,omitempty"`
	Via    string `json:"via,omitempty"`

	Prev string `json:"prev"`           // Hash of the record with seq Seq-1, "" for seq 1
	Hash string `json:"hash,omitempty"` // sha256 of this record's line without the hash member, hex
}

// Sandbox says which protection layers a call ran under: the layers every
// side shares (sandboxinfo), and where the rules of the egress proxy its
// network went through come from, in the form the log's files have always
// had (SandboxJSON). Records already written are hashed as they are, and
// new ones without the proxy must read the same.
type Sandbox struct {
	sandboxinfo.Layers
	// EgressRules says where the rules of the call's egress proxy come
	// from (netview.Summary.RulesFrom: the configuration file, or the
	// defaults); "" when the call had no proxy.
	EgressRules string
}

// The network of a call (NetworkMode).
const (
	NetworkNone   = "none"         // a network namespace of its own, lo only
	NetworkHost   = "host"         // the host's network, shared (opt-in)
	NetworkEgress = "egress proxy" // lo only, and the egress proxy listening there
)

// rulesNotRecorded is EgressRules for a record that names the proxy
// without saying where its rules come from (no contextd writes one).
const rulesNotRecorded = "not recorded"

// SandboxJSON is a record's "sandbox" member, as written (the HTTP API
// describes records with it).
type SandboxJSON struct {
	Namespaces  bool   `json:"namespaces,omitempty"`
	Seccomp     string `json:"seccomp,omitempty"`      // profile name; "" when none was loaded
	Scope       string `json:"scope,omitempty"`        // transient systemd unit; "" when there was none
	ScopeNote   string `json:"scope_note,omitempty"`   // why there was no scope
	Network     string `json:"network,omitempty"`      // NetworkMode
	EgressRules string `json:"egress_rules,omitempty"` // Sandbox.EgressRules
}

// NetworkMode names the network the call had: NetworkNone, NetworkHost or
// NetworkEgress; "" when it had no namespaces and no proxy (no process ran,
// or one ran without a sandbox). A wrapped server's egress record has the
// proxy and not the layers.
func (s Sandbox) NetworkMode() string {
	switch {
	case s.Namespaces && s.Network:
		return NetworkHost
	case s.EgressRules != "":
		return NetworkEgress
	case s.Namespaces:
		return NetworkNone
	}
	return ""
}

func (s Sandbox) form() SandboxJSON {
	return SandboxJSON{Namespaces: s.Namespaces, Seccomp: s.Seccomp, Scope: s.Scope, ScopeNote: s.ScopeNote,
		Network: s.NetworkMode(), EgressRules: s.EgressRules}
}

// IsZero makes a record leave out the member exactly when it would be {}.
func (s Sandbox) IsZero() bool { return s.form() == SandboxJSON{} }

// MarshalJSON writes the member's form. HTML characters stay as they are,
// as in the rest of the line (encodeLine): the record's encoder escapes them
// itself when it is asked to.
func (s Sandbox) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.form()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// UnmarshalJSON reads the member's form, any version's: before the proxy
// was named, a call through it was written with the network "none" (its
// connections are in the record's egress list all the same).
func (s *Sandbox) UnmarshalJSON(b []byte) error {
	var f SandboxJSON
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*s = Sandbox{Layers: sandboxinfo.Layers{Namespaces: f.Namespaces, Seccomp: f.Seccomp, Scope: f.Scope, ScopeNote: f.ScopeNote,
		Network: f.Network == NetworkHost}, EgressRules: f.EgressRules}
	if f.Network == NetworkEgress && s.EgressRules == "" {
		s.EgressRules = rulesNotRecorded
	}
	return nil
}

// maxLine bounds a record line, so that a reader of an untrusted file never
// buffers more than this. Append drops the arguments of a record that would be
// larger, and says so in its warnings.
const maxLine = 1 << 20

const hashMember = `,"hash":"`

// suffixLen is the length of the line's final `,"hash":"<hex>"}`.
const suffixLen = len(hashMember) + 2*sha256.Size + len(`"}`)

// encodeLine sets r.Hash and returns the line for r, '\n' included.
func encodeLine(r *Record) ([]byte, error) {
	r.Hash = ""
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // commands are full of && and <; keep them readable
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("audit: encode record %d: %w", r.Seq, err)
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	sum := sha256.Sum256(body)
	r.Hash = hex.EncodeToString(sum[:])
	line := make([]byte, 0, len(body)+suffixLen)
	line = append(line, body[:len(body)-1]...)
	line = append(line, hashMember...)
	line = append(line, r.Hash...)
	line = append(line, '"', '}', '\n')
	return line, nil
}

// Why a line is not a good record. errEdited comes with the parsed record,
// errMalformed without.
var (
	errMalformed = errors.New("not a record")
	errEdited    = errors.New("hash does not match the record's content")
)

// parseLine reads one line (without its '\n'). A line whose JSON is fine but
// whose hash is not is returned with errEdited, so a verifier can still follow
// its seq and hash.
func parseLine(line []byte) (Record, error) {
	var r Record
	n := len(line)
	if n < suffixLen+2 || line[0] != '{' {
		return r, fmt.Errorf("%w: too short or not a JSON object", errMalformed)
	}
	suffix := line[n-suffixLen:]
	if !bytes.HasPrefix(suffix, []byte(hashMember)) || !bytes.HasSuffix(suffix, []byte(`"}`)) {
		return r, fmt.Errorf("%w: does not end with the hash member", errMalformed)
	}
	want := suffix[len(hashMember) : len(hashMember)+2*sha256.Size]
	if err := json.Unmarshal(line, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if r.V != FormatVersion {
		return Record{}, fmt.Errorf("%w: format version %d, this contextd reads %d", errMalformed, r.V, FormatVersion)
	}
	// The hash member is the line's last, and encoding/json keeps the last of
	// duplicate members, so r.Hash is want: the hash that was checked.
	r.Hash = string(want)
	h := sha256.New()
	h.Write(line[:n-suffixLen])
	h.Write([]byte{'}'})
	if got := hex.EncodeToString(h.Sum(nil)); got != r.Hash {
		return r, fmt.Errorf("%w (computed %.12s…, stored %.12s…)", errEdited, got, r.Hash)
	}
	return r, nil
}
