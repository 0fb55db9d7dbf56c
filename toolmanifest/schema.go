package toolmanifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// Schema is the tool's input schema: a file in the tool's tree, or written
// in the manifest. Exactly one of the two is set.
type Schema struct {
	Path   string          // relative to the tool's root, clean
	Inline json.RawMessage // compact JSON, already checked with CheckSchema
}

// maxSchemaSize bounds schema.json, read from a fetched tree.
const maxSchemaSize = 256 << 10

// parseSchema reads the schema key: a path, a JSON text starting with "{",
// or a TOML table holding the schema itself.
func parseSchema(v any) (Schema, error) {
	const key = "schema"
	switch v := v.(type) {
	case nil:
		return Schema{}, bad(key, "missing; name the input schema's file (schema = \"schema.json\") or write it inline")
	case string:
		if strings.HasPrefix(strings.TrimSpace(v), "{") {
			return inlineSchema([]byte(v))
		}
		p, err := checkRel(key, v)
		return Schema{Path: p}, err
	case map[string]any:
		raw, err := json.Marshal(v)
		if err != nil {
			return Schema{}, bad(key, "the table cannot be written as JSON: %v", err)
		}
		return inlineSchema(raw)
	}
	return Schema{}, bad(key, "write a file name, a JSON object as a string, or a table")
}

func inlineSchema(raw []byte) (Schema, error) {
	if err := CheckSchema(raw); err != nil {
		return Schema{}, fmt.Errorf("%s: schema: %w", FileName, err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return Schema{}, bad("schema", "not JSON: %v", err)
	}
	return Schema{Inline: buf.Bytes()}, nil
}

// CheckSchema checks that data is a JSON Schema for a tool's input: one
// JSON object whose "type" is "object". The errors wrap catalog.ErrBadInput.
func CheckSchema(data []byte) error {
	if len(data) > maxSchemaSize {
		return fmt.Errorf("the schema is %d bytes; at most %d: %w", len(data), maxSchemaSize, catalog.ErrBadInput)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return fmt.Errorf("the schema is not a JSON object: %w", catalog.ErrBadInput)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("the schema has text after its object: %w", catalog.ErrBadInput)
	}
	if t, _ := obj["type"].(string); t != "object" {
		return fmt.Errorf("the schema's \"type\" must be \"object\" (a tool's input is a JSON object): %w", catalog.ErrBadInput)
	}
	return nil
}

// InputSchema returns the schema's JSON, reading the file from fsys when
// the manifest names one. fsys must be the tool's root opened so that no
// path leaves it (os.Root's FS), since the tree came from elsewhere.
func (m *Manifest) InputSchema(fsys fs.FS) ([]byte, error) {
	if m.Schema.Path == "" {
		return bytes.Clone(m.Schema.Inline), nil
	}
	f, err := fsys.Open(m.Schema.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: schema: %q cannot be read (%v): %w", FileName, m.Schema.Path, err, catalog.ErrBadInput)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSchemaSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: schema: %q cannot be read (%v): %w", FileName, m.Schema.Path, err, catalog.ErrBadInput)
	}
	if err := CheckSchema(data); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Schema.Path, err)
	}
	return data, nil
}
