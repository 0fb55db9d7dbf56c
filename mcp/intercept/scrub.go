package intercept

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/contextd/contextd/mcp/jsonscan"
	"github.com/contextd/contextd/scrub"
)

// Scrubber finds secrets and names their placeholders: the shape of
// scrub.Scrubber's Find and scrub.Vault's Placeholder together. The daemon
// plugs in the session's vault, so that a secret gets the same
// "[REDACTED:<rule>:<n>]" in every message and every tool of the session;
// VaultScrubber does that. It must be safe for concurrent use.
type Scrubber interface {
	// Find returns the secrets in text, sorted and not overlapping.
	Find(text []byte) []scrub.Finding
	// Placeholder returns the text that replaces the finding.
	Placeholder(f scrub.Finding) string
}

// VaultScrubber is a Scrubber from contextd's scrub package: Scrubber finds,
// Vault numbers (a session's placeholders), Source tells the vault where the
// secrets were read (for instance "mcp:<server>"), so that they are only ever
// restored into what came from there.
type VaultScrubber struct {
	Scrubber *scrub.Scrubber
	Vault    *scrub.Vault
	Source   string
}

// Find implements Scrubber.
func (v *VaultScrubber) Find(text []byte) []scrub.Finding { return v.Scrubber.Find(text) }

// Placeholder implements Scrubber.
func (v *VaultScrubber) Placeholder(f scrub.Finding) string {
	return v.Vault.Placeholder(f.Rule, f.Secret, v.Source)
}

// strSpan is one string value to scrub: its literal is b[start:end].
type strSpan struct {
	start, end int
	escaped    bool
	key        string // the member name it is the value of, "" in an array
}

// collectStrings appends the string values inside the value at s.I (which
// is known to be valid JSON), with the member name each belongs to, and
// leaves s.I past the value. It walks the value once, with the scanner's
// steps: a walk that checked each nested value whole before descending into
// it would read deep input once per level.
func collectStrings(s *jsonscan.Scanner, key string, out []strSpan) ([]strSpan, error) {
	b := s.B
	switch b[s.I] {
	case '"':
		start := s.I
		esc, err := s.String()
		if err != nil {
			return out, err
		}
		return append(out, strSpan{start: start, end: s.I, escaped: esc, key: key}), nil
	case '{':
		empty, err := s.Open()
		for err == nil && !empty {
			var start, end int
			var esc, more bool
			if start, end, esc, err = s.Name(); err != nil {
				break
			}
			var k string
			if k, err = jsonscan.Unquote(b[start:end], esc); err != nil {
				break
			}
			if out, err = collectStrings(s, k, out); err != nil {
				break
			}
			more, err = s.More('}')
			empty = !more
		}
		return out, err
	case '[':
		empty, err := s.Open()
		for err == nil && !empty {
			var more bool
			if out, err = collectStrings(s, "", out); err != nil {
				break
			}
			more, err = s.More(']')
			empty = !more
		}
		return out, err
	}
	return out, s.Value()
}

// contextKey reports whether a member name is worth showing the scrubber in
// front of its value: secret rules (gitleaks' generic-api-key, contextd's
// credential-named assignments) decide on the name a value is assigned to, so
// "api_key": "…" is scanned as the line `api_key: …`. Names that could not be
// a variable name add nothing and are left out.
func contextKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// scrubStrings replaces the secrets in the string values spans point at and
// returns the new message (b itself when nothing was found) and how many
// replacements were made. Member names are never changed.
//
// All the values are scanned in one Find call, one line each (with its member
// name in front as context), which costs one pass of the keyword automaton
// instead of one per value. A secret can span lines of one value (a PEM key
// in a string with "\n" escapes is decoded first). A finding that reaches
// over two values replaces its part in each: over-scrubbing is the safe
// side.
func scrubStrings(sc Scrubber, b []byte, spans []strSpan) ([]byte, int, error) {
	if len(spans) == 0 {
		return b, 0, nil
	}
	type region struct {
		off int    // where the value starts in buf
		val string // the decoded value
	}
	regions := make([]region, len(spans))
	var buf bytes.Buffer
	for i, s := range spans {
		v, err := jsonscan.Unquote(b[s.start:s.end], s.escaped)
		if err != nil {
			return nil, 0, err
		}
		if contextKey(s.key) {
			buf.WriteString(s.key)
			buf.WriteString(": ")
		}
		regions[i] = region{off: buf.Len(), val: v}
		buf.WriteString(v)
		buf.WriteByte('\n')
	}
	fs := sc.Find(buf.Bytes())
	if len(fs) == 0 {
		return b, 0, nil
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })

	type cut struct {
		start, end int // in the decoded value
		ph         string
	}
	cuts := make([][]cut, len(spans))
	n := 0
	// Regions are in buf order; walk findings and regions together.
	r := 0
	for _, f := range fs {
		for r < len(regions) && regions[r].off+len(regions[r].val) <= f.Start {
			r++
		}
		var ph string
		for k := r; k < len(regions) && regions[k].off < f.End; k++ {
			s := max(f.Start, regions[k].off) - regions[k].off
			e := min(f.End, regions[k].off+len(regions[k].val)) - regions[k].off
			if s >= e {
				continue // the finding only touches the member name or the separator
			}
			if ph == "" {
				ph = sc.Placeholder(f)
			}
			if c := cuts[k]; len(c) > 0 && s < c[len(c)-1].end {
				continue // overlaps the previous finding's cut (Find does not return such)
			}
			cuts[k] = append(cuts[k], cut{s, e, ph})
		}
	}
	var out []byte
	prev := 0
	for i, cs := range cuts {
		if len(cs) == 0 {
			continue
		}
		v := regions[i].val
		var nv []byte
		p := 0
		for _, c := range cs {
			nv = append(nv, v[p:c.start]...)
			nv = append(nv, c.ph...)
			p = c.end
			n++
		}
		nv = append(nv, v[p:]...)
		if out == nil {
			out = make([]byte, 0, len(b)+64)
		}
		out = append(out, b[prev:spans[i].start]...)
		out = append(out, quote(string(nv))...)
		prev = spans[i].end
	}
	if out == nil {
		return b, 0, nil
	}
	return append(out, b[prev:]...), n, nil
}

