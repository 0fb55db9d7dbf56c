package record_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/contextd/contextd/mcp/record"
)

// A small schema for HAR 1.2's required fields
// (http://www.softwareishard.com/blog/har-12-spec/): each object lists the
// members it must have and their types; members not listed are free (HAR
// allows custom fields). Optional objects the export writes (postData) are
// checked when present.

type kind int

const (
	kString kind = iota
	kNumber
	kObject
	kArray
	kDateTime // a string in ISO 8601 with a time zone
)

type field struct {
	name     string
	kind     kind
	optional bool
	object   []field // for kObject, and for the elements of kArray
	minNum   float64 // for kNumber: the least value allowed
}

var nameValue = []field{{name: "name", kind: kString}, {name: "value", kind: kString}}

var harSchema = []field{{name: "log", kind: kObject, object: []field{
	{name: "version", kind: kString},
	{name: "creator", kind: kObject, object: []field{{name: "name", kind: kString}, {name: "version", kind: kString}}},
	{name: "pages", kind: kArray, optional: true},
	{name: "entries", kind: kArray, object: []field{
		{name: "pageref", kind: kString, optional: true},
		{name: "startedDateTime", kind: kDateTime},
		{name: "time", kind: kNumber},
		{name: "request", kind: kObject, object: []field{
			{name: "method", kind: kString},
			{name: "url", kind: kString},
			{name: "httpVersion", kind: kString},
			{name: "cookies", kind: kArray, object: nameValue},
			{name: "headers", kind: kArray, object: nameValue},
			{name: "queryString", kind: kArray, object: nameValue},
			{name: "postData", kind: kObject, optional: true, object: []field{
				{name: "mimeType", kind: kString},
				{name: "text", kind: kString},
			}},
			{name: "headersSize", kind: kNumber, minNum: -1},
			{name: "bodySize", kind: kNumber, minNum: -1},
		}},
		{name: "response", kind: kObject, object: []field{
			{name: "status", kind: kNumber},
			{name: "statusText", kind: kString},
			{name: "httpVersion", kind: kString},
			{name: "cookies", kind: kArray, object: nameValue},
			{name: "headers", kind: kArray, object: nameValue},
			{name: "content", kind: kObject, object: []field{
				{name: "size", kind: kNumber},
				{name: "mimeType", kind: kString},
				{name: "text", kind: kString, optional: true},
				{name: "encoding", kind: kString, optional: true},
			}},
			{name: "redirectURL", kind: kString},
			{name: "headersSize", kind: kNumber, minNum: -1},
			{name: "bodySize", kind: kNumber, minNum: -1},
		}},
		{name: "cache", kind: kObject},
		{name: "timings", kind: kObject, object: []field{
			{name: "blocked", kind: kNumber, optional: true, minNum: -1},
			{name: "dns", kind: kNumber, optional: true, minNum: -1},
			{name: "connect", kind: kNumber, optional: true, minNum: -1},
			{name: "send", kind: kNumber},
			{name: "wait", kind: kNumber},
			{name: "receive", kind: kNumber},
			{name: "ssl", kind: kNumber, optional: true, minNum: -1},
		}},
	}},
}}}

var iso8601 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

// checkSchema returns every violation of fields in obj, with its path.
func checkSchema(path string, obj map[string]any, fields []field) []string {
	var errs []string
	for _, f := range fields {
		p := path + "." + f.name
		v, ok := obj[f.name]
		if !ok {
			if !f.optional {
				errs = append(errs, p+": missing")
			}
			continue
		}
		errs = append(errs, checkValue(p, v, f)...)
	}
	return errs
}

func checkValue(p string, v any, f field) []string {
	switch f.kind {
	case kString:
		if _, ok := v.(string); !ok {
			return []string{p + ": not a string"}
		}
	case kDateTime:
		s, ok := v.(string)
		if !ok || !iso8601.MatchString(s) {
			return []string{fmt.Sprintf("%s: %v is not an ISO 8601 date and time", p, v)}
		}
	case kNumber:
		n, ok := v.(float64)
		if !ok {
			return []string{p + ": not a number"}
		}
		if n < f.minNum {
			return []string{fmt.Sprintf("%s: %v is below %v", p, n, f.minNum)}
		}
	case kObject:
		m, ok := v.(map[string]any)
		if !ok {
			return []string{p + ": not an object"}
		}
		return checkSchema(p, m, f.object)
	case kArray:
		a, ok := v.([]any)
		if !ok {
			return []string{p + ": not an array"}
		}
		var errs []string
		if f.object != nil {
			for i, el := range a {
				errs = append(errs, checkValue(fmt.Sprintf("%s[%d]", p, i), el, field{kind: kObject, object: f.object})...)
			}
		}
		return errs
	}
	return nil
}

func validHAR(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("HAR is not JSON: %v", err)
	}
	if errs := checkSchema("", doc, harSchema); len(errs) > 0 {
		t.Fatalf("HAR 1.2 violations:\n%s", strings.Join(errs, "\n"))
	}
	if v := doc["log"].(map[string]any)["version"]; v != "1.2" {
		t.Fatalf("log.version = %v", v)
	}
	return doc
}

