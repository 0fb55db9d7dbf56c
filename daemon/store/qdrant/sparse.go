package qdrant

// Lexical search without a model: memories are turned into sparse vectors on
// the client, one dimension per (normalised) term, and Qdrant scores them
// with a dot product on a sparse vector configured with the IDF modifier, so
// that rare terms weigh more than common ones (BM25-like, without length
// normalisation). Nothing here talks to a server.
//
// The pipeline, which documents and queries share:
//
//  1. Lower-case the text (Unicode-aware).
//  2. Split it into terms at every rune that is neither a letter nor a digit
//     ("go-modules/v2" gives "go", "modules", "v2").
//  3. Normalise each term with stem, a deliberately small English suffix
//     stripper (see its comment). It is not Porter's algorithm: it only has
//     to map the common inflections of one word onto one key, and it does
//     the same thing to documents and queries, so that a mistake costs
//     recall on one word, never correctness.
//  4. Hash each term to a dimension with 32-bit FNV-1a. Two terms sharing a
//     hash are treated as one word; with the few thousand distinct terms of a
//     user's memories a collision is rare and at worst adds a little noise.
//
// Document values are term frequencies, scaled sublinearly and weighted by
// field: for each field, a term occurring tf times adds w·(1 + ln tf), with
// w = 2 for the title and the description (they say what the memory is
// about and when it applies) and 1 for the content and the tags. Qdrant's
// IDF modifier has no length normalisation or saturation, so with raw counts
// a long content repeating a word twice would tie with, or outrank, a title
// naming it once; the logarithm keeps repetition worth something without
// letting it beat a better field. Query values are 1 per distinct term, so a
// query that repeats a word does not weigh it more.

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// SparseVector is a sparse vector as Qdrant takes it: Indices strictly
// increasing (hence unique), Values of the same length, all > 0.
type SparseVector struct {
	Indices []uint32
	Values  []float32
}

// Empty reports whether v has no dimension (text with no term).
func (v SparseVector) Empty() bool { return len(v.Indices) == 0 }

// Field weights of EncodeDocument.
const (
	weightTitle       = 2
	weightDescription = 2
	weightContent     = 1
	weightTag         = 1
)

// EncodeDocument is the sparse vector stored with a memory, from its title,
// description, content and tags (the tags count as one field).
func EncodeDocument(title, description, content string, tags []string) SparseVector {
	out := make(map[uint32]float32)
	field := func(w float64, texts ...string) {
		tf := make(map[uint32]int)
		for _, text := range texts {
			forEachTerm(text, func(term string) { tf[termIndex(term)]++ })
		}
		for i, n := range tf {
			out[i] += float32(w * (1 + math.Log(float64(n))))
		}
	}
	field(weightTitle, title)
	field(weightDescription, description)
	field(weightContent, content)
	field(weightTag, tags...)
	return fromMap(out)
}

// EncodeQuery is the sparse vector of a search text: each distinct term once,
// with the value 1.
func EncodeQuery(text string) SparseVector {
	seen := make(map[uint32]float32)
	forEachTerm(text, func(term string) { seen[termIndex(term)] = 1 })
	return fromMap(seen)
}

// Terms returns the normalised terms of text in order, repeats included: what
// the encoders hash. It is exported for tests and diagnostics.
func Terms(text string) []string {
	var out []string
	forEachTerm(text, func(term string) { out = append(out, term) })
	return out
}

func fromMap(m map[uint32]float32) SparseVector {
	if len(m) == 0 {
		return SparseVector{}
	}
	v := SparseVector{Indices: make([]uint32, 0, len(m)), Values: make([]float32, 0, len(m))}
	for i := range m {
		v.Indices = append(v.Indices, i)
	}
	slices.Sort(v.Indices)
	for _, i := range v.Indices {
		v.Values = append(v.Values, m[i])
	}
	return v
}

// forEachTerm calls fn with each normalised term of text. Invalid UTF-8
// decodes to U+FFFD, which is neither a letter nor a digit, so it separates
// terms and never reaches fn.
func forEachTerm(text string, fn func(string)) {
	isSep := func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
	for _, word := range strings.FieldsFunc(text, isSep) {
		fn(stem(strings.ToLower(word)))
	}
}

// termIndex is the 32-bit FNV-1a hash of term: its sparse dimension.
func termIndex(term string) uint32 {
	const (
		offset32 = 2166136261
		prime32  = 16777619
	)
	h := uint32(offset32)
	for i := 0; i < len(term); i++ {
		h ^= uint32(term[i])
		h *= prime32
	}
	return h
}

// stem strips the commonest English inflections from a lower-case word. It
// applies these rules once, in order:
//
//   - Words of one or two bytes, and words holding a digit ("v2", "utf8",
//     "x86"), are left alone: they are mostly acronyms, versions and
//     identifiers, which suffix stripping would only damage.
//   - Plural -s: "ies" becomes "y" ("queries" → "query"), "sses" becomes
//     "ss" ("classes" → "class"), a final "s" is dropped unless the word ends
//     in "ss", "us" or "is" ("tests" → "test"; "class", "status", "analysis"
//     stay).
//   - Verb endings: "ing", else "ed", is dropped when what is left has at
//     least two bytes and a vowel ("tested" → "test"; "string", "thing",
//     "red" stay). Words in "eed" keep it, since it mostly belongs to the
//     base ("need", "needs" and "needed" all give "need"). What is left is
//     then tidied: a doubled final consonant is undoubled ("running" →
//     "run", "stopped" → "stop"), except "ll", "ss" and "zz" ("installed" →
//     "install"), and a final "i" becomes "y" ("queried" → "query", "tried"
//     → "try").
//   - A final silent "e" is dropped when at least two bytes remain, so that
//     the base form meets the stripped forms ("cache", "caches", "cached",
//     "caching" all give "cach"; "use", "uses", "used" give "us").
//
// The rules run once, not to a fixed point: stripping again would eat into
// the stem ("responses" → "respons" → "respon"). The result is a key, not a
// word.
func stem(w string) string {
	if len(w) <= 2 || strings.ContainsFunc(w, unicode.IsDigit) {
		return w
	}
	// Plurals.
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	// Verb endings.
	for _, suf := range []string{"ing", "ed"} {
		if !strings.HasSuffix(w, suf) || strings.HasSuffix(w, "eed") {
			continue
		}
		rest := w[:len(w)-len(suf)]
		if len(rest) < 2 || !hasVowel(rest) {
			continue
		}
		w = undouble(rest)
		if strings.HasSuffix(w, "i") {
			w = w[:len(w)-1] + "y"
		}
		break
	}
	// Silent e.
	if strings.HasSuffix(w, "e") && len(w) > 2 {
		w = w[:len(w)-1]
	}
	return w
}

func hasVowel(s string) bool { return strings.ContainsAny(s, "aeiouy") }

// undouble turns a final doubled ASCII consonant into a single one, except
// l, s and z, which English doubles in base forms ("install", "pass", "buzz").
func undouble(s string) string {
	n := len(s)
	if n < 3 || s[n-1] != s[n-2] {
		return s
	}
	c := s[n-1]
	if c < 'a' || c > 'z' || strings.IndexByte("aeiouylsz", c) >= 0 {
		return s
	}
	return s[:n-1]
}
