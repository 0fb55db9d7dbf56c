package sqlite

import (
	"database/sql"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestMatchQuery(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"  \t ", ""},
		{`"*()-:^+`, ""},
		{"failing tests", `"failing" OR "tests"`},
		{"Failing TESTS failing", `"failing" OR "tests"`},
		{`title:docker NEAR(a b) -x "y`, `"title" OR "docker" OR "near" OR "b" OR "x" OR "y"`},
		{"how do I fix the build", `"fix" OR "build"`},
		{"how to do it", `"how" OR "to" OR "do" OR "it"`}, // only stopwords: keep them
		{"don't", `"don" OR "t"`},
		{"go1.22 x86_64", `"go1" OR "22" OR "x86" OR "64"`},
		{"naïve café 日本語", `"naïve" OR "café" OR "日本語"`},
		{"doc\x00ker", `"doc" OR "ker"`},
		{"\xff\xfeab", `"ab"`},
		{"AND OR NOT", `"not"`}, // "and", "or" are stopwords; NOT quoted is a word
	} {
		if got := matchQuery(tc.in); got != tc.want {
			t.Errorf("matchQuery(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	// Bounds: at most maxTerms terms of at most maxTermRunes runes.
	long := matchQuery(strings.Repeat("é", 1000))
	if n := utf8.RuneCountInString(long); n > maxTerms*(maxTermRunes+6) {
		t.Errorf("a 1000-rune word gave a %d-rune expression", n)
	}
	var words []string
	for i := range 100 {
		words = append(words, strings.Repeat(string(rune('a'+i%26)), 1+i/26))
	}
	if n := strings.Count(matchQuery(strings.Join(words, " ")), " OR "); n != maxTerms-1 {
		t.Errorf("100 words gave %d terms, want %d", n+1, maxTerms)
	}
}

// ftsOnce is an in-memory FTS5 table configured as the store's, shared by
// the fuzz iterations of one process.
var ftsOnce = sync.OnceValues(func() (*sql.DB, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one connection: each :memory: connection is its own database
	_, err = db.Exec(`CREATE VIRTUAL TABLE f USING fts5 (title, description, content, tags,
		tokenize = 'porter unicode61 remove_diacritics 2');
		INSERT INTO f VALUES ('Docker build cache', 'when images rebuild', 'near the end: failing tests', '["docker"]'),
		('naïve café', '日本語', 'x86_64 go1.22', '[]')`)
	return db, err
})

// FuzzMatchQuery: for any text, matchQuery and the staged search's
// expressions (stageExprs) do not panic and are accepted by FTS5, with the
// bm25 weights the store uses.
func FuzzMatchQuery(f *testing.F) {
	for _, s := range []string{
		"", `"`, `""`, `"docker`, "docker*", "^x", "-x", "+x", "a:b", "{a b}: c", "NEAR(a b, 2)", "a NEAR/3 b",
		"AND", "OR", "NOT", "a AND OR b", "(", ")", "((a)", "'; DROP TABLE f; --", "\x00", "a\x00b", "\xff",
		"naïve café", "日本語のテスト", "🐳 docker", "e\u0301", "\u0301", "İı", "ǅ", "\u200b", "ﬁ",
		strings.Repeat("a ", 5000), strings.Repeat(`"(*`, 3000), strings.Repeat("é", 300),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		terms := queryTerms(text)
		if len(terms) == 0 {
			if matchQuery(text) != "" {
				t.Fatalf("matchQuery(%q) is not empty without terms", text)
			}
			return
		}
		db, err := ftsOnce()
		if err != nil {
			t.Fatal(err)
		}
		// The plain OR expression and those of the staged search, with
		// the terms split every way a prefix can be common.
		exprs := []string{matchQuery(text)}
		for i := 0; i <= len(terms); i++ {
			for _, stage := range stageExprs(terms, terms[i:], terms[:i]) {
				exprs = append(exprs, stage...)
			}
		}
		for _, expr := range exprs {
			rows, err := db.Query(`SELECT rowid, bm25(f, `+bm25Weights+`) FROM f WHERE f MATCH ? ORDER BY 2`, expr)
			if err != nil {
				t.Fatalf("text %q: expression %q rejected: %v", text, expr, err)
			}
			for rows.Next() {
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("text %q: expression %q failed: %v", text, expr, err)
			}
			rows.Close()
		}
	})
}
