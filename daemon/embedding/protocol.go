package embedding

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
)

// The wire shapes. Both APIs take the same request body, {"model": M,
// "input": [texts]}: Ollama's /api/embed accepts a string or a list as
// input, OpenAI's /v1/embeddings too (and token arrays, not used here).
// Neither optional field is sent: Ollama truncates an input over the
// model's context by default (truncate: true), and OpenAI's default
// encoding_format is "float", which is what the parser reads.

type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

// ollamaResponse is Ollama's answer: {"model": ..., "embeddings": [[...],
// ...]} (plus timings and counts this package does not read).
type ollamaResponse struct {
	Embeddings *[][]float32 `json:"embeddings"`
}

// openAIResponse is an OpenAI-compatible answer: {"object": "list",
// "data": [{"object": "embedding", "index": i, "embedding": [...]}, ...],
// "model": ..., "usage": {...}}. Items may come in any order: index says
// which input each belongs to.
type openAIResponse struct {
	Data *[]struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func encodeRequest(model string, texts []string) ([]byte, error) {
	return json.Marshal(request{Model: model, Input: texts})
}

// ParseOllama reads an /api/embed answer to a request of n texts and
// returns its n vectors. It is the parser of untrusted input (whatever the
// configured URL answers) and refuses every shape it does not expect.
func ParseOllama(body []byte, n int) ([][]float32, error) {
	var r ollamaResponse
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	if r.Embeddings == nil {
		return nil, errors.New(`no "embeddings" in the answer (is embed_api right for this endpoint?)`)
	}
	return checkVectors(*r.Embeddings, n)
}

// ParseOpenAI reads a /v1/embeddings answer to a request of n texts and
// returns its n vectors in input order. Like ParseOllama, it refuses any
// other shape.
func ParseOpenAI(body []byte, n int) ([][]float32, error) {
	var r openAIResponse
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	if r.Data == nil {
		return nil, errors.New(`no "data" in the answer (is embed_api right for this endpoint?)`)
	}
	data := *r.Data
	if len(data) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(data), n)
	}
	vs := make([][]float32, n)
	for _, d := range data {
		if d.Index == nil {
			return nil, errors.New(`an embedding without "index"`)
		}
		i := *d.Index
		if i < 0 || i >= n {
			return nil, fmt.Errorf("index %d out of range for %d inputs", i, n)
		}
		if vs[i] != nil {
			return nil, fmt.Errorf("index %d given twice", i)
		}
		if d.Embedding == nil {
			return nil, fmt.Errorf(`embedding %d is missing or null`, i)
		}
		vs[i] = d.Embedding
	}
	return checkVectors(vs, n)
}

// decode unmarshals one JSON value and nothing after it. Unknown fields
// are allowed: both APIs add fields (timings, usage) over time.
func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not the expected JSON: %s", shortJSONError(err))
	}
	if dec.More() {
		return errors.New("more than one JSON value in the answer")
	}
	return nil
}

// shortJSONError keeps a decoding error short and free of the body's
// content (which may be long).
func shortJSONError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s where a %s belongs (field %q)", te.Value, te.Type, te.Field)
	}
	return clip(err.Error(), 120)
}

// checkVectors checks that there are n vectors, each non-empty, finite, not
// all zero, of one dimension no larger than maxDims.
func checkVectors(vs [][]float32, n int) ([][]float32, error) {
	if len(vs) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(vs), n)
	}
	if n == 0 {
		return nil, errors.New("no embeddings")
	}
	dims := len(vs[0])
	for i, v := range vs {
		switch {
		case len(v) == 0:
			return nil, fmt.Errorf("embedding %d is empty", i)
		case len(v) != dims:
			return nil, fmt.Errorf("embedding %d has %d dimensions, embedding 0 has %d", i, len(v), dims)
		case len(v) > maxDims:
			return nil, fmt.Errorf("embedding %d has %d dimensions, more than %d", i, len(v), maxDims)
		}
		zero := true
		for j, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("embedding %d: component %d is not finite", i, j)
			}
			zero = zero && x == 0
		}
		// A zero vector has no direction: cosine similarity is undefined.
		if zero {
			return nil, fmt.Errorf("embedding %d is all zeros", i)
		}
	}
	return vs, nil
}

// errorMessage finds the message of an error body: {"error": "text"}
// (Ollama), {"error": {"message": "text"}} (OpenAI), or the body itself
// when it is short plain text. It returns one clipped line, or "".
func errorMessage(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		var s string
		if json.Unmarshal(e.Error, &s) == nil {
			return clip(s, 200)
		}
		var o struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &o) == nil && o.Message != "" {
			return clip(o.Message, 200)
		}
	}
	t := strings.TrimSpace(string(body))
	if t == "" || strings.HasPrefix(t, "<") || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return "" // empty, an HTML page or unknown JSON: nothing worth quoting
	}
	return clip(t, 200)
}

// clip makes s one line of printable characters, at most n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(strings.ToValidUTF8(s, "?"), func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	}), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
