// Package httpapi is contextd's HTTP edge: one route table that both serves
// the API (Echo) and describes it (OpenAPI 3.1), over a Core the daemon
// implements. It converts requests for the core and answers; it runs
// nothing itself.
package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/swaggest/jsonschema-go"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/sandboxinfo"
)

// Core is what the edge needs of the daemon. The context of each method
// carries the connection's peer (the daemon's own ConnContext puts it
// there). A refusal is an error the catalog classifies; it becomes the
// answer's problem.
type Core interface {
	// Call runs one tool call. out, when not nil, receives the output in
	// order as it is produced, before Call returns; the response holds the
	// whole output either way.
	Call(ctx context.Context, req CallRequest, out func([]byte) error) (CallResponse, error)
	// Page answers page req.N of an earlier call, as Call does.
	Page(ctx context.Context, req PageRequest, out func([]byte) error) (CallResponse, error)
	// Record is a call as it is kept: running, done or refused.
	Record(ctx context.Context, id string) (CallRecord, error)
	Tools(ctx context.Context) (ToolList, error)
	Status(ctx context.Context) (StatusReply, error)
	// Audit is the records q selects, newest last, at most q.Limit.
	Audit(ctx context.Context, q AuditQuery) (AuditEntries, error)
	AuditVerify(ctx context.Context) (AuditVerifyReply, error)
	// Hook receives a webhook's delivery for automation name: it reads
	// the body itself (the bound is the automation's), verifies it and
	// starts the call, answering before the call ends. An error that
	// also has a method RetryAfter() time.Duration sets Retry-After.
	Hook(ctx context.Context, name string, h http.Header, body HookBody) (HookAccepted, error)
}

// CallRequest is one tool call.
type CallRequest struct {
	Tool string `json:"tool" required:"true" minLength:"1" description:"the tool's name, as GET /v1/tools lists it" example:"safe_bash"`
	// Input is the tool's input; its schema is the tool's own schema.json.
	Input     json.RawMessage `json:"input" required:"true" description:"the tool's input, as the tool's schema in GET /v1/tools"`
	Workspace string          `json:"workspace" required:"true" minLength:"1" pattern:"^/" description:"absolute path of the directory the call runs in; its project is the workspace"`
	Session   string          `json:"session,omitempty" description:"the session the call belongs to (branches, pages); default: derived from the calling process"`
	MaxTokens int             `json:"max_tokens,omitempty" minimum:"0" description:"ask for less than the tool's configured token budget"`
}

// StateCallRequest is a call of a state tool (memories, checkpoints) whose
// name the path gives.
type StateCallRequest struct {
	Input     json.RawMessage `json:"input" required:"true" description:"the tool's input, as the tool's schema"`
	Workspace string          `json:"workspace" required:"true" minLength:"1" pattern:"^/" description:"absolute path of a directory of the project whose memories or checkpoints are meant"`
	Session   string          `json:"session,omitempty" description:"the session the call belongs to; default: derived from the calling process"`
	MaxTokens int             `json:"max_tokens,omitempty" minimum:"0" description:"ask for less than the tool's configured token budget"`
}

// CallResponse is a call's answer: its output and how it ended. It is
// what the proxy gets for the same call.
type CallResponse struct {
	ID       string `json:"id" required:"true" description:"the call's id, for GET /v1/calls/{id}"`
	Output   string `json:"output,omitempty" description:"the output, scrubbed and within the token budget; left out of a stream's result event"`
	Result   Result `json:"result" required:"true"`
	NextPage string `json:"next_page,omitempty" description:"path of the next page when output was left out"`
}

// Result is how a call ended.
type Result struct {
	ExitCode   int                 `json:"exit_code" required:"true" description:"the tool's exit status"`
	Truncated  bool                `json:"truncated" required:"true" description:"output was left out: fetch the next page"`
	HasMore    bool                `json:"has_more" required:"true" description:"the same as truncated"`
	TokensUsed int                 `json:"tokens_used" required:"true" description:"tokens of the output the caller received"`
	Continue   string              `json:"continue,omitempty" description:"the next page's reference"`
	Error      *catalog.Detail     `json:"error,omitempty" description:"the tool's own failure; the output is delivered still"`
	Session    string              `json:"session" required:"true"`
	Workspace  string              `json:"workspace,omitempty"`
	Sandbox    *sandboxinfo.Layers `json:"sandbox,omitempty" description:"the layers the tool's process ran under; absent when no process ran"`
	Warnings   []string            `json:"warnings,omitempty"`
}

// PageRequest asks for page N of a call's output.
type PageRequest struct {
	ID        string `path:"id" description:"the call's id"`
	N         int    `path:"n" minimum:"1" description:"the page, from 1; page n needs page n-1 fetched first"`
	MaxTokens int    `query:"max_tokens" minimum:"0" description:"ask for less than the tool's configured token budget"`
}

// CallID names a call in the path.
type CallID struct {
	ID string `path:"id" description:"the call's id"`
}

