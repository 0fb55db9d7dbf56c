package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/relay"
)

// The JSON forms. A message's bytes are written as a JSON string ("raw"), not
// as embedded JSON: a string keeps them byte for byte (encoding/json would
// compact and re-escape embedded JSON) and keeps a JSON Lines entry on one
// line. Bytes that are not valid UTF-8 go in base64 ("raw_base64") instead.
// Times are RFC 3339 in UTC with nanoseconds.

// Format names the JSON export format; Version is bumped on incompatible
// changes.
const (
	Format  = "contextd-mcp-session"
	Version = 1
)

type sessionJSON struct {
	Type     string     `json:"type,omitempty"` // "session" in JSON Lines
	Format   string     `json:"format,omitempty"`
	Version  int        `json:"version,omitempty"`
	ID       string     `json:"id"`
	Server   string     `json:"server"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	Failure  string     `json:"failure,omitempty"`
	Messages int        `json:"messages"`
}

type entryJSON struct {
	Type        string          `json:"type,omitempty"` // "entry" in JSON Lines
	Seq         uint64          `json:"seq"`
	Dir         string          `json:"dir"`
	Time        time.Time       `json:"time"`
	Kind        string          `json:"kind"`
	ID          json.RawMessage `json:"id,omitempty"`
	Method      string          `json:"method,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Corr        uint64          `json:"corr,omitempty"`
	Action      string          `json:"action"`
	Rule        string          `json:"rule,omitempty"`
	Error       string          `json:"error,omitempty"`
	Raw         *string         `json:"raw,omitempty"`
	RawB64      []byte          `json:"raw_base64,omitempty"`
	Original    *string         `json:"original,omitempty"`
	OriginalB64 []byte          `json:"original_base64,omitempty"`
	Reply       *string         `json:"reply,omitempty"`
	ReplyB64    []byte          `json:"reply_base64,omitempty"`
}

type recordJSON struct {
	Format  string      `json:"format"`
	Version int         `json:"version"`
	Session sessionJSON `json:"session"`
	Entries []entryJSON `json:"entries"`
}

func toSessionJSON(s Session, n int) sessionJSON {
	sj := sessionJSON{ID: s.ID, Server: s.Server, Started: s.Started.UTC(), Failure: s.Failure, Messages: n}
	if !s.Ended.IsZero() {
		t := s.Ended.UTC()
		sj.Ended = &t
	}
	return sj
}

// putBytes sets a message field: as a string when it is UTF-8, else base64.
func putBytes(b []byte, str **string, b64 *[]byte) {
	if b == nil {
		return
	}
	if utf8.Valid(b) {
		s := string(b)
		*str = &s
		return
	}
	*b64 = b
}

func getBytes(str *string, b64 []byte) []byte {
	if str != nil {
		return []byte(*str)
	}
	if b64 != nil {
		return b64
	}
	return nil
}

func toEntryJSON(e *Entry) entryJSON {
	ej := entryJSON{
		Seq: e.Seq, Dir: dirName(e.Dir), Time: e.Time.UTC(), Kind: e.Kind.String(),
		Method: e.Method, Tool: e.Tool, Corr: e.Corr, Action: e.Action.String(),
		Rule: e.Rule, Error: e.Error,
	}
	if len(e.ID) > 0 && json.Valid(e.ID) {
		ej.ID = e.ID
	}
	putBytes(e.Raw, &ej.Raw, &ej.RawB64)
	putBytes(e.Original, &ej.Original, &ej.OriginalB64)
	putBytes(e.Reply, &ej.Reply, &ej.ReplyB64)
	return ej
}

func dirName(d jsonrpc.Direction) string {
	switch d {
	case jsonrpc.ClientToServer, jsonrpc.ServerToClient:
		return d.String()
	}
	return "unknown"
}

