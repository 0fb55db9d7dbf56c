package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/contextd/contextd/catalog"
)

// route is one endpoint: what registers it with Echo and what describes it
// in the document, in one place so that they cannot drift.
type route struct {
	method, path string // path in OpenAPI's form: /v1/calls/{id}
	id, summary  string
	description  string
	tag          string
	req          any // the request's type (nil: none); a body for POST, path and query parameters otherwise
	resp         any // the answer's type
	errs         []*catalog.Class
	status       int    // the answer's status; 0 is 200
	rawBody      string // the body is a payload taken as it is (no schema): its description
	stream       bool   // also answers text/event-stream
	input        string // the state tool whose schema types the body's input
	handle       echo.HandlerFunc
}

// noRequest is the request of an endpoint that takes nothing.
type noRequest struct{}

// endpoint builds a route whose handler decodes a Req, hands it to fn and
// answers fn's Resp as JSON. fn answering (nil, nil) has written the answer
// itself (a stream).
func endpoint[Req, Resp any](s *Server, r route, fn func(echo.Context, *Req) (*Resp, error)) route {
	r.req, r.resp = new(Req), new(Resp)
	if _, none := r.req.(*noRequest); none {
		r.req = nil
	}
	r.handle = func(c echo.Context) error {
		req := new(Req)
		var err error
		if r.method == http.MethodPost {
			err = decodeBody(c, req, s.opts.MaxBodyBytes)
		} else {
			err = bindParams(c, req)
		}
		if err != nil {
			return err
		}
		resp, err := fn(c, req)
		if err != nil || resp == nil {
			return err
		}
		return c.JSON(http.StatusOK, resp)
	}
	return r
}

// Errors every route may answer: a request it cannot decode, and the
// daemon's own failure.
var commonErrs = []*catalog.Class{catalog.ErrBadInput, catalog.ErrInternal}

// callErrs are the refusals of a call before its tool runs.
var callErrs = []*catalog.Class{catalog.ErrBodyTooLarge, catalog.ErrUnknownTool, catalog.ErrOutsideWorkspace,
	catalog.ErrPolicy, catalog.ErrBranchBudget, catalog.ErrShuttingDown, catalog.ErrStoreUnavailable}

// stateTools are the state tools the API gives endpoints of their own:
// path under /v1, operation id, tag.
var stateTools = []struct{ path, tool, id, summary, tag string }{
	{"/v1/memory/search", "memory_search", "memorySearch", "Search the project's memories", "memory"},
	{"/v1/memory/get", "memory_get", "memoryGet", "Get memories by id", "memory"},
	{"/v1/memory/store", "memory_store", "memoryStore", "Store a memory", "memory"},
	{"/v1/checkpoints/save", "checkpoint_save", "checkpointSave", "Save a checkpoint", "checkpoints"},
	{"/v1/checkpoints/list", "checkpoint_list", "checkpointList", "List checkpoints", "checkpoints"},
	{"/v1/checkpoints/restore", "checkpoint_restore", "checkpointRestore", "Restore a checkpoint at a level", "checkpoints"},
}