// envelope members are never scrubbed: they route the message.
var envelopeMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true}

// scrubMessage scrubs every string value of the JSON value at b[s:e] (known
// to be valid), outside the envelope when it is an object.
func scrubMessage(sc Scrubber, b []byte, s, e int) ([]byte, int, error) {
	c := &jsonscan.Scanner{B: b[:e], I: s}
	if b[s] != '{' {
		spans, err := collectStrings(c, "", nil)
		if err != nil {
			return nil, 0, err
		}
		return scrubStrings(sc, b, spans)
	}
	var spans []strSpan
	empty, err := c.Open()
	for err == nil && !empty {
		var start, end int
		var esc, more bool
		if start, end, esc, err = c.Name(); err != nil {
			break
		}
		var k string
		if k, err = jsonscan.Unquote(b[start:end], esc); err != nil {
			break
		}
		if envelopeMembers[k] {
			err = c.Value()
		} else {
			spans, err = collectStrings(c, k, spans)
		}
		if err != nil {
			break
		}
		more, err = c.More('}')
		empty = !more
	}
	if err != nil {
		return nil, 0, err
	}
	return scrubStrings(sc, b, spans)
}

// scrubAt scrubs the string values inside the value at path p of the message
// (absent: nothing to do).
func scrubAt(sc Scrubber, b []byte, p Path) ([]byte, int, error) {
	s, e, err := jsonscan.Document(b)
	if err != nil {
		return nil, 0, err
	}
	vs, _, ok, err := lookup(b, s, e, p)
	if err != nil || !ok {
		return b, 0, err
	}
	key := ""
	if len(p) > 0 && p[len(p)-1].Index < 0 {
		key = p[len(p)-1].Name
	}
	spans, err := collectStrings(&jsonscan.Scanner{B: b, I: vs, Depth: len(p)}, key, nil)
	if err != nil {
		return nil, 0, err
	}
	return scrubStrings(sc, b, spans)
}

// scrubText scrubs bytes that are not a JSON object (a line a server wrote
// that is no message at all) as plain text.
func scrubText(sc Scrubber, b []byte) ([]byte, int, error) {
	fs := sc.Find(b)
	if len(fs) == 0 {
		return b, 0, nil
	}
	return scrub.Replace(b, fs, sc.Placeholder), len(fs), nil
}

// ScrubJSON scrubs every string value of a JSON-RPC message except its
// envelope, as the built-in rule does to what servers send; bytes that are
// not a JSON object are scrubbed as text. It returns raw itself when nothing
// was found. The record uses it (through Engine.Redact) so that a message's
// original, as it was before the engine scrubbed it, is not stored with its
// secrets.
func ScrubJSON(sc Scrubber, raw []byte) ([]byte, error) {
	s, e, err := jsonscan.Document(raw)
	if err != nil {
		out, _, err := scrubText(sc, raw)
		return out, err
	}
	if raw[s] == '[' {
		var out []byte = raw
		var ferr error
		// Elements one by one, from the last so offsets stay valid.
		var elems [][2]int
		if _, err := jsonscan.Array(raw, s, 0, func(_, a, z int) error {
			elems = append(elems, [2]int{a, z})
			return nil
		}); err != nil {
			return nil, err
		}
		for i := len(elems) - 1; i >= 0; i-- {
			a, z := elems[i][0], elems[i][1]
			el, _, err := scrubMessage(sc, out[a:z:z], 0, z-a)
			if err != nil {
				ferr = err
				break
			}
			if !bytes.Equal(el, out[a:z]) {
				out = splice(out, a, z, el)
			}
		}
		return out, ferr
	}
	out, _, err := scrubMessage(sc, raw, s, e)
	if err != nil {
		return nil, fmt.Errorf("scrub: %w", err)
	}
	return out, nil
}
