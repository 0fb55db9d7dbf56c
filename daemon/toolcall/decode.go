package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// DecodeStrict decodes one JSON object into v, refusing unknown fields and
// trailing data, so a misspelled key is an error and not a silently ignored
// option. With noNull a key whose value is null is refused too (leave it
// out to get its default). Its errors wrap catalog.ErrBadInput.
func DecodeStrict(tool string, input []byte, v any, noNull bool) error {
	if len(bytes.TrimSpace(input)) == 0 {
		return fmt.Errorf("%s: empty input, expected a JSON object: %w", tool, catalog.ErrBadInput)
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: input: %s: %w", tool, jsonProblem(err), catalog.ErrBadInput)
	}
	if dec.More() {
		return fmt.Errorf("%s: input: data after the JSON object: %w", tool, catalog.ErrBadInput)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: input: data after the JSON object: %w", tool, catalog.ErrBadInput)
	}
	if err := exactKeys(input, v, noNull); err != nil {
		return fmt.Errorf("%s: input: %v: %w", tool, err, catalog.ErrBadInput)
	}
	return nil
}

// exactKeys refuses what encoding/json lets through: a key that matches a field only
// case-insensitively ("PATH" for "path") and a key given twice. json picks one of
// the values silently, so a schema validator or a policy reading the same input
// would see another path or command than the tool runs. v is a pointer to the
// struct input was decoded into, which is known to be one valid JSON object.
func exactKeys(input []byte, v any, noNull bool) error {
	known := map[string]bool{}
	rt := reflect.TypeOf(v).Elem()
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("expected a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errors.New("invalid JSON")
		}
		key, _ := tok.(string)
		switch {
		case !known[key]:
			return fmt.Errorf("unknown field %q (field names are lower case, as in schema.json)", key)
		case seen[key]:
			return fmt.Errorf("field %q given twice", key)
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return errors.New("invalid JSON")
		}
		if noNull && string(val) == "null" {
			return fmt.Errorf("field %q is null; leave it out to use its default", key)
		}
	}
	return nil
}

// jsonProblem describes a decode error without quoting the input (it may hold
// secrets).
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s, not %s", te.Field, te.Type.Kind(), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated JSON"
	}
	return err.Error() // e.g. `json: unknown field "x"`: names the key, not the value
}
