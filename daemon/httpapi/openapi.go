package httpapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/swaggest/jsonschema-go"
	"github.com/swaggest/openapi-go"
	"github.com/swaggest/openapi-go/openapi31"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/toolspec"
)

// tags are the document's tags, in its order.
var tags = []struct{ name, description string }{
	{"calls", "Tool calls, their records and their pages"},
	{"tools", "The tools a call can name"},
	{"memory", "The project's memories (calls of the memory tools)"},
	{"checkpoints", "The workspace's checkpoints (calls of the checkpoint tools)"},
	{"hooks", "Webhook deliveries that start the configured automations"},
	{"audit", "The hash-chained audit log"},
	{"status", "The daemon itself"},
	{"meta", "This API's description"},
}

const apiDescription = "contextd's HTTP API: every tool call, memory, checkpoint and audit query of the per-user daemon, " +
	"on the user's Unix socket (`$XDG_RUNTIME_DIR/contextd/http.sock`, the user's own processes only) or, when configured, " +
	"a loopback TCP listener that needs the bearer token. Errors are `application/problem+json` carrying contextd's error code (`CTXD-E…`)."

// OpenAPIDocument is the OpenAPI document's type, for its own endpoint.
type OpenAPIDocument map[string]any

// componentNames renames the reflected types of other packages, and drops
// this package's prefix from its own.
var componentNames = map[reflect.Type]string{
	reflect.TypeFor[catalog.Problem]():        "Problem",
	reflect.TypeFor[catalog.Detail]():         "ToolError",
	reflect.TypeFor[sandboxinfo.Layers]():     "Sandbox",
	reflect.TypeFor[audit.Record]():           "AuditRecord",
	reflect.TypeFor[audit.SandboxJSON]():      "AuditRecordSandbox",
	reflect.TypeFor[sandboxinfo.Plugin]():     "AuditRecordPlugin",
	reflect.TypeFor[sandboxinfo.Connection](): "AuditRecordConnection",
}

func componentName(t reflect.Type, def string) string {
	if n, ok := componentNames[t]; ok {
		return n
	}
	if t.PkgPath() == reflect.TypeFor[route]().PkgPath() {
		return t.Name()
	}
	return def
}

// document is the OpenAPI 3.1 document of rs.
func document(rs []route, version string) ([]byte, error) {
	r := openapi31.NewReflector()
	js := r.JSONSchemaReflector()
	js.DefaultOptions = append(js.DefaultOptions, jsonschema.InterceptDefName(componentName))
	// An audit entry's record is sent as stored; it is described as the
	// record it is, its sandbox member in its written form.
	js.AddTypeMapping(AuditLine{}, audit.Record{})
	js.AddTypeMapping(audit.Sandbox{}, audit.SandboxJSON{})

	spec := r.SpecEns()
	spec.Info.WithTitle("contextd HTTP API").WithVersion(version).WithDescription(apiDescription).
		WithContact(openapi31.Contact{Name: ptr("contextd"), URL: ptr("https://github.com/contextd/contextd")}).
		WithLicense(openapi31.License{Name: "Apache-2.0", Identifier: ptr("Apache-2.0")})
	spec.WithServers(openapi31.Server{URL: "/", Description: ptr("the daemon the request reaches: its Unix socket, or its loopback TCP listener")})
	spec.SetHTTPBearerTokenSecurity("bearer", "", "the per-install token ($XDG_STATE_HOME/contextd/http-token); needed on the TCP listener only")
	// {} after the bearer scheme: the Unix socket needs no token, its
	// peer is checked instead.
	spec.WithSecurity(map[string][]string{"bearer": {}}, map[string][]string{})
	for _, t := range tags {
		spec.WithTags(append(spec.Tags, openapi31.Tag{Name: t.name, Description: ptr(t.description)})...)
	}
	for _, st := range stateTools {
		schema, err := toolSchema(st.tool)
		if err != nil {
			return nil, err
		}
		spec.ComponentsEns().WithSchemasItem(schemaName(st.tool), schema)
	}
	for _, rt := range rs {
		if err := addOperation(r, rt); err != nil {
			return nil, fmt.Errorf("httpapi: %s %s: %w", rt.method, rt.path, err)
		}
	}
	return json.MarshalIndent(spec, "", "  ")
}

