package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// stream writes a call's answer as server-sent events. Its headers are
// sent with the first event, not before: a call refused before its tool
// runs is still answered with the refusal's status.
type stream struct {
	c       echo.Context
	started bool
	// carry is the start of a character the last chunk cut: it goes out
	// with the next one, so that no event's text holds half a character.
	carry []byte
}

// outputEvent is the data of an output event.
type outputEvent struct {
	Text string `json:"text"`
}

// output sends b as an output event.
func (st *stream) output(b []byte) error {
	b = append(st.carry, b...)
	cut := completeUTF8(b)
	st.carry = append([]byte(nil), b[cut:]...)
	if cut == 0 {
		return nil
	}
	return st.event("output", outputEvent{Text: string(b[:cut])})
}

// flushCarry sends what is left of a cut character (it was never
// completed: it becomes U+FFFD, as any invalid UTF-8 does in JSON).
func (st *stream) flushCarry() error {
	if len(st.carry) == 0 {
		return nil
	}
	b := st.carry
	st.carry = nil
	return st.event("output", outputEvent{Text: string(b)})
}

// event writes one event and flushes it to the client.
func (st *stream) event(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w := st.c.Response()
	if !st.started {
		st.started = true
		h := w.Header()
		h.Set(echo.HeaderContentType, "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no") // a reverse proxy in front must not hold events back
		w.WriteHeader(http.StatusOK)
	}
	// json.Marshal writes no newline, so the value is one data line.
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return err
	}
	w.Flush()
	return nil
}

// completeUTF8 is the length of b without an incomplete character at its
// end (at most the last 3 bytes are held back; anything else invalid goes
// as it is).
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if !utf8.FullRune(b[i:]) {
			return i
		}
		break
	}
	return len(b)
}
