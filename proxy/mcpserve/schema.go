package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/contextd/contextd/toolspec"
)

// An agent's client sends the whole tools/list answer to the model at the
// start of every conversation, so each token of it is paid again and again.
// The schemas served here are derived from toolspec's schema.json files (one
// source of truth) with only what a model needs to call a tool: the property
// names, their types or allowed values, the required ones and each one's
// short description. Bounds (lengths, minimums) stay in schema.json and are
// enforced by the daemon, whose refusals say what was wrong.

// specSchema is the part of a schema.json that is read.
type specSchema struct {
	Description string          `json:"description"`
	Type        string          `json:"type"`
	Properties  json.RawMessage `json:"properties"`
	Required    []string        `json:"required"`
}

type specProperty struct {
	Type        string        `json:"type"`
	Enum        []string      `json:"enum"`
	Items       *specProperty `json:"items"`
	Description string        `json:"description"`
}

// compact is a served tool: its description and input schema.
type compact struct {
	Description string
	Schema      json.RawMessage
}

// compactSpec derives the served form of one tool's schema.json.
func compactSpec(raw []byte) (compact, error) {
	var s specSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return compact{}, err
	}
	if s.Type != "object" || s.Description == "" {
		return compact{}, fmt.Errorf("not an object schema with a description")
	}
	names, props, err := orderedProperties(s.Properties)
	if err != nil {
		return compact{}, err
	}
	// Written by hand rather than marshalled from maps, so that the order is
	// the one a reader expects (type, properties, required) and stable.
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, n)
		b.WriteByte(':')
		writeProperty(&b, props[i])
	}
	b.WriteByte('}')
	if len(s.Required) > 0 {
		b.WriteString(`,"required":`)
		enc, _ := json.Marshal(s.Required)
		b.Write(enc)
	}
	b.WriteByte('}')
	if !json.Valid(b.Bytes()) {
		return compact{}, fmt.Errorf("derived schema is not JSON: %s", b.Bytes())
	}
	return compact{Description: s.Description, Schema: b.Bytes()}, nil
}

// orderedProperties decodes a properties object keeping its order: schema.json
// lists the main argument first (safe_bash's command, safe_read's path).
func orderedProperties(raw json.RawMessage) ([]string, []specProperty, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("properties is not an object")
	}
	var names []string
	var props []specProperty
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := t.(string)
		var p specProperty
		if err := dec.Decode(&p); err != nil {
			return nil, nil, fmt.Errorf("property %s: %w", name, err)
		}
		if p.Type == "" && len(p.Enum) == 0 {
			return nil, nil, fmt.Errorf("property %s has neither a type nor an enum", name)
		}
		names = append(names, name)
		props = append(props, p)
	}
	return names, props, nil
}

func writeProperty(b *bytes.Buffer, p specProperty) {
	b.WriteByte('{')
	switch {
	case len(p.Enum) > 0:
		b.WriteString(`"enum":`)
		enc, _ := json.Marshal(p.Enum)
		b.Write(enc)
	default:
		b.WriteString(`"type":`)
		writeString(b, p.Type)
	}
	if p.Items != nil {
		b.WriteString(`,"items":`)
		writeProperty(b, specProperty{Type: p.Items.Type, Enum: p.Items.Enum})
	}
	if p.Description != "" {
		b.WriteString(`,"description":`)
		writeString(b, p.Description)
	}
	b.WriteByte('}')
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}

// continueTool is the one tool that is not in toolspec: it pages through a
// result that was cut to its token budget. Every tool's truncated result ends
// with the reference to pass it.
const continueTool = "continue"

var continueSpec = compact{
	Description: "Get the next part of a cut result.",
	Schema:      json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string","description":"from the result's last line"}},"required":["ref"]}`),
}

// served returns every tool served, in toolspec's order, then continue.
func served() ([]string, map[string]compact, error) {
	names := append(toolspec.Names(), continueTool)
	out := map[string]compact{continueTool: continueSpec}
	for _, s := range toolspec.All() {
		c, err := compactSpec(s.Schema)
		if err != nil {
			return nil, nil, fmt.Errorf("toolspec %s/schema.json: %w", s.Name, err)
		}
		out[s.Name] = c
	}
	return names, out, nil
}