// table is the API, each route with its handler.
func (s *Server) table() []route {
	rs := []route{
		endpoint(s, route{method: http.MethodPost, path: "/v1/calls", id: "createCall", tag: "calls",
			summary:     "Run a tool call",
			description: "Runs any tool, built-in or plugin, in its sandbox and answers what the proxy gets for the same call. With `Accept: text/event-stream` the output streams as `output` events (`{\"text\": …}`) as it is produced, then one `result` event (the answer without its output); a failure after output started is a `problem` event. A refusal before the tool runs is a problem with its HTTP status either way.",
			errs:        callErrs, stream: true}, s.createCall),
		endpoint(s, route{method: http.MethodGet, path: "/v1/calls/{id}", id: "getCall", tag: "calls",
			summary:     "Get a call's record",
			description: "A call as it is kept: running, done (with the answer its caller got) or refused (with its problem), for as long as `[pages] ttl` keeps it.",
			errs:        []*catalog.Class{catalog.ErrNoCall}}, s.getCall),
		endpoint(s, route{method: http.MethodGet, path: "/v1/calls/{id}/pages/{n}", id: "getCallPage", tag: "calls",
			summary:     "Get a page of a call's output",
			description: "Page 1 is the first part of the output the call's answer left out; page n follows page n-1, which must have been fetched. The answer is a call's, its output the page.",
			errs:        []*catalog.Class{catalog.ErrNoCall, catalog.ErrUnknownContinuation}}, s.getPage),
		endpoint(s, route{method: http.MethodGet, path: "/v1/tools", id: "listTools", tag: "tools",
			summary:     "List the tools",
			description: "Every tool a call can name, built-in and plugin, with its input schema and its documentation."}, s.listTools),
	}
	for _, st := range stateTools {
		rs = append(rs, endpoint(s, route{method: http.MethodPost, path: st.path, id: st.id, tag: st.tag, input: st.tool,
			summary:     st.summary,
			description: fmt.Sprintf("A call of the `%s` tool: `input` is its input (schema `%s`), the answer its text, budgeted and audited as any call's.", st.tool, schemaName(st.tool)),
			errs:        append([]*catalog.Class{catalog.ErrNoRecord}, callErrs...)}, s.stateCall(st.tool)))
	}
	rs = append(rs,
		s.hookRoute(),
		endpoint(s, route{method: http.MethodGet, path: "/v1/audit", id: "listAudit", tag: "audit",
			summary:     "Read the audit log",
			description: "The audit records the filters select, newest last, each as its stored line (hash included) with the file and line it is on.",
			errs:        []*catalog.Class{catalog.ErrAuditDamaged}}, s.audit),
		endpoint(s, route{method: http.MethodGet, path: "/v1/audit/verify", id: "verifyAudit", tag: "audit",
			summary:     "Verify the audit log's hash chain",
			description: "Checks every record's hash and the chain between them; the report lists what was found (ok is false then). It answers 200 either way."}, s.auditVerify),
		endpoint(s, route{method: http.MethodGet, path: "/v1/status", id: "getStatus", tag: "status",
			summary:     "Get the daemon's status",
			description: "The daemon's version, process, uptime, calls in flight, tools and HTTP listeners."}, s.status),
		endpoint(s, route{method: http.MethodGet, path: "/v1/openapi.json", id: "getOpenAPI", tag: "meta",
			summary:     "Get this API's OpenAPI document",
			description: "The OpenAPI 3.1 document of this API, generated from the types its handlers use."}, s.openapi),
	)
	for i := range rs {
		rs[i].errs = append(rs[i].errs, commonErrs...)
	}
	return rs
}

// hookErrs are a delivery's refusals, in the order they are checked.
var hookErrs = []*catalog.Class{catalog.ErrUnknownAutomation, catalog.ErrBodyTooLarge, catalog.ErrHookSignature,
	catalog.ErrHookTimestamp, catalog.ErrHookReplay, catalog.ErrRateLimited}

// hookRoute is POST /v1/hooks/{name}: its body is not decoded here but
// handed to the core as raw bytes, which is what the signature covers.
func (s *Server) hookRoute() route {
	return route{method: http.MethodPost, path: "/v1/hooks/{name}", id: "receiveHook", tag: "hooks",
		summary: "Receive a webhook delivery",
		description: "Runs the automation `name` configures ([[automations]]) for a signed delivery: GitHub's `X-Hub-Signature-256` " +
			"or Standard Webhooks' `webhook-id`, `webhook-timestamp` and `webhook-signature`. Checked in this order: the automation, " +
			"the body's size, the signature over the raw body, the timestamp, the delivery id not seen before, the rate. " +
			"The call runs after the answer: follow `status_url`. A 429 carries `Retry-After`.",
		req: new(HookName), resp: new(HookAccepted), status: http.StatusAccepted,
		rawBody: "the sender's payload, exactly as it signed it",
		errs:    hookErrs, handle: s.hook}
}

// echoPath is an OpenAPI path in Echo's form: /v1/calls/:id.
func echoPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			parts[i] = ":" + s[1:len(s)-1]
		}
	}
	return strings.Join(parts, "/")
}

// schemaName is the component name of a tool's input schema:
// memory_search → MemorySearchInput.
func schemaName(tool string) string {
	var b strings.Builder
	for _, w := range strings.Split(tool, "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String() + "Input"
}
