package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Input is what the hook needs of Claude Code's PreToolUse input: a JSON object
// with session_id, transcript_path, cwd, permission_mode, hook_event_name,
// tool_name, tool_input and tool_use_id (and more in newer versions; unknown
// members are skipped).
type Input struct {
	SessionID      string
	TranscriptPath string
	Cwd            string
	HookEventName  string
	ToolName       string
}

// ErrTooLarge: the input went past the limit before naming its tool.
var ErrTooLarge = errors.New("input too large")

// limited returns ErrTooLarge once more than n bytes were asked for, so that
// a long input is told apart from a truncated one.
type limited struct {
	r io.Reader
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

// ParseInput reads the hook input from r, token by token, and stops as soon as
// it knows the event and the tool: tool_input, which follows them and can hold
// a whole file, is then never held in memory. At most max bytes are read before
// that; the first of duplicate members counts.
func ParseInput(r io.Reader, max int64) (*Input, error) {
	dec := json.NewDecoder(&limited{r: r, n: max})
	in := &Input{}
	fail := func(err error) (*Input, error) {
		if errors.Is(err, ErrTooLarge) {
			if in.ToolName != "" {
				// Enough is known to decide; the rest is the tool's input.
				return in, nil
			}
			return nil, fmt.Errorf("more than %d bytes before tool_name: %w", max, ErrTooLarge)
		}
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("the input ended early (%w)", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	tok, err := dec.Token()
	if err != nil {
		return fail(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object (it starts with %v)", tok)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		key, _ := tok.(string)
		var dst *string
		switch key {
		case "session_id":
			dst = &in.SessionID
		case "transcript_path":
			dst = &in.TranscriptPath
		case "cwd":
			dst = &in.Cwd
		case "hook_event_name":
			dst = &in.HookEventName
		case "tool_name":
			dst = &in.ToolName
		}
		if dst == nil || seen[key] {
			if err := skip(dec); err != nil {
				return fail(err)
			}
			continue
		}
		seen[key] = true
		tok, err = dec.Token()
		if err != nil {
			return fail(err)
		}
		switch v := tok.(type) {
		case string:
			*dst = v
		case json.Delim:
			if key == "tool_name" {
				return nil, fmt.Errorf("tool_name is not a string")
			}
			// Another shape than documented for a field the hook can do
			// without: skip the rest of it.
			if err := skipRest(dec, v); err != nil {
				return fail(err)
			}
		default:
			if key == "tool_name" {
				return nil, fmt.Errorf("tool_name is not a string")
			}
		}
		if in.ToolName != "" && in.HookEventName != "" {
			return in, nil
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail(err)
	}
	if in.ToolName == "" {
		return nil, errors.New("no tool_name in the input")
	}
	return in, nil
}

// skip passes over one value.
func skip(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok {
		return skipRest(dec, d)
	}
	return nil
}

// skipRest passes over the rest of a container whose opening delimiter was read.
func skipRest(dec *json.Decoder, open json.Delim) error {
	if open != '{' && open != '[' {
		return fmt.Errorf("unexpected %v", open)
	}
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}
