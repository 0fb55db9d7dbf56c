package sqlite

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxTerms bounds the OR expression: a query is a task description,
	// not a document, and every term costs a posting-list scan.
	maxTerms = 32
	// maxTermRunes cuts absurd "words" (a pasted hash or a line of base64);
	// the tokenizer would index nothing that long anyway.
	maxTermRunes = 64
)

// stopwords are English function words that match nearly every memory: they
// add nothing to the ranking (bm25 gives them almost no weight) but cost a
// scan of huge posting lists. They are dropped unless the query has nothing
// else.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does doing
		for from had has have how i if in into is it its me my of on or our so than that the
		their them then there these they this those to too was we were what when where which
		while who why will with would you your`) {
		stopwords[w] = true
	}
}

// matchQuery turns free text into an FTS5 MATCH expression: its terms
// (queryTerms) joined by OR, or "" when text has no words; the caller must
// then not query at all.
func matchQuery(text string) string { return orExpr(queryTerms(text)) }

// queryTerms returns the distinct words of text, lower case, each a quoted
// FTS5 string. Words are runs of letters, digits and combining marks;
// everything else separates them, so FTS5 syntax in the text (quotes, *, ^,
// :, -, +, parentheses, NEAR, AND, OR, NOT, column filters) is either dropped
// or becomes a plain quoted word, and any expression built from the terms
// parses. Stopwords are left out unless there is nothing else; at most
// maxTerms terms are kept, in the order of the text.
func queryTerms(text string) []string {
	var terms, stops []string
	seen := map[string]bool{}
	add := func(w string) {
		if seen[w] {
			return
		}
		seen[w] = true
		if stopwords[w] {
			stops = append(stops, w)
		} else {
			terms = append(terms, w)
		}
	}
	start, n := -1, 0 // byte offset of the current word, its length in runes
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) {
			if start < 0 {
				start, n = i, 0
			}
			n++
			if n == maxTermRunes { // cut here; the rest of the run is a new word
				add(strings.ToLower(text[start : i+utf8.RuneLen(r)]))
				start = -1
			}
			continue
		}
		if start >= 0 {
			add(strings.ToLower(text[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		add(strings.ToLower(text[start:]))
	}
	if len(terms) == 0 {
		terms = stops
	}
	if len(terms) > maxTerms {
		terms = terms[:maxTerms]
	}
	for i, t := range terms {
		// A word holds no '"' by construction; doubling is the FTS5 escape
		// and costs nothing should that ever change.
		terms[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return terms
}

// orExpr and andExpr join quoted terms; both return "" for none.
func orExpr(terms []string) string  { return strings.Join(terms, " OR ") }
func andExpr(terms []string) string { return strings.Join(terms, " AND ") }
