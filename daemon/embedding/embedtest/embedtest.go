// Package embedtest serves the documented request/response shapes of Ollama's /api/embed and OpenAI's /v1/embeddings over httptest, for protocol tests: it checks what a client sends and answers as those APIs describe, and is no substitute for a real embedding server or model.
package embedtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// Server answers one API at the path the client is expected to use.
type Server struct {
	*httptest.Server
	api   string
	Model string // the only model the server knows; others get 404
	Key   string // when set, requests need "Authorization: Bearer Key"
	Dims  int    // dimension of Embed's vectors

	mu sync.Mutex
	// Embed computes a text's vector. Default: Trigrams with Dims.
	embed func(string) []float32
	// fault, when set, answers instead of the API (a failure to test).
	fault    http.HandlerFunc
	requests int
	inputs   []string
	problems []string
}

// New starts a server for api ("ollama" or "openai") that knows model and
// embeds with Trigrams of dims dimensions. It is closed at the end of t.
func New(t testing.TB, api, model string, dims int) *Server {
	s := &Server{api: api, Model: model, Dims: dims}
	s.embed = func(text string) []float32 { return Trigrams(text, s.Dims) }
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.Close()
		for _, p := range s.Problems() {
			t.Errorf("embedtest: the client sent a request the API does not accept: %s", p)
		}
	})
	return s
}

// BaseURL is the URL to configure as embed_url: the server's root for
// Ollama, root + "/v1" for OpenAI (as those APIs' clients are set up).
func (s *Server) BaseURL() string {
	if s.api == "openai" {
		return s.URL + "/v1"
	}
	return s.URL
}

// SetFault makes every request answered by h (nil: by the API again).
func (s *Server) SetFault(h http.HandlerFunc) {
	s.mu.Lock()
	s.fault = h
	s.mu.Unlock()
}

// SetEmbed replaces the embedding function.
func (s *Server) SetEmbed(f func(string) []float32) {
	s.mu.Lock()
	s.embed = f
	s.mu.Unlock()
}

// Requests counts the requests received (faults included).
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Inputs are every text the server was asked to embed, in order.
func (s *Server) Inputs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.inputs...)
}

// Problems are the requests that broke the API's request shape.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

func (s *Server) problem(format string, a ...any) {
	s.mu.Lock()
	s.problems = append(s.problems, fmt.Sprintf(format, a...))
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	fault, embed := s.fault, s.embed
	s.mu.Unlock()
	// Read the body first: only then does net/http notice a client that
	// hangs up (and cancel r.Context()).
	body, _ := io.ReadAll(r.Body)
	if fault != nil {
		fault(w, r)
		return
	}
	path := "/api/embed"
	if s.api == "openai" {
		path = "/v1/embeddings"
	}
	if r.URL.Path != path {
		s.problem("path %s, want %s", r.URL.Path, path)
		s.fail(w, http.StatusNotFound, "404 page not found")
		return
	}
	if r.Method != http.MethodPost {
		s.problem("method %s", r.Method)
		s.fail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.problem("Content-Type %q", ct)
	}
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		// OpenAI's answer quotes part of the key it was given.
		given := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.fail(w, http.StatusUnauthorized, "Incorrect API key provided: "+given+". You can find your API key at https://platform.openai.com/account/api-keys.")
		return
	}
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.problem("body %q: %v", body, err)
		s.fail(w, http.StatusBadRequest, "invalid request body")
		return
	}
	var inputs []string
	if err := json.Unmarshal(req.Input, &inputs); err != nil {
		var one string
		if err := json.Unmarshal(req.Input, &one); err != nil {
			s.problem("input %s is neither a string nor a list of strings", req.Input)
			s.fail(w, http.StatusBadRequest, "invalid input type")
			return
		}
		inputs = []string{one}
	}
	if len(inputs) == 0 {
		s.problem("empty input")
	}
	if req.Model != s.Model {
		if s.api == "ollama" {
			s.fail(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", req.Model))
		} else {
			s.fail(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model))
		}
		return
	}
	s.mu.Lock()
	s.inputs = append(s.inputs, inputs...)
	s.mu.Unlock()

	vecs := make([][]float32, len(inputs))
	for i, in := range inputs {
		vecs[i] = embed(in)
	}
	w.Header().Set("Content-Type", "application/json")
	if s.api == "ollama" {
		json.NewEncoder(w).Encode(map[string]any{
			"model": req.Model, "embeddings": vecs,
			"total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8,
		})
		return
	}
	// The items come back in reverse: the index, not the order, says
	// which input each belongs to.
	data := make([]map[string]any, 0, len(vecs))
	for i := len(vecs) - 1; i >= 0; i-- {
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": vecs[i]})
	}
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": 8, "total_tokens": 8},
	})
}

// fail answers an error in the API's own error shape.
func (s *Server) fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if s.api == "ollama" {
		json.NewEncoder(w).Encode(map[string]string{"error": msg})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": nil,
	}})
}

// Trigrams is a deterministic stand-in for an embedding model, for tests: a
// bag of the character trigrams of each word (with word boundaries, "#go#"),
// hashed into dims signed buckets and normalized to length 1. Texts that
// share word pieces ("file system" and "filesystem", "notify" and
// "notifications") get close vectors without sharing a whole word. It knows
// nothing of meaning: no synonyms, no paraphrase.
func Trigrams(text string, dims int) []float32 {
	v := make([]float32, dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		g := []rune("#" + w + "#")
		for i := 0; i+3 <= len(g); i++ {
			h := fnv.New64a()
			h.Write([]byte(string(g[i : i+3])))
			x := h.Sum64()
			sign := float32(1)
			if x>>63 == 1 {
				sign = -1
			}
			v[x%uint64(dims)] += sign
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		v[0] = 1 // a text without letters still has a direction
		return v
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(n))
	}
	return v
}