// CallRecord is a call as it is kept for GET /v1/calls/{id}.
type CallRecord struct {
	ID        string    `json:"id" required:"true"`
	State     string    `json:"state" required:"true" enum:"running,done,refused"`
	Tool      string    `json:"tool" required:"true"`
	Via       string    `json:"via,omitempty" description:"how the call came: http, or hook:NAME"`
	Session   string    `json:"session,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	Started   time.Time `json:"started" required:"true"`
	Ended     time.Time `json:"ended,omitzero"`
	// Response is the answer of a done call, as its caller got it.
	Response *CallResponse `json:"response,omitempty"`
	// Problem is why a refused call did not run.
	Problem *catalog.Problem `json:"problem,omitempty"`
}

// ToolInfo describes a tool a call can name.
type ToolInfo struct {
	Name        string          `json:"name" required:"true"`
	Kind        string          `json:"kind" required:"true" enum:"sandboxed,state,plugin"`
	Version     string          `json:"version,omitempty" description:"a plugin tool's version"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema" required:"true" description:"the tool's input schema (JSON Schema 2020-12)"`
	Doc         string          `json:"doc,omitempty" description:"the tool's TOOL.md"`
}

// StatusReply is what the daemon says of itself.
type StatusReply struct {
	Version         string   `json:"version" required:"true"`
	PID             int      `json:"pid" required:"true"`
	UptimeMS        int64    `json:"uptime_ms" required:"true"`
	CallsInFlight   int      `json:"calls_in_flight" required:"true"`
	SocketActivated bool     `json:"socket_activated" required:"true"`
	Tools           []string `json:"tools" required:"true" nullable:"false"`
	HTTP            []string `json:"http,omitempty" description:"the HTTP API's listeners"`
}

// AuditQuery selects audit records.
type AuditQuery struct {
	Since   time.Time `query:"since" description:"records that started at or after this time (RFC 3339)"`
	Until   time.Time `query:"until" description:"records that started before this time (RFC 3339)"`
	Tool    string    `query:"tool"`
	Session string    `query:"session"`
	Limit   int       `query:"limit" minimum:"1" maximum:"1000" default:"100" description:"the newest this many"`
}

// ToolList is GET /v1/tools's answer.
type ToolList []ToolInfo

// PrepareJSONSchema says the list is never null: an empty one is [].
func (ToolList) PrepareJSONSchema(s *jsonschema.Schema) error { return notNull(s) }

// AuditEntries is GET /v1/audit's answer.
type AuditEntries []AuditEntry

// PrepareJSONSchema says the list is never null: an empty one is [].
func (AuditEntries) PrepareJSONSchema(s *jsonschema.Schema) error { return notNull(s) }

func notNull(s *jsonschema.Schema) error {
	s.Type = nil
	s.WithType(jsonschema.Array.Type())
	return nil
}

// AuditEntry is one audit record and where it is stored.
type AuditEntry struct {
	File string `json:"file" required:"true" description:"the log file's base name"`
	Line int    `json:"line" required:"true" description:"1-based"`
	// Record is the stored line as it was hashed, so a client can check
	// the hash itself.
	Record AuditLine `json:"record" required:"true"`
}

// AuditLine is an audit record's stored line. It is sent as it was
// written; its schema is the record's (audit.Record).
type AuditLine json.RawMessage

// MarshalJSON sends the line as stored.
func (l AuditLine) MarshalJSON() ([]byte, error) {
	if len(l) == 0 {
		return []byte("null"), nil
	}
	return l, nil
}

// UnmarshalJSON keeps the line as received (a client's side).
func (l *AuditLine) UnmarshalJSON(b []byte) error {
	*l = append((*l)[:0], b...)
	return nil
}

// AuditVerifyReply is the audit log's verification.
type AuditVerifyReply struct {
	OK       bool           `json:"ok" required:"true" description:"no problem found"`
	Dir      string         `json:"dir" required:"true"`
	Files    int            `json:"files" required:"true"`
	Records  int            `json:"records" required:"true"`
	FirstSeq uint64         `json:"first_seq"`
	LastSeq  uint64         `json:"last_seq"`
	HeadSeq  uint64         `json:"head_seq"`
	BaseSeq  uint64         `json:"base_seq"`
	Resets   int            `json:"resets"`
	Problems []AuditProblem `json:"problems" required:"true" nullable:"false"`
	Warnings []AuditProblem `json:"warnings" required:"true" nullable:"false"`
}

// AuditProblem is one finding of the verification.
type AuditProblem struct {
	Kind   string `json:"kind" required:"true"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	Detail string `json:"detail" required:"true"`
}

// HookName names an automation in the path; the body is the sender's
// payload as it was signed.
type HookName struct {
	Name string `path:"name" description:"the automation's name, as [[automations]] names it"`
}

// HookAccepted is a delivery that started its automation's call.
type HookAccepted struct {
	CallID    string `json:"call_id" required:"true" description:"the call the delivery started"`
	StatusURL string `json:"status_url" required:"true" description:"where the call's record is: GET it until its state is done"`
}

// HookBody reads a delivery's body, at most max bytes: an error wrapping
// *http.MaxBytesError when it is longer.
type HookBody func(max int64) ([]byte, error)