// The schema check itself catches what it should.
func TestHARSchemaCheck(t *testing.T) {
	bad := map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "x"},
		"entries": []any{map[string]any{"startedDateTime": "yesterday", "time": "1"}}}}
	errs := checkSchema("", bad, harSchema)
	joined := strings.Join(errs, "\n")
	for _, want := range []string{".log.creator.version: missing", "startedDateTime: yesterday", ".time: not a number",
		".request: missing", ".timings: missing"} {
		if !strings.Contains(joined, want) {
			t.Errorf("schema check missed %q; got:\n%s", want, joined)
		}
	}
}

type harDoc struct {
	Log struct {
		Entries []struct {
			StartedDateTime string
			Time            float64
			Request         struct {
				Method, URL string
				PostData    *struct{ Text string }
			}
			Response struct {
				Status     int
				StatusText string
				Content    struct {
					Size           int
					Text, Encoding string
				}
			}
			Timings struct{ Wait float64 }
			MCP     struct {
				Seq, ResponseSeq uint64
				Direction, Kind  string
				Method, Tool     string
				Action, Rule     string
				Original         string
			} `json:"_mcp"`
		}
	}
}

func TestHAR(t *testing.T) {
	var b bytes.Buffer
	if err := record.WriteHAR(&b, sample(), &record.HAROptions{CreatorVersion: "0.test"}); err != nil {
		t.Fatal(err)
	}
	validHAR(t, b.Bytes())
	var h harDoc
	if err := json.Unmarshal(b.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	es := h.Log.Entries
	// One entry per request, notification or orphan answer, in order:
	// 1+3, 2, 4 (refused), 5+6, 7 (unanswered), 8 (orphan), 9 (dropped).
	var seqs []string
	for _, e := range es {
		seqs = append(seqs, fmt.Sprintf("%d/%d/%d", e.MCP.Seq, e.MCP.ResponseSeq, e.Response.Status))
	}
	want := "1/3/200 2/0/204 4/0/403 5/6/200 7/0/0 0/8/200 9/0/0"
	if got := strings.Join(seqs, " "); got != want {
		t.Errorf("entries (seq/responseSeq/status) = %s, want %s", got, want)
	}
	call := es[0]
	if call.Request.Method != "POST" || call.Request.URL != "http://stdio.mcp.invalid/tools%2Fcall" ||
		call.Request.PostData == nil || !strings.Contains(call.Request.PostData.Text, `"name":"echo"`) ||
		!strings.Contains(call.Response.Content.Text, "REDACTED") || call.MCP.Tool != "echo" {
		t.Errorf("tools/call entry: %+v", call)
	}
	if call.Time != 7 || call.Timings.Wait != 7 || call.StartedDateTime != "2025-06-01T12:00:00.000Z" {
		t.Errorf("timing: started %s, time %v, wait %v", call.StartedDateTime, call.Time, call.Timings.Wait)
	}
	if es[2].Response.StatusText != "Refused by contextd" || !strings.Contains(es[2].Response.Content.Text, "refused") {
		t.Errorf("refused entry: %+v", es[2].Response)
	}
	if es[3].Response.StatusText != "JSON-RPC error" || es[3].MCP.Direction != "server->client" {
		t.Errorf("sampling entry: %+v", es[3])
	}
	if es[6].Response.StatusText != "Dropped by contextd" {
		t.Errorf("dropped entry: %+v", es[6].Response)
	}

	// A remote server's URL is used as it is, without its credentials.
	r := sample()
	r.Session.Server = "https://user:pw@mcp.example.test/mcp?x=1"
	b.Reset()
	record.WriteHAR(&b, r, nil)
	validHAR(t, b.Bytes())
	if strings.Contains(b.String(), "user:pw") || !strings.Contains(b.String(), `"url": "https://mcp.example.test/mcp?x=1"`) {
		t.Errorf("remote URL not used or credentials kept")
	}
}

// The HAR of a session recorded through the engine and the store is valid,
// and every message of the record is in it.
func TestHARFromRecordedSession(t *testing.T) {
	st := openStore(t)
	id, _ := recordSession(t, st)
	r, err := st.LoadSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := record.WriteHAR(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	validHAR(t, b.Bytes())
	var h harDoc
	json.Unmarshal(b.Bytes(), &h)
	var seen []int
	for _, e := range h.Log.Entries {
		for _, s := range []uint64{e.MCP.Seq, e.MCP.ResponseSeq} {
			if s != 0 {
				seen = append(seen, int(s))
			}
		}
	}
	sort.Ints(seen)
	if len(seen) != len(r.Entries) {
		t.Fatalf("HAR holds messages %v of %d", seen, len(r.Entries))
	}
	for i, s := range seen {
		if s != i+1 {
			t.Fatalf("HAR holds messages %v", seen)
		}
	}
}
