package automation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/envallow"
)

// Bounds of what a payload may put in a command's environment: a variable
// and all of them together stay far below the kernel's limits on exec's
// arguments (128 KiB a string).
const (
	MaxEnvValue = 64 << 10
	MaxEnvTotal = 256 << 10
)

// Bounds of a payload path.
const (
	maxPathLen   = 256
	maxPathSteps = 32
	maxIndex     = 1 << 20
)

// step is one element of a payload path: an object's key, or an array's
// index. A bare number ("commits.0") is either, by what it meets.
type step struct {
	key     string
	index   int
	bracket bool // written [n]: an index only
	numeric bool // the key is a number, usable as an index
}

// parsePath reads "pull_request.head.ref", "commits.0.id" or
// "commits[0].id".
func parsePath(p string) ([]step, error) {
	if p == "" || len(p) > maxPathLen {
		return nil, fmt.Errorf("path %q: must be 1 to %d characters", p, maxPathLen)
	}
	var steps []step
	for _, part := range strings.Split(p, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if strings.Contains(key, "]") || (key == "" && (rest == "" || len(steps) > 0)) {
			return nil, fmt.Errorf("path %q: an empty or malformed element in %q", p, part)
		}
		if key != "" {
			n, err := strconv.Atoi(key)
			steps = append(steps, step{key: key, index: n, numeric: err == nil && n >= 0 && n <= maxIndex && strconv.Itoa(n) == key})
		}
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			n, err := strconv.Atoi(num)
			if !ok || err != nil || n < 0 || n > maxIndex || strconv.Itoa(n) != num || (after != "" && after[0] != '[') {
				return nil, fmt.Errorf("path %q: %q is not an index [N]", p, part)
			}
			steps = append(steps, step{index: n, bracket: true})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	if len(steps) > maxPathSteps {
		return nil, fmt.Errorf("path %q: more than %d elements", p, maxPathSteps)
	}
	return steps, nil
}

// lookup returns the raw JSON at path in v, or nil when there is none.
func lookup(v json.RawMessage, path []step) json.RawMessage {
	for _, s := range path {
		v = bytes.TrimSpace(v)
		switch {
		case len(v) > 0 && v[0] == '{' && !s.bracket:
			var obj map[string]json.RawMessage
			if json.Unmarshal(v, &obj) != nil {
				return nil
			}
			v = obj[s.key]
		case len(v) > 0 && v[0] == '[' && (s.bracket || s.numeric):
			var arr []json.RawMessage
			if json.Unmarshal(v, &arr) != nil || s.index >= len(arr) {
				return nil
			}
			v = arr[s.index]
		default:
			return nil
		}
		if v == nil {
			return nil
		}
	}
	return bytes.TrimSpace(v)
}

// Expand turns a verified payload into the call's input and the variables
// its command gets (besides FixedEnv). A payload value reaches the call
// only as data: an env binding's value is the variable's value, byte for
// byte (a string without its quotes, any other value as its JSON), and an
// args binding puts the value, whole, as a top-level input field; nothing
// is spliced into a string. A value that is missing (or null, for env)
// leaves the variable unset or the field as the template has it, with a
// warning. Errors wrap catalog.ErrBadInput and name the binding, never the
// value.
func (a *Automation) Expand(payload []byte) (input []byte, env map[string]string, warnings []string, err error) {
	if !json.Valid(payload) {
		return nil, nil, nil, fmt.Errorf("automation %s: the payload is not JSON: %w", a.Name, catalog.ErrBadInput)
	}
	refuse := func(b binding, why string) error {
		return fmt.Errorf("automation %s: %s from %s: %s: %w", a.Name, b.key, b.from, why, catalog.ErrBadInput)
	}
	env = map[string]string{}
	total := 0
	for _, b := range a.env {
		raw := lookup(payload, b.path)
		if raw == nil || string(raw) == "null" {
			warnings = append(warnings, fmt.Sprintf("the payload has no value at %s: %s is unset", b.from, b.key))
			continue
		}
		v := string(raw)
		if raw[0] == '"' {
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, nil, nil, refuse(b, err.Error())
			}
		}
		switch total += len(b.key) + len(v); {
		case strings.IndexByte(v, 0) >= 0:
			return nil, nil, nil, refuse(b, "the value holds a NUL byte, which no variable can")
		case len(v) > MaxEnvValue:
			return nil, nil, nil, refuse(b, fmt.Sprintf("the value is %d bytes, over %d", len(v), MaxEnvValue))
		case total > MaxEnvTotal:
			return nil, nil, nil, refuse(b, fmt.Sprintf("the variables pass %d bytes together", MaxEnvTotal))
		case envallow.LooksLikeCredential(b.key, v):
			return nil, nil, nil, refuse(b, "the value looks like a credential, which is never passed to a command")
		}
		env[b.key] = v
	}
	fields := make(map[string]json.RawMessage, len(a.input)+len(a.args))
	for k, v := range a.input {
		fields[k] = v
	}
	for _, b := range a.args {
		raw := lookup(payload, b.path)
		if raw == nil {
			warnings = append(warnings, fmt.Sprintf("the payload has no value at %s: input field %q is left as configured", b.from, b.key))
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return nil, nil, nil, refuse(b, err.Error())
		}
		fields[b.key] = compact.Bytes()
	}
	input, err = json.Marshal(fields)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("automation %s: input: %v: %w", a.Name, err, catalog.ErrBadInput)
	}
	return input, env, warnings, nil
}
