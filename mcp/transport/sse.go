package transport

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/contextd/contextd/mcp/jsonrpc"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	event string // "message" when the stream named none
	data  []byte
}

// sseReader parses a text/event-stream as the HTML standard's event stream
// interpretation says: lines end in "\r\n", "\n" or "\r"; "field: value";
// comments start with ":"; a blank line dispatches. Nothing else is assumed of
// the server: the stream is untrusted input, and no event may grow past max.
type sseReader struct {
	r          io.Reader
	buf        []byte
	start, end int
	err        error
	skipLF     bool // the last line ended in "\r": a "\n" right after belongs to it
	started    bool // past a possible byte order mark
	max        int

	lastID string        // the last event ID, for Last-Event-ID
	idBuf  string        // the id field seen since the last dispatch
	retry  time.Duration // the server's reconnection time, 0 if it gave none

	dispatched int // events returned so far
}

func newSSEReader(r io.Reader, max int) *sseReader {
	if max <= 0 {
		max = jsonrpc.DefaultMaxMessage
	}
	return &sseReader{r: r, max: max, buf: make([]byte, 16<<10)}
}

// line returns the next line without its end. The slice is valid until the
// next call. A line cut off by the end of the stream is discarded, as the
// standard says.
func (s *sseReader) line() ([]byte, error) {
	for {
		if s.skipLF && s.start < s.end {
			if s.buf[s.start] == '\n' {
				s.start++
			}
			s.skipLF = false
		}
		if i := bytes.IndexAny(s.buf[s.start:s.end], "\r\n"); i >= 0 {
			if i > s.max+64 {
				return nil, s.tooLong()
			}
			line := s.buf[s.start : s.start+i]
			s.skipLF = s.buf[s.start+i] == '\r'
			s.start += i + 1
			return line, nil
		}
		if s.err != nil {
			return nil, s.err
		}
		if s.end-s.start > s.max+64 {
			return nil, s.tooLong()
		}
		if s.start > 0 {
			s.end = copy(s.buf, s.buf[s.start:s.end])
			s.start = 0
		}
		if s.end == len(s.buf) {
			grown := make([]byte, 2*len(s.buf))
			copy(grown, s.buf[:s.end])
			s.buf = grown
		}
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.err = err
		}
	}
}

// tooLong reports a line longer than an event's data may be, plus room for a
// field name and its colon.
func (s *sseReader) tooLong() error {
	return fmt.Errorf("%w: event stream line (limit %d bytes)", jsonrpc.ErrTooLarge, s.max)
}

// next returns the next event that carries data. At the end of the stream it
// returns io.EOF (or the reader's error).
func (s *sseReader) next() (sseEvent, error) {
	var (
		data    []byte
		hasData bool
		event   string
	)
	for {
		line, err := s.line()
		if err != nil {
			return sseEvent{}, err
		}
		if !s.started {
			s.started = true
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) == 0 { // dispatch
			s.lastID = s.idBuf
			if !hasData {
				event = ""
				continue
			}
			if event == "" {
				event = "message"
			}
			s.dispatched++
			return sseEvent{event: event, data: data[:len(data)-1]}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if len(data)+len(value) >= s.max+1 {
				return sseEvent{}, fmt.Errorf("%w: event data (limit %d bytes)", jsonrpc.ErrTooLarge, s.max)
			}
			data = append(append(data, value...), '\n')
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.idBuf = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil && strings.Trim(string(value), "0123456789") == "" {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}