// ParseDirection, ParseKind and ParseAction read the names the String
// methods write.
func ParseDirection(s string) (jsonrpc.Direction, error) {
	for _, d := range []jsonrpc.Direction{jsonrpc.ClientToServer, jsonrpc.ServerToClient} {
		if d.String() == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("direction %q is not client->server or server->client", s)
}

// ParseKind reads a jsonrpc.Kind's name.
func ParseKind(s string) (jsonrpc.Kind, error) {
	for k := jsonrpc.KindInvalid; k <= jsonrpc.KindBatch; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("kind %q is unknown", s)
}

// ParseAction reads a relay.Action's name.
func ParseAction(s string) (relay.Action, error) {
	for a := relay.Forward; a <= relay.Drop; a++ {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("action %q is not forward, modify or drop", s)
}

func fromEntryJSON(ej *entryJSON) (Entry, error) {
	e := Entry{Seq: ej.Seq, Time: ej.Time.UTC(), Method: ej.Method, Tool: ej.Tool, Corr: ej.Corr,
		Rule: ej.Rule, Error: ej.Error}
	var err error
	if ej.Seq == 0 {
		return e, errors.New("seq is missing or 0")
	}
	if e.Dir, err = ParseDirection(ej.Dir); err != nil {
		return e, err
	}
	if e.Kind, err = ParseKind(ej.Kind); err != nil {
		return e, err
	}
	if e.Action, err = ParseAction(ej.Action); err != nil {
		return e, err
	}
	if len(ej.ID) > 0 {
		e.ID = append(json.RawMessage(nil), ej.ID...)
	}
	if ej.Raw != nil && ej.RawB64 != nil || ej.Original != nil && ej.OriginalB64 != nil || ej.Reply != nil && ej.ReplyB64 != nil {
		return e, errors.New("a message is given both as text and as base64")
	}
	if e.Raw = getBytes(ej.Raw, ej.RawB64); e.Raw == nil {
		return e, errors.New("raw is missing")
	}
	e.Original = getBytes(ej.Original, ej.OriginalB64)
	e.Reply = getBytes(ej.Reply, ej.ReplyB64)
	return e, nil
}

// WriteJSON writes the whole record as one JSON document (indented; the
// messages are strings, see the format notes above).
func WriteJSON(w io.Writer, r *Record) error {
	rj := recordJSON{Format: Format, Version: Version, Session: toSessionJSON(r.Session, len(r.Entries)),
		Entries: make([]entryJSON, len(r.Entries))}
	for i := range r.Entries {
		rj.Entries[i] = toEntryJSON(&r.Entries[i])
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rj); err != nil {
		return fmt.Errorf("record: write JSON: %w: %w", err, catalog.ErrIO)
	}
	return nil
}

// WriteJSONL writes the record as JSON Lines: a first line for the session
// ({"type":"session",...}), then one line per entry ({"type":"entry",...}).
func WriteJSONL(w io.Writer, r *Record) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	sj := toSessionJSON(r.Session, len(r.Entries))
	sj.Type, sj.Format, sj.Version = "session", Format, Version
	if err := enc.Encode(sj); err != nil {
		return fmt.Errorf("record: write JSON Lines: %w: %w", err, catalog.ErrIO)
	}
	for i := range r.Entries {
		ej := toEntryJSON(&r.Entries[i])
		ej.Type = "entry"
		if err := enc.Encode(ej); err != nil {
			return fmt.Errorf("record: write JSON Lines: %w: %w", err, catalog.ErrIO)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("record: write JSON Lines: %w: %w", err, catalog.ErrIO)
	}
	return nil
}

// MaxLine bounds one line of JSON Lines input (one message and its
// metadata): a larger line is refused rather than read into memory.
const MaxLine = 64 << 20

// ReadJSON reads a record written by WriteJSON. Errors wrap
// catalog.ErrBadInput and say where.
func ReadJSON(rd io.Reader) (*Record, error) {
	dec := json.NewDecoder(rd)
	var rj recordJSON
	if err := dec.Decode(&rj); err != nil {
		return nil, fmt.Errorf("record: read JSON: %v: %w", err, catalog.ErrBadInput)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("record: read JSON: data after the record: %w", catalog.ErrBadInput)
	}
	if rj.Format != Format {
		return nil, fmt.Errorf("record: read JSON: format %q is not %q: %w", rj.Format, Format, catalog.ErrBadInput)
	}
	if rj.Version != Version {
		return nil, fmt.Errorf("record: read JSON: version %d is not %d: %w", rj.Version, Version, catalog.ErrBadInput)
	}
	r := &Record{Session: fromSessionJSON(&rj.Session)}
	for i := range rj.Entries {
		e, err := fromEntryJSON(&rj.Entries[i])
		if err != nil {
			return nil, fmt.Errorf("record: read JSON: entries[%d]: %v: %w", i, err, catalog.ErrBadInput)
		}
		if err := r.add(e); err != nil {
			return nil, fmt.Errorf("record: read JSON: entries[%d]: %v: %w", i, err, catalog.ErrBadInput)
		}
	}
	r.Session.Messages = len(r.Entries)
	return r, nil
}

func fromSessionJSON(sj *sessionJSON) Session {
	s := Session{ID: sj.ID, Server: sj.Server, Started: sj.Started.UTC(), Failure: sj.Failure, Messages: sj.Messages}
	if sj.Ended != nil {
		s.Ended = sj.Ended.UTC()
	}
	return s
}

// add appends e, which must come after the last entry.
func (r *Record) add(e Entry) error {
	if n := len(r.Entries); n > 0 && e.Seq <= r.Entries[n-1].Seq {
		return fmt.Errorf("seq %d does not follow %d", e.Seq, r.Entries[n-1].Seq)
	}
	r.Entries = append(r.Entries, e)
	return nil
}

// ReadJSONL reads a record written by WriteJSONL. Errors wrap
// catalog.ErrBadInput and give the line.
func ReadJSONL(rd io.Reader) (*Record, error) {
	br := bufio.NewReaderSize(rd, 64<<10)
	var r *Record
	for line := 1; ; line++ {
		b, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("record: read JSON Lines: line %d: %v: %w", line, err, catalog.ErrBadInput)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return nil, fmt.Errorf("record: read JSON Lines: line %d: %v: %w", line, err, catalog.ErrBadInput)
		}
		switch {
		case head.Type == "session" && r == nil:
			var sj sessionJSON
			if err := json.Unmarshal(b, &sj); err != nil {
				return nil, fmt.Errorf("record: read JSON Lines: line %d: %v: %w", line, err, catalog.ErrBadInput)
			}
			if sj.Format != Format || sj.Version != Version {
				return nil, fmt.Errorf("record: read JSON Lines: line %d: format %q version %d is not %q version %d: %w",
					line, sj.Format, sj.Version, Format, Version, catalog.ErrBadInput)
			}
			r = &Record{Session: fromSessionJSON(&sj)}
		case head.Type == "session":
			return nil, fmt.Errorf("record: read JSON Lines: line %d: a second session: %w", line, catalog.ErrBadInput)
		case head.Type == "entry" && r != nil:
			var ej entryJSON
			if err := json.Unmarshal(b, &ej); err != nil {
				return nil, fmt.Errorf("record: read JSON Lines: line %d: %v: %w", line, err, catalog.ErrBadInput)
			}
			e, err := fromEntryJSON(&ej)
			if err == nil {
				err = r.add(e)
			}
			if err != nil {
				return nil, fmt.Errorf("record: read JSON Lines: line %d: %v: %w", line, err, catalog.ErrBadInput)
			}
		case head.Type == "entry":
			return nil, fmt.Errorf("record: read JSON Lines: line %d: an entry before the session line: %w", line, catalog.ErrBadInput)
		default:
			return nil, fmt.Errorf("record: read JSON Lines: line %d: type %q is not session or entry: %w", line, head.Type, catalog.ErrBadInput)
		}
	}
	if r == nil {
		return nil, fmt.Errorf("record: read JSON Lines: no session line: %w", catalog.ErrBadInput)
	}
	r.Session.Messages = len(r.Entries)
	return r, nil
}

// readLine returns the next line without its '\n', refusing lines over
// MaxLine. io.EOF means there was no more line.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLine)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// Load reads a record in either form, telling them apart by the first
// non-space bytes: a JSON Lines record starts with its session line.
func Load(rd io.Reader) (*Record, error) {
	br := bufio.NewReaderSize(rd, 64<<10)
	peek, _ := br.Peek(512)
	peek = bytes.TrimLeft(peek, " \t\r\n")
	if bytes.HasPrefix(peek, []byte(`{"type":"session"`)) {
		return ReadJSONL(br)
	}
	return ReadJSON(br)
}
