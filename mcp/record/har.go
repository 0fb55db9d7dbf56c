package record

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/relay"
)

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) describes HTTP
// exchanges; an MCP session is mapped onto it so that HAR viewers (browser
// developer tools, HTTP analysis tools) can open it:
//
//   - every request, notification and batch is one HAR entry, in record
//     order: request.method "POST", request.postData.text the JSON-RPC
//     message as it was passed on (mimeType application/json);
//   - request.url is the server's URL for a remote server, and
//     http://stdio.mcp.invalid/<method> for a stdio one (.invalid is the
//     top-level domain reserved for names that must never resolve);
//   - the response is the JSON-RPC response the record pairs with the
//     request, in response.content.text: status 200 "OK" for a result, 200
//     "JSON-RPC error" for an error; a request the engine refused is
//     answered by the engine's reply with status 403 "Refused by contextd";
//     a notification gets a synthetic empty response, 204 "No Content"; a
//     request with no recorded answer 0 "No response";
//   - a response the record cannot pair becomes an entry of its own, with an
//     empty GET request to the same URL;
//   - startedDateTime is when the relay read the request; time and
//     timings.wait are the milliseconds until the answer was read (0
//     without one); send and receive are 0: a message is read whole;
//   - the MCP details (sequence numbers, direction, method, tool, action,
//     rule, the original of a modified message) are in the custom field
//     "_mcp" of each entry, as HAR allows for fields starting with '_'.

// HAROptions configure WriteHAR. A nil *HAROptions means the defaults.
type HAROptions struct {
	// Creator names the program in log.creator; default "contextd".
	Creator string
	// CreatorVersion is log.creator.version; default "dev".
	CreatorVersion string
}

type harLog struct {
	Log harBody `json:"log"`
}

type harBody struct {
	Version string     `json:"version"`
	Creator harCreator `json:"creator"`
	Pages   []any      `json:"pages"`
	Entries []harEntry `json:"entries"`
	Comment string     `json:"comment,omitempty"`
}

type harCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type harEntry struct {
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         harRequest  `json:"request"`
	Response        harResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         harTimings  `json:"timings"`
	MCP             harMCP      `json:"_mcp"`
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harRequest struct {
	Method      string       `json:"method"`
	URL         string       `json:"url"`
	HTTPVersion string       `json:"httpVersion"`
	Cookies     []harNV      `json:"cookies"`
	Headers     []harNV      `json:"headers"`
	QueryString []harNV      `json:"queryString"`
	PostData    *harPostData `json:"postData,omitempty"`
	HeadersSize int          `json:"headersSize"`
	BodySize    int          `json:"bodySize"`
}

type harPostData struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

type harResponse struct {
	Status      int        `json:"status"`
	StatusText  string     `json:"statusText"`
	HTTPVersion string     `json:"httpVersion"`
	Cookies     []harNV    `json:"cookies"`
	Headers     []harNV    `json:"headers"`
	Content     harContent `json:"content"`
	RedirectURL string     `json:"redirectURL"`
	HeadersSize int        `json:"headersSize"`
	BodySize    int        `json:"bodySize"`
}

type harContent struct {
	Size     int    `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
	Encoding string `json:"encoding,omitempty"`
}

type harTimings struct {
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

type harMCP struct {
	Seq       uint64 `json:"seq,omitempty"`
	Direction string `json:"direction,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Method    string `json:"method,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Action    string `json:"action,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Error     string `json:"error,omitempty"`
	Original  string `json:"original,omitempty"`

	ResponseSeq      uint64 `json:"responseSeq,omitempty"`
	ResponseAction   string `json:"responseAction,omitempty"`
	ResponseRule     string `json:"responseRule,omitempty"`
	ResponseOriginal string `json:"responseOriginal,omitempty"`
}

const jsonMime = "application/json"

// harTime formats a time as HAR wants it: ISO 8601 with milliseconds and a
// zone.
func harTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// WriteHAR writes the record as a HAR 1.2 log; see the mapping above.
func WriteHAR(w io.Writer, r *Record, o *HAROptions) error {
	var opt HAROptions
	if o != nil {
		opt = *o
	}
	if opt.Creator == "" {
		opt.Creator = "contextd"
	}
	if opt.CreatorVersion == "" {
		opt.CreatorVersion = "dev"
	}
	h := harLog{Log: harBody{
		Version: "1.2",
		Creator: harCreator{Name: opt.Creator, Version: opt.CreatorVersion},
		Pages:   []any{},
		Entries: []harEntry{},
		Comment: fmt.Sprintf("MCP session %s with %s", r.Session.ID, ServerLabel(r.Session.Server)),
	}}
	if r.Session.Failure != "" {
		h.Log.Comment += "; it ended early: " + r.Session.Failure
	}
	base := harBase(r.Session.Server)
	for _, x := range exchanges(r) {
		h.Log.Entries = append(h.Log.Entries, harExchange(base, x))
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("record: write HAR: %w: %w", err, catalog.ErrIO)
	}
	return nil
}

// ServerLabel is a session's server as records show it: a URL loses its
// user and password (a URL is how some remote servers take their key).
func ServerLabel(server string) string {
	if u, err := url.Parse(server); err == nil && u.Scheme != "" && u.Host != "" && u.User != nil {
		u.User = nil
		return u.String()
	}
	return server
}

// harBase is the URL requests are given: the server's own for a remote
// server, a never-resolving one for a stdio server.
func harBase(server string) string {
	if u, err := url.Parse(server); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		u.Fragment, u.User = "", nil
		return u.String()
	}
	return ""
}

func harURL(base, method string) string {
	if base != "" {
		return base
	}
	return "http://stdio.mcp.invalid/" + url.PathEscape(strings.TrimPrefix(method, "/"))
}

func jsonHeaders() []harNV { return []harNV{{Name: "Content-Type", Value: jsonMime}} }

func harExchange(base string, x exchange) harEntry {
	if x.orphan != nil {
		e := x.orphan
		he := harEntry{
			StartedDateTime: harTime(e.Time),
			Request: harRequest{Method: "GET", URL: harURL(base, e.Method), HTTPVersion: "HTTP/1.1",
				Cookies: []harNV{}, Headers: []harNV{}, QueryString: []harNV{}, HeadersSize: -1, BodySize: 0},
			Response: harResp(e.Raw, 200, answerStatus(e)),
			MCP: harMCP{ResponseSeq: e.Seq, Direction: dirName(e.Dir), Kind: e.Kind.String(), Method: e.Method,
				Tool: e.Tool, ResponseAction: e.Action.String(), ResponseRule: e.Rule, Error: e.Error,
				ResponseOriginal: string(e.Original)},
		}
		return he
	}
	q := x.req
	he := harEntry{
		StartedDateTime: harTime(q.Time),
		Request: harRequest{Method: "POST", URL: harURL(base, q.Method), HTTPVersion: "HTTP/1.1",
			Cookies: []harNV{}, Headers: jsonHeaders(), QueryString: []harNV{},
			PostData: &harPostData{MimeType: jsonMime, Text: string(q.Raw)}, HeadersSize: -1, BodySize: len(q.Raw)},
		MCP: harMCP{Seq: q.Seq, Direction: dirName(q.Dir), Kind: q.Kind.String(), Method: q.Method, Tool: q.Tool,
			Action: q.Action.String(), Rule: q.Rule, Error: q.Error, Original: string(q.Original)},
	}
	switch {
	case x.resp != nil:
		he.Response = harResp(x.resp.Raw, 200, answerStatus(x.resp))
		wait := float64(x.resp.Time.Sub(q.Time).Microseconds()) / 1000
		if wait < 0 {
			wait = 0
		}
		he.Time, he.Timings.Wait = wait, wait
		he.MCP.ResponseSeq = x.resp.Seq
		he.MCP.ResponseAction, he.MCP.ResponseRule = x.resp.Action.String(), x.resp.Rule
		he.MCP.ResponseOriginal = string(x.resp.Original)
	case x.reply != nil:
		he.Response = harResp(x.reply, 403, "Refused by contextd")
	case q.Kind == jsonrpc.KindNotification:
		he.Response = harResp(nil, 204, "No Content")
	case q.Action == relay.Drop:
		he.Response = harResp(nil, 0, "Dropped by contextd")
	default:
		he.Response = harResp(nil, 0, "No response")
	}
	return he
}

func answerStatus(e *Entry) string {
	if e.Kind == jsonrpc.KindError {
		return "JSON-RPC error"
	}
	return "OK"
}

func harResp(body []byte, status int, text string) harResponse {
	r := harResponse{Status: status, StatusText: text, HTTPVersion: "HTTP/1.1", Cookies: []harNV{},
		Headers: []harNV{}, Content: harContent{Size: len(body), MimeType: jsonMime}, HeadersSize: -1,
		BodySize: len(body)}
	if body != nil {
		r.Headers = jsonHeaders()
		if utf8.Valid(body) {
			r.Content.Text = string(body)
		} else {
			r.Content.Text, r.Content.Encoding = base64.StdEncoding.EncodeToString(body), "base64"
		}
	}
	if status == 204 || status == 0 {
		r.Content.MimeType = "x-unknown"
		if status == 0 {
			r.BodySize = -1
		}
	}
	return r
}
