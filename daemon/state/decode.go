package state

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

// decode reads input, one JSON object, into the struct v points to, as
// strictly as the schema.json files describe: an unknown key, a key that
// matches a field only when case is ignored ("Title" for "title"), a key given
// twice, a null value and anything after the object are refused. encoding/json
// alone would take the first three silently (picking one of two values), so
// what a policy or an audit reader sees could differ from what the tool does.
// Errors name keys and positions, never values: inputs may hold secrets.
func decode(tool string, input []byte, v any) error {
	if len(bytes.TrimSpace(input)) == 0 {
		return fmt.Errorf("%s: empty input, expected a JSON object: %w", tool, catalog.ErrBadInput)
	}
	if err := checkKeys(input, v); err != nil {
		return fmt.Errorf("%s: input: %v: %w", tool, err, catalog.ErrBadInput)
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: input: %s: %w", tool, describeJSONError(err), catalog.ErrBadInput)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: input: data after the JSON object: %w", tool, catalog.ErrBadInput)
	}
	return nil
}

// checkKeys walks the top level of input and checks every key against the
// json tags of v's struct: known, given once, not null.
func checkKeys(input []byte, v any) error {
	fields := map[string]bool{}
	rt := reflect.TypeOf(v).Elem()
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	tok, err := dec.Token()
	if err != nil {
		return errors.New(describeJSONError(err))
	}
	if tok != json.Delim('{') {
		return errors.New("expected a JSON object ({...})")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errors.New(describeJSONError(err))
		}
		key, _ := tok.(string)
		if !fields[key] {
			return fmt.Errorf("unknown field %q (field names are lower case, as in schema.json)", key)
		}
		if seen[key] {
			return fmt.Errorf("field %q given twice", key)
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return errors.New(describeJSONError(err))
		}
		if string(val) == "null" {
			return fmt.Errorf("field %q is null; leave it out to use its default", key)
		}
	}
	if _, err := dec.Token(); err != nil {
		return errors.New(describeJSONError(err))
	}
	return nil
}

// describeJSONError says what is wrong with the input without quoting it.
func describeJSONError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		want := te.Type.Kind().String()
		switch want {
		case "slice":
			want = "an array"
		case "int":
			want = "an integer"
		case "bool":
			want = "true or false"
		}
		if te.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", te.Field, want, te.Value)
		}
		return fmt.Sprintf("expected %s, not %s", want, te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated JSON"
	}
	// What is left (an unknown field) names a key, not a value.
	return err.Error()
}
