package embedding_test

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/contextd/contextd/daemon/embedding"
)

func TestParseOpenAIOrder(t *testing.T) {
	body := `{"object":"list","data":[{"object":"embedding","index":1,"embedding":[0,1]},{"object":"embedding","index":0,"embedding":[1,0]}],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}`
	vs, err := embedding.ParseOpenAI([]byte(body), 2)
	if err != nil || len(vs) != 2 || vs[0][0] != 1 || vs[1][1] != 1 {
		t.Fatalf("ParseOpenAI = %v, %v", vs, err)
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, body string
		openai     bool
		n          int
		want       string
	}{
		{"empty", ``, false, 1, "not the expected JSON"},
		{"null", `null`, false, 1, `no "embeddings"`},
		{"two values", `{"embeddings":[[1]]} {}`, false, 1, "more than one JSON value"},
		{"ragged", `{"embeddings":[[1,2],[1]]}`, false, 2, "has 1 dimensions, embedding 0 has 2"},
		{"empty vector", `{"embeddings":[[]]}`, false, 1, "is empty"},
		{"strings", `{"embeddings":[["1"]]}`, false, 1, "not the expected JSON"},
		{"base64", `{"data":[{"index":0,"embedding":"AACAPw=="}]}`, true, 1, "not the expected JSON"},
		{"no index", `{"data":[{"embedding":[1]}]}`, true, 1, `without "index"`},
		{"index twice", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, true, 2, "given twice"},
		{"index out of range", `{"data":[{"index":3,"embedding":[1]}]}`, true, 1, "out of range"},
		{"null embedding", `{"data":[{"index":0,"embedding":null}]}`, true, 1, "missing or null"},
		{"too few", `{"data":[]}`, true, 1, "0 embeddings for 1 inputs"},
	}
	for _, tt := range tests {
		parse := embedding.ParseOllama
		if tt.openai {
			parse = embedding.ParseOpenAI
		}
		_, err := parse([]byte(tt.body), tt.n)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

// checkParsed is what every successful parse guarantees.
func checkParsed(t *testing.T, vs [][]float32, err error, n int) {
	if err != nil {
		return
	}
	if len(vs) != n {
		t.Fatalf("%d vectors for %d inputs", len(vs), n)
	}
	for i, v := range vs {
		if len(v) == 0 || len(v) != len(vs[0]) {
			t.Fatalf("vector %d has %d dimensions, vector 0 %d", i, len(v), len(vs[0]))
		}
		zero := true
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("vector %d holds %v", i, x)
			}
			zero = zero && x == 0
		}
		if zero {
			t.Fatalf("vector %d is all zeros", i)
		}
	}
}

func FuzzParseOllama(f *testing.F) {
	f.Add([]byte(`{"model":"m","embeddings":[[0.1,-0.2,0.3]],"total_duration":1}`), 1)
	f.Add([]byte(`{"embeddings":[[1,2],[3,4]]}`), 2)
	f.Add([]byte(`{"embeddings":[[1e39]]}`), 1)
	f.Add([]byte(`{"error":"model not found"}`), 1)
	f.Add([]byte(`[`), 0)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		vs, err := embedding.ParseOllama(body, n)
		checkParsed(t, vs, err, n)
	})
}

func FuzzParseOpenAI(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5]}],"model":"m"}`), 1)
	f.Add([]byte(`{"data":[{"index":1,"embedding":[1]},{"index":0,"embedding":[2]}]}`), 2)
	f.Add([]byte(`{"data":[{"index":-1,"embedding":[1]}]}`), 1)
	f.Add([]byte(`{"error":{"message":"Incorrect API key"}}`), 1)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		vs, err := embedding.ParseOpenAI(body, n)
		checkParsed(t, vs, err, n)
	})
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello world, a longer text", 10)
	f.Add("héhé\xff", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n <= 0 || n > 1<<16 {
			return
		}
		got := embedding.Truncate(s, n)
		if len(got) > n || !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q", s, n, got)
		}
		if valid := strings.ToValidUTF8(s, "\uFFFD"); len(valid) <= n && got != valid {
			t.Fatalf("Truncate(%q, %d) changed a short text: %q", s, n, got)
		}
	})
}
