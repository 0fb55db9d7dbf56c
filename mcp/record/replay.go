package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/relay"
)

// ClientMessages returns what the client sent the server in r, in order, as
// the server received it (after the engine's rules; stored records are
// scrubbed, so secrets come back as placeholders). Dropped messages are left
// out: the server never saw them. Replaying them against a server is how a
// record is compared with a new run (Diff).
func ClientMessages(r *Record) [][]byte {
	var out [][]byte
	for i := range r.Entries {
		e := &r.Entries[i]
		if e.Dir != jsonrpc.ClientToServer || e.Action == relay.Drop {
			continue
		}
		out = append(out, append([]byte(nil), e.Raw...))
	}
	return out
}

// Difference is one place where a replay's responses differ from the
// record's.
type Difference struct {
	// Request is the position of the client's request among the client's
	// requests of the session (from 0), the same in both records.
	Request int
	Method  string
	Tool    string
	// OldSeq and NewSeq are the Seq of the request in each record.
	OldSeq, NewSeq uint64
	// Path is where the responses differ (as intercept paths write it:
	// "result.content[0].text"), "" for the response as a whole.
	Path string
	// Old and New are the differing values as JSON ("" when absent).
	Old, New string
	// What says how they differ, in words.
	What string
}

func (d Difference) String() string {
	where := d.Method
	if d.Tool != "" {
		where += " " + d.Tool
	}
	s := fmt.Sprintf("request %d (%s, seq %d/%d)", d.Request, where, d.OldSeq, d.NewSeq)
	if d.Path != "" {
		s += " at " + d.Path
	}
	s += ": " + d.What
	if d.Old != "" || d.New != "" {
		s += fmt.Sprintf(": %s -> %s", orAbsent(d.Old), orAbsent(d.New))
	}
	return s
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// maxDiffsPerResponse keeps one wildly different response from burying the
// others.
const maxDiffsPerResponse = 20

// maxValueText bounds the Old and New texts of a Difference.
const maxValueText = 200

// Diff compares the responses of two runs of the same client messages:
// the client's n-th request in old with the n-th in new, each with the
// response the server (or the engine) gave it. Ids and the jsonrpc member
// are ignored — a replay may number its requests differently — and so are
// notifications and the server's own requests, which vary from run to run
// (progress, logs). Numbers are compared by value. No difference: nil.
func Diff(old, new *Record) []Difference {
	oq, nq := requestsWithAnswers(old), requestsWithAnswers(new)
	var out []Difference
	for i := 0; i < max(len(oq), len(nq)); i++ {
		switch {
		case i >= len(nq):
			o := oq[i]
			out = append(out, Difference{Request: i, Method: o.req.Method, Tool: o.req.Tool, OldSeq: o.req.Seq,
				What: "request missing from the new run"})
			continue
		case i >= len(oq):
			n := nq[i]
			out = append(out, Difference{Request: i, Method: n.req.Method, Tool: n.req.Tool, NewSeq: n.req.Seq,
				What: "request only in the new run"})
			continue
		}
		o, n := oq[i], nq[i]
		d := Difference{Request: i, Method: o.req.Method, Tool: o.req.Tool, OldSeq: o.req.Seq, NewSeq: n.req.Seq}
		if o.req.Method != n.req.Method || o.req.Tool != n.req.Tool {
			d.What = fmt.Sprintf("a different request (%s %s)", n.req.Method, n.req.Tool)
			out = append(out, d)
			continue
		}
		ob, nb := o.answer(), n.answer()
		switch {
		case ob == nil && nb == nil:
			continue
		case ob == nil:
			d.What, d.New = "no response in the old run", clip(string(nb))
			out = append(out, d)
			continue
		case nb == nil:
			d.What, d.Old = "no response in the new run", clip(string(ob))
			out = append(out, d)
			continue
		}
		ov, oerr := decodeAnswer(ob)
		nv, nerr := decodeAnswer(nb)
		if oerr != nil || nerr != nil {
			if !bytes.Equal(ob, nb) {
				d.What, d.Old, d.New = "responses differ (not both JSON objects)", clip(string(ob)), clip(string(nb))
				out = append(out, d)
			}
			continue
		}
		var diffs []Difference
		compare(d, "", ov, nv, &diffs)
		out = append(out, diffs...)
	}
	return out
}

type qa struct {
	req  *Entry
	resp *Entry
	rep  []byte
}

func (x qa) answer() []byte {
	if x.resp != nil {
		return x.resp.Raw
	}
	return x.rep
}

// requestsWithAnswers lists the client's requests with their answers.
func requestsWithAnswers(r *Record) []qa {
	var out []qa
	for _, x := range exchanges(r) {
		if x.req == nil || x.req.Dir != jsonrpc.ClientToServer || x.req.Kind != jsonrpc.KindRequest {
			continue
		}
		out = append(out, qa{req: x.req, resp: x.resp, rep: x.reply})
	}
	return out
}

// decodeAnswer decodes a response without its id and jsonrpc members.
func decodeAnswer(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not an object")
	}
	delete(m, "id")
	delete(m, "jsonrpc")
	return m, nil
}

// compare appends the differences between a and b below path.
func compare(base Difference, path string, a, b any, out *[]Difference) {
	if len(*out) >= maxDiffsPerResponse {
		return
	}
	add := func(what string, av, bv any) {
		d := base
		d.Path, d.What = path, what
		if av != nil {
			d.Old = clip(jsonText(av))
		}
		if bv != nil {
			d.New = clip(jsonText(bv))
		}
		*out = append(*out, d)
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			add("different types", a, b)
			return
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, inA := av[k]
			y, inB := bv[k]
			p := joinPath(path, k)
			switch {
			case !inA:
				d := base
				d.Path, d.What, d.New = p, "only in the new response", clip(jsonText(y))
				*out = append(*out, d)
			case !inB:
				d := base
				d.Path, d.What, d.Old = p, "only in the old response", clip(jsonText(x))
				*out = append(*out, d)
			default:
				compare(base, p, x, y, out)
			}
			if len(*out) >= maxDiffsPerResponse {
				return
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			add("different types", a, b)
			return
		}
		for i := 0; i < min(len(av), len(bv)); i++ {
			compare(base, path+"["+strconv.Itoa(i)+"]", av[i], bv[i], out)
		}
		if len(av) != len(bv) {
			add(fmt.Sprintf("%d elements, now %d", len(av), len(bv)), nil, nil)
		}
	case json.Number:
		bv, ok := b.(json.Number)
		if !ok || !sameNumber(av, bv) {
			add("values differ", a, b)
		}
	default:
		if jsonText(a) != jsonText(b) {
			add("values differ", a, b)
		}
	}
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, err1 := a.Float64()
	y, err2 := b.Float64()
	return err1 == nil && err2 == nil && x == y
}

// joinPath adds a member name to a path, in the syntax of intercept.Path.
func joinPath(path, name string) string {
	if name == "" || strings.ContainsAny(name, ".[]\"") {
		q, _ := json.Marshal(name)
		return path + "[" + string(q) + "]"
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func clip(s string) string {
	if len(s) <= maxValueText {
		return s
	}
	cut := maxValueText
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
