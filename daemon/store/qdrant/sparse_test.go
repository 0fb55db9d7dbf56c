package qdrant

import (
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestStem(t *testing.T) {
	// Each group lists forms of one word that must share a key, and the key.
	groups := []struct {
		key   string
		forms []string
	}{
		{"test", []string{"test", "tests", "tested", "testing"}},
		{"cach", []string{"cache", "caches", "cached", "caching"}},
		{"us", []string{"use", "uses", "used", "using"}},
		{"run", []string{"run", "runs", "running"}},
		{"stop", []string{"stop", "stops", "stopped", "stopping"}},
		{"install", []string{"install", "installs", "installed", "installing"}},
		{"query", []string{"query", "queries", "queried"}},
		{"retry", []string{"retry", "retries", "retried", "retrying"}},
		{"try", []string{"try", "tries", "tried"}},
		{"fix", []string{"fix", "fixes", "fixed", "fixing"}},
		{"process", []string{"process", "processes", "processed", "processing"}},
		{"pass", []string{"pass", "passes", "passed", "passing"}},
		{"need", []string{"need", "needs", "needed"}},
		{"exceed", []string{"exceed", "exceeds", "exceeded"}},
		{"build", []string{"build", "builds", "building", "buildings"}},
		{"respons", []string{"response", "responses"}},
		{"fail", []string{"fail", "fails", "failed", "failing"}},
		{"error", []string{"error", "errors"}},
	}
	for _, g := range groups {
		for _, f := range g.forms {
			if got := stem(f); got != g.key {
				t.Errorf("stem(%q) = %q, want %q", f, got, g.key)
			}
		}
	}

	// Words the rules must leave alone.
	for _, w := range []string{
		"go", "is", "v2", "utf8", "x86", "ipv6", // short, or holding a digit
		"status", "class", "analysis", // -us, -ss, -is are not plurals
		"string", "thing", "red", "bed", // no vowel (or too little) before -ing/-ed
		"café", // nothing to strip
	} {
		if got := stem(w); got != w {
			t.Errorf("stem(%q) = %q, want it unchanged", w, got)
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"   \t\n--//", nil},
		{"Hello", []string{"hello"}},
		{"Caching HTTP responses", []string{"cach", "http", "respons"}},
		{"go-modules/v2 and GOPATH", []string{"go", "modul", "v2", "and", "gopath"}},
		{"snake_case.dot", []string{"snak", "cas", "dot"}},
		{"ÉCOLE Straße", []string{"écol", "straß"}},
		{"tests, tests; TESTS!", []string{"test", "test", "test"}},
		{"bad\xffbytes", []string{"bad", "byt"}},
	}
	for _, tt := range tests {
		if got := Terms(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestTermIndexFNV1a(t *testing.T) {
	// Reference values of 32-bit FNV-1a.
	for s, want := range map[string]uint32{
		"":       0x811c9dc5,
		"a":      0xe40c292c,
		"foobar": 0xbf9cf968,
	} {
		if got := termIndex(s); got != want {
			t.Errorf("termIndex(%q) = %#x, want %#x", s, got, want)
		}
	}
}

// vec builds the expected vector from term → value.
func vec(m map[string]float32) SparseVector {
	byIndex := make(map[uint32]float32, len(m))
	for term, v := range m {
		byIndex[termIndex(term)] += v
	}
	return fromMap(byIndex)
}

func TestEncodeDocument(t *testing.T) {
	tests := []struct {
		name                        string
		title, description, content string
		tags                        []string
		want                        SparseVector
	}{
		{name: "empty", want: SparseVector{}},
		{name: "only separators", title: " - ", content: "...", tags: []string{"", "/"}, want: SparseVector{}},
		{
			name:  "title and description count twice",
			title: "Retry flaky", description: "flaky tests", content: "retry tests",
			want: vec(map[string]float32{"retry": 2 + 1, "flaky": 2 + 2, "test": 2 + 1}),
		},
		{
			name:    "tags count once and are split like text",
			content: "deploy", tags: []string{"ci", "go-modules"},
			want: vec(map[string]float32{"deploy": 1, "ci": 1, "go": 1, "modul": 1}),
		},
		{
			name:    "repeats within a field count 1 + ln tf",
			content: "cache cached caching caches", tags: []string{"go", "go"},
			want: vec(map[string]float32{"cach": float32(1 + math.Log(4)), "go": float32(1 + math.Log(2))}),
		},
		{
			// What the logarithm is for: a title naming the words once
			// outranks a content repeating them, whatever the IDF.
			name:  "a title beats repetition in the content",
			title: "goroutine leak", content: "goroutine leak, goroutine leak",
			want: vec(map[string]float32{
				"goroutin": float32(2 + 1 + math.Log(2)), "leak": float32(2 + 1 + math.Log(2)),
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EncodeDocument(tt.title, tt.description, tt.content, tt.tags)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			checkSparse(t, got)
			if got.Empty() != (len(tt.want.Indices) == 0) {
				t.Errorf("Empty() = %v", got.Empty())
			}
		})
	}
}

func TestTitleOutweighsRepeatedContent(t *testing.T) {
	q := EncodeQuery("goroutine leak")
	inTitle := EncodeDocument("Goroutine leak in worker pools", "When tests hang.", "Close the channel.", nil)
	inContent := EncodeDocument("Check CI logs", "When a pipeline fails.",
		"the goroutine leak detector failed: a goroutine leak in the pool", nil)
	if a, b := dot(q, inTitle), dot(q, inContent); !(a > b) {
		t.Errorf("title match scores %v, content match %v; want the title first", a, b)
	}
}

// dot is the unweighted dot product of two sparse vectors (Qdrant's score
// with every IDF equal).
func dot(a, b SparseVector) float64 {
	var sum float64
	for i, j := 0, 0; i < len(a.Indices) && j < len(b.Indices); {
		switch {
		case a.Indices[i] < b.Indices[j]:
			i++
		case a.Indices[i] > b.Indices[j]:
			j++
		default:
			sum += float64(a.Values[i]) * float64(b.Values[j])
			i++
			j++
		}
	}
	return sum
}

func TestEncodeQuery(t *testing.T) {
	tests := []struct {
		text string
		want SparseVector
	}{
		{"", SparseVector{}},
		{"?!", SparseVector{}},
		{"flaky tests", vec(map[string]float32{"flaky": 1, "test": 1})},
		// Repeats and inflections of one word give one dimension of value 1.
		{"test tests TESTING tested", vec(map[string]float32{"test": 1})},
	}
	for _, tt := range tests {
		got := EncodeQuery(tt.text)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("EncodeQuery(%q) = %+v, want %+v", tt.text, got, tt.want)
		}
		checkSparse(t, got)
	}
}

func TestEncodeDeterministic(t *testing.T) {
	title := "Use t.Cleanup for temp dirs"
	desc := "When a test creates files; not for benchmarks"
	content := "Register removal with t.Cleanup so that failing tests clean up too. " +
		"Prefer t.TempDir, which cleans up by itself."
	tags := []string{"go", "testing"}
	first := EncodeDocument(title, desc, content, tags)
	for range 50 { // map iteration order differs between runs
		if got := EncodeDocument(title, desc, content, tags); !reflect.DeepEqual(got, first) {
			t.Fatalf("EncodeDocument is not deterministic: %+v, then %+v", first, got)
		}
	}
	q := EncodeQuery(content)
	for range 50 {
		if got := EncodeQuery(content); !reflect.DeepEqual(got, q) {
			t.Fatalf("EncodeQuery is not deterministic: %+v, then %+v", q, got)
		}
	}
}

// checkSparse checks what Qdrant requires of a sparse vector, and what the
// encoders promise on top: indices strictly increasing (so unique), one
// value per index, values finite and > 0.
func checkSparse(t *testing.T, v SparseVector) {
	t.Helper()
	if len(v.Indices) != len(v.Values) {
		t.Fatalf("%d indices, %d values", len(v.Indices), len(v.Values))
	}
	if !slices.IsSorted(v.Indices) {
		t.Fatalf("indices not sorted: %v", v.Indices)
	}
	for i := 1; i < len(v.Indices); i++ {
		if v.Indices[i] == v.Indices[i-1] {
			t.Fatalf("index %d repeated", v.Indices[i])
		}
	}
	for _, x := range v.Values {
		if !(x > 0) || math.IsInf(float64(x), 0) {
			t.Fatalf("value %v not finite and positive", x)
		}
	}
}

func FuzzEncode(f *testing.F) {
	f.Add("Retry flaky tests", "when CI fails", "re-run with -count=1", "ci", "caching queries")
	f.Add("", "", "", "", "")
	f.Add("\xff\xfe", "ÉCOLE", "日本語のテキスト", "tag-1", "Straße 42")
	f.Add("ies", "sses", "eding", "ss", "iing")
	f.Fuzz(func(t *testing.T, title, desc, content, tag, query string) {
		d := EncodeDocument(title, desc, content, []string{tag})
		checkSparse(t, d)
		if !reflect.DeepEqual(d, EncodeDocument(title, desc, content, []string{tag})) {
			t.Fatal("EncodeDocument not deterministic")
		}
		q := EncodeQuery(query)
		checkSparse(t, q)
		for _, x := range q.Values {
			if x != 1 {
				t.Fatalf("query value %v, want 1", x)
			}
		}
		if (len(Terms(query)) == 0) != q.Empty() {
			t.Fatalf("Terms(%q) = %q but Empty() = %v", query, Terms(query), q.Empty())
		}
		for _, term := range Terms(title + " " + query) {
			if term == "" {
				t.Fatal("empty term")
			}
		}
	})
}