func ptr[T any](v T) *T { return &v }

// toolSchema is a tool's schema.json as a component: a JSON Schema 2020-12
// document, which is what OpenAPI 3.1's schemas are.
func toolSchema(tool string) (map[string]any, error) {
	spec, ok := toolspec.Get(tool)
	if !ok {
		return nil, fmt.Errorf("httpapi: no schema for %s", tool)
	}
	var m map[string]any
	if err := json.Unmarshal(spec.Schema, &m); err != nil {
		return nil, fmt.Errorf("httpapi: %s's schema: %w", tool, err)
	}
	// The document names its dialect once (jsonSchemaDialect's default
	// is the same 2020-12).
	delete(m, "$schema")
	return m, nil
}

func addOperation(r *openapi31.Reflector, rt route) error {
	oc, err := r.NewOperationContext(rt.method, rt.path)
	if err != nil {
		return err
	}
	oc.SetID(rt.id)
	oc.SetSummary(rt.summary)
	oc.SetDescription(rt.description)
	oc.SetTags(rt.tag)
	if rt.req != nil {
		oc.AddReqStructure(rt.req)
	}
	if rt.id == "getOpenAPI" {
		oc.AddRespStructure(OpenAPIDocument{}, openapi.WithHTTPStatus(http.StatusOK))
	} else {
		oc.AddRespStructure(rt.resp, openapi.WithHTTPStatus(cmp.Or(rt.status, http.StatusOK)))
	}
	if rt.stream {
		oc.AddRespStructure(nil, openapi.WithContentType("text/event-stream"), openapi.WithHTTPStatus(http.StatusOK))
	}
	for _, st := range errorStatuses(rt.errs) {
		oc.AddRespStructure(catalog.Problem{}, openapi.WithContentType(catalog.ProblemType),
			openapi.WithHTTPStatus(st.status), func(cu *openapi.ContentUnit) { cu.Description = st.description })
	}
	if err := r.AddOperation(oc); err != nil {
		return err
	}
	op := operation(r.Spec, rt)
	if op == nil {
		return fmt.Errorf("operation not in the document")
	}
	if rt.stream {
		ok := op.Responses.MapOfResponseOrReferenceValues["200"].Response
		mt := ok.Content["text/event-stream"]
		mt.Schema = map[string]any{"type": "string",
			"description": "events `output` (data `{\"text\": …}`), then `result` (the answer without its output) or `problem` (a Problem)"}
		ok.Content["text/event-stream"] = mt
	}
	if rt.rawBody != "" {
		op.RequestBody = &openapi31.RequestBodyOrReference{RequestBody: &openapi31.RequestBody{
			Description: ptr(rt.rawBody), Required: ptr(true),
			Content: map[string]openapi31.MediaType{"application/json": {Schema: map[string]any{}}},
		}}
	}
	if rt.input != "" {
		body := op.RequestBody.RequestBody.Content["application/json"]
		body.Schema = map[string]any{"allOf": []any{body.Schema, map[string]any{
			"type": "object",
			"properties": map[string]any{
				"input": map[string]any{"$ref": "#/components/schemas/" + schemaName(rt.input)},
			},
		}}}
		op.RequestBody.RequestBody.Content["application/json"] = body
	}
	return nil
}

// operation finds rt's operation in the document.
func operation(spec *openapi31.Spec, rt route) *openapi31.Operation {
	item := spec.Paths.MapOfPathItemValues[rt.path]
	switch rt.method {
	case http.MethodGet:
		return item.Get
	case http.MethodPost:
		return item.Post
	}
	return nil
}

type errorStatus struct {
	status      int
	description string
}

// errorStatuses are the HTTP statuses of classes, each described by the
// classes that answer it.
func errorStatuses(cs []*catalog.Class) []errorStatus {
	by := map[int][]string{}
	for _, c := range cs {
		s := catalog.HTTPStatus(c)
		by[s] = append(by[s], c.Code+" "+c.Name)
	}
	var out []errorStatus
	for s, names := range by {
		out = append(out, errorStatus{s, strings.Join(names, "; ")})
	}
	slices.SortFunc(out, func(a, b errorStatus) int { return a.status - b.status })
	return out
}
