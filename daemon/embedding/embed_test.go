package embedding_test

// These are protocol tests: the client against an httptest server
// (embedtest) that implements each API's documented request and response
// shape. They show that the client speaks the shapes and handles failures;
// they are not a substitute for a real Ollama or OpenAI endpoint, which
// cannot be installed or reached on the machines these tests run on.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/embedding/embedtest"
)

const secretKey = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"

func client(t *testing.T, o embedding.Options) *embedding.Client {
	t.Helper()
	c, err := embedding.New(&o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	return c
}

// Both APIs: one text, several, more than a batch; order kept; the vectors
// are the server's.
func TestProtocol(t *testing.T) {
	for _, api := range []string{embedding.Ollama, embedding.OpenAI} {
		t.Run(api, func(t *testing.T) {
			srv := embedtest.New(t, api, "m1", 64)
			srv.Key = secretKey
			c := client(t, embedding.Options{API: api, URL: srv.BaseURL(), Model: "m1", APIKey: secretKey, Batch: 3})
			texts := []string{"alpha", "beta gamma", "delta", "epsilon zeta", "eta", "theta", "iota"}
			vs, err := c.Embed(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != len(texts) {
				t.Fatalf("%d vectors for %d texts", len(vs), len(texts))
			}
			for i, v := range vs {
				want := embedtest.Trigrams(texts[i], 64)
				if fmt.Sprint(v) != fmt.Sprint(want) {
					t.Errorf("vector %d (%q) is not the server's for that text", i, texts[i])
				}
			}
			if n := srv.Requests(); n != 3 { // 7 texts, batches of 3
				t.Errorf("%d requests, want 3", n)
			}
			if got := strings.Join(srv.Inputs(), "|"); got != strings.Join(texts, "|") {
				t.Errorf("the server got %q", got)
			}
			if c.Dimensions() != 64 {
				t.Errorf("Dimensions() = %d, want 64", c.Dimensions())
			}
			if vs, err := c.Embed(t.Context(), nil); vs != nil || err != nil || srv.Requests() != 3 {
				t.Errorf("Embed(nil) = %v, %v after %d requests; want nothing sent", vs, err, srv.Requests())
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	tests := []struct{ api, url, want string }{
		{embedding.Ollama, "", "http://localhost:11434/api/embed"},
		{embedding.Ollama, "http://gpu-box:11434", "http://gpu-box:11434/api/embed"},
		{embedding.Ollama, "http://gpu-box:11434/", "http://gpu-box:11434/api/embed"},
		{embedding.Ollama, "https://proxy.example/ollama/api/embed", "https://proxy.example/ollama/api/embed"},
		{embedding.OpenAI, "https://api.openai.com/v1", "https://api.openai.com/v1/embeddings"},
		{embedding.OpenAI, "http://localhost:8080/v1/", "http://localhost:8080/v1/embeddings"},
		{embedding.OpenAI, "http://localhost:8080", "http://localhost:8080/v1/embeddings"},
		{embedding.OpenAI, "http://localhost:8080/v1/embeddings", "http://localhost:8080/v1/embeddings"},
	}
	for _, tt := range tests {
		c := client(t, embedding.Options{API: tt.api, URL: tt.url, Model: "m"})
		if c.Endpoint() != tt.want {
			t.Errorf("%s %q: endpoint %q, want %q", tt.api, tt.url, c.Endpoint(), tt.want)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, o := range []*embedding.Options{
		nil,
		{API: "ollama"},
		{API: "cohere", Model: "m"},
		{API: "openai", Model: "m"},
		{API: "ollama", Model: "m", URL: "ftp://host"},
		{API: "ollama", Model: "m", URL: "http://user:" + secretKey + "@host"},
		{API: "ollama", Model: "m", Dimensions: -1},
	} {
		_, err := embedding.New(o)
		if !errors.Is(err, catalog.ErrConfig) {
			t.Errorf("New(%+v): %v, want %s", o, err, catalog.ErrConfig.Code)
		}
		if err != nil && strings.Contains(err.Error(), secretKey) {
			t.Errorf("New: the error shows the password: %v", err)
		}
	}
}

// Each failure is the right error, of the right class, fast where it
// should be, and never shows the key.
func TestFailures(t *testing.T) {
	type want struct {
		sentinel error
		class    *catalog.Class
		text     string
	}
	tests := []struct {
		name  string
		api   string
		setup func(t *testing.T, srv *embedtest.Server, o *embedding.Options)
		want  want
	}{
		{"endpoint down", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.Close()
		}, want{embedding.ErrUnreachable, catalog.ErrStoreUnavailable, "refused"}},
		{"timeout", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			o.Timeout = 100 * time.Millisecond
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			})
		}, want{embedding.ErrTimeout, catalog.ErrStoreUnavailable, "no answer within 100ms"}},
		{"bad JSON", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"embeddings": [[0.1, 0.2],`) })
		}, want{embedding.ErrResponse, catalog.ErrStoreUnavailable, "not the expected JSON"}},
		{"other API's shape", embedding.OpenAI, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"embeddings": [[0.1, 0.2]]}`) })
		}, want{embedding.ErrResponse, catalog.ErrStoreUnavailable, `no "data"`}},
		{"wrong count", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"embeddings": [[0.1], [0.2]]}`) })
		}, want{embedding.ErrResponse, catalog.ErrStoreUnavailable, "2 embeddings for 1 inputs"}},
		{"wrong dimension", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			o.Dimensions = 32 // what this daemon has been storing
		}, want{embedding.ErrDimension, catalog.ErrStoreUnavailable, "64-dimension vectors, 32 before"}},
		{"HTTP 401", embedding.OpenAI, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.Key = "sk-the-right-one"
		}, want{embedding.ErrAuth, catalog.ErrConfig, "HTTP 401 Unauthorized; check the key"}},
		{"HTTP 401 without a key", embedding.OpenAI, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.Key, o.APIKey = "sk-the-right-one", ""
		}, want{embedding.ErrAuth, catalog.ErrConfig, "wants a key"}},
		{"unknown model", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			o.Model = "nomic-embed-txt"
		}, want{embedding.ErrStatus, catalog.ErrConfig, `model "nomic-embed-txt" not found, try pulling it first`}},
		{"server error quoting the key", embedding.OpenAI, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprintf(w, `{"error": {"message": "upstream failed for %s"}}`, r.Header.Get("Authorization"))
			})
		}, want{embedding.ErrStatus, catalog.ErrStoreUnavailable, "upstream failed for Bearer [API key]"}},
		{"redirect", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://elsewhere.invalid/api/embed", http.StatusTemporaryRedirect)
			})
		}, want{embedding.ErrStatus, catalog.ErrConfig, "redirects are not followed"}},
		{"not finite", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"embeddings": [[1e39, 0]]}`) })
		}, want{embedding.ErrResponse, catalog.ErrStoreUnavailable, "not the expected JSON"}},
		{"zero vector", embedding.Ollama, func(t *testing.T, srv *embedtest.Server, o *embedding.Options) {
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"embeddings": [[0, 0, 0]]}`) })
		}, want{embedding.ErrResponse, catalog.ErrStoreUnavailable, "all zeros"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := embedtest.New(t, tt.api, "m1", 64)
			o := embedding.Options{API: tt.api, URL: srv.BaseURL(), Model: "m1", APIKey: secretKey}
			tt.setup(t, srv, &o)
			c := client(t, o)
			start := time.Now()
			_, err := c.Embed(t.Context(), []string{"a text"})
			if !errors.Is(err, tt.want.sentinel) || !errors.Is(err, tt.want.class) {
				t.Fatalf("error %v; want %v and %s", err, tt.want.sentinel, tt.want.class.Code)
			}
			t.Log(catalog.Format(err))
			if !strings.Contains(err.Error(), tt.want.text) {
				t.Errorf("error %q does not say %q", err, tt.want.text)
			}
			if strings.Contains(err.Error(), secretKey) || strings.Contains(catalog.Format(err), secretKey) {
				t.Errorf("the error shows the API key: %v", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("failing took %s", d)
			}
		})
	}
}

// After the endpoint fails to answer, calls fail at once for RetryAfter,
// then try again; a refusal that is the configuration's is not held.
func TestRetryAfter(t *testing.T) {
	srv := embedtest.New(t, embedding.Ollama, "m1", 16)
	srv.SetFault(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error": "server busy"}`)
	})
	c := client(t, embedding.Options{API: embedding.Ollama, URL: srv.BaseURL(), Model: "m1", RetryAfter: 300 * time.Millisecond})
	if _, err := c.Embed(t.Context(), []string{"x"}); !errors.Is(err, embedding.ErrStatus) || !strings.Contains(err.Error(), "server busy") {
		t.Fatalf("503: %v", err)
	}
	srv.SetFault(nil)
	_, err := c.Embed(t.Context(), []string{"x"})
	if !errors.Is(err, embedding.ErrStatus) || !strings.Contains(err.Error(), "not retried") || srv.Requests() != 1 {
		t.Errorf("within RetryAfter: %v after %d requests; want the held error and no request", err, srv.Requests())
	}
	time.Sleep(350 * time.Millisecond)
	if _, err := c.Embed(t.Context(), []string{"x"}); err != nil || srv.Requests() != 2 {
		t.Errorf("after RetryAfter: %v after %d requests", err, srv.Requests())
	}

	// 401 is the configuration's: every call asks again (a fixed key works
	// at once), nothing is held.
	srv.Key = "right"
	c = client(t, embedding.Options{API: embedding.Ollama, URL: srv.BaseURL(), Model: "m1", APIKey: "wrong"})
	for range 2 {
		if _, err := c.Embed(t.Context(), []string{"x"}); !errors.Is(err, embedding.ErrAuth) {
			t.Fatalf("401: %v", err)
		}
	}
	if srv.Requests() != 4 {
		t.Errorf("%d requests, want 4: a 401 must not hold calls back", srv.Requests())
	}
}

// A caller that gives up is not the endpoint's failure.
func TestCanceled(t *testing.T) {
	srv := embedtest.New(t, embedding.Ollama, "m1", 16)
	srv.SetFault(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c := client(t, embedding.Options{API: embedding.Ollama, URL: srv.BaseURL(), Model: "m1"})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, catalog.ErrInterrupted) {
		t.Fatalf("canceled: %v", err)
	}
	srv.SetFault(nil)
	if _, err := c.Embed(t.Context(), []string{"x"}); err != nil {
		t.Errorf("a cancel held the next call back: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"one two three four five six seven eight nine ten", 45, "one two three four five six seven eight nine"},
		{strings.Repeat("x", 20), 8, "xxxxxxxx"},
		{"héhéhé", 5, "héh"},                                        // never half a character (é is two bytes)
		{"ab\xffcd", 100, "ab\uFFFDcd"},                             // invalid UTF-8 replaced
		{"aaaa bbbbbbbbbbbbbbbbbbbbbb", 20, "aaaa bbbbbbbbbbbbbbb"}, // a space too far back: cut the word
	}
	for _, tt := range tests {
		got := embedding.Truncate(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if len(got) > tt.max || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q: too long or invalid", tt.in, tt.max, got)
		}
	}
	// Long texts reach the server cut.
	srv := embedtest.New(t, embedding.Ollama, "m1", 16)
	c := client(t, embedding.Options{API: embedding.Ollama, URL: srv.BaseURL(), Model: "m1", MaxInputBytes: 100})
	if _, err := c.Embed(t.Context(), []string{strings.Repeat("word ", 1000)}); err != nil {
		t.Fatal(err)
	}
	if in := srv.Inputs(); len(in) != 1 || len(in[0]) > 100 {
		t.Errorf("the server got %d bytes", len(in[0]))
	}
}

// With the defaults (embed_api = ""), nothing is created: no client, so no
// request can be made.
func TestFromConfigDefault(t *testing.T) {
	if c := embedding.FromConfig(config.Default().Store); c != nil {
		t.Fatalf("the default configuration made a client: %s", c)
	}
	if d := embedding.Describe(config.Default().Store); d != "lexical only (no embedding endpoint configured)" {
		t.Errorf("Describe = %q", d)
	}
}

func TestFromConfig(t *testing.T) {
	srv := embedtest.New(t, embedding.OpenAI, "text-embedding-3-small", 8)
	srv.Key = secretKey
	s := config.Default().Store
	s.EmbedAPI, s.EmbedURL, s.EmbedModel, s.EmbedAPIKeyEnv = "openai", srv.BaseURL(), "text-embedding-3-small", "CONTEXTD_TEST_EMBED_KEY"

	// The variable is not set: a client that says so, and sends nothing.
	t.Setenv("CONTEXTD_TEST_EMBED_KEY", "")
	c := embedding.FromConfig(s)
	if c == nil {
		t.Fatal("no client for a configured endpoint")
	}
	_, err := c.Embed(t.Context(), []string{"x"})
	if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), "CONTEXTD_TEST_EMBED_KEY") {
		t.Errorf("unset key variable: %v", err)
	}
	if _, _, err := c.Probe(t.Context()); !errors.Is(err, catalog.ErrConfig) {
		t.Errorf("Probe with an unset key variable: %v", err)
	}
	if srv.Requests() != 0 {
		t.Errorf("%d requests without a key", srv.Requests())
	}

	t.Setenv("CONTEXTD_TEST_EMBED_KEY", secretKey)
	c = embedding.FromConfig(s)
	want := "lexical + dense (openai at " + srv.BaseURL() + ", model text-embedding-3-small)"
	if d := embedding.Describe(s); d != want {
		t.Errorf("Describe = %q, want %q", d, want)
	}
	dims, took, err := c.Probe(t.Context())
	if err != nil || dims != 8 || took <= 0 {
		t.Errorf("Probe = %d, %s, %v", dims, took, err)
	}
	if srv.Requests() != 1 {
		t.Errorf("Probe made %d requests", srv.Requests())
	}
	if strings.Contains(c.String()+embedding.Describe(s), secretKey) {
		t.Error("the description shows the key")
	}
}

// Probe keeps to its short bound even with a long configured timeout.
func TestProbeTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and never answers
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	c := client(t, embedding.Options{API: embedding.Ollama, URL: (&url.URL{Scheme: "http", Host: ln.Addr().String()}).String(), Model: "m", Timeout: 30 * time.Second})
	start := time.Now()
	_, _, err = c.Probe(t.Context())
	if !errors.Is(err, embedding.ErrTimeout) {
		t.Errorf("Probe of a silent endpoint: %v", err)
	}
	if d := time.Since(start); d > embedding.ProbeTimeout+time.Second {
		t.Errorf("Probe took %s", d)
	}
}
