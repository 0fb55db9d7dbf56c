package state

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/daemon/store"
)

// Near-duplicate rule of memory_store.
//
// A new memory is a near-duplicate of a stored one, and updates it instead of
// being added beside it, when both are in the same scope (the same project,
// or both global), the stored one is not archived, and either
//
//   - their titles are equal once case and runs of white space are ignored, or
//   - the Jaccard similarity of their word sets is at least DuplicateThreshold.
//
// A memory's word set is the set of words of its title, description and
// content together: the text is lower-cased and split at every character that
// is not a letter or a digit, and words of one character and the common
// English words of stopWords are dropped (they make unrelated lessons look
// alike). Jaccard similarity is |A ∩ B| / |A ∪ B|: 1 for the same words, 0 for
// none in common; two empty sets are not similar.
//
// The candidates are the store's best few hits for the new title and
// description in that scope (the store ranks; this rule decides). Among them
// an equal title wins, then the highest similarity.
//
// 0.6 is where rewordings of one lesson (the same fix with a sentence added
// or reordered) land above and distinct lessons about the same subject (two
// different sqlite pitfalls) land below, on the lessons the tests use; a lower
// threshold starts merging lessons that only share a vocabulary.
const DuplicateThreshold = 0.6

// duplicateCandidates is how many search hits the rule looks at.
const duplicateCandidates = 5

// stopWords are left out of word sets.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`an and are as at be but by can do does for from
		has have if in into is it its not of on or so than that the then there these this
		those to use used using was were when where which while will with without you your
		it's don't doesn't`) {
		m[w] = true
	}
	return m
}()

// wordSet returns the normalized words of texts.
func wordSet(texts ...string) map[string]bool {
	set := map[string]bool{}
	for _, t := range texts {
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
		}) {
			w = strings.Trim(w, "'")
			if utf8.RuneCountInString(w) < 2 || stopWords[w] {
				continue
			}
			set[w] = true
		}
	}
	return set
}

// jaccard is |a ∩ b| / |a ∪ b|, 0 when both are empty.
func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	common := 0
	for w := range a {
		if b[w] {
			common++
		}
	}
	return float64(common) / float64(len(a)+len(b)-common)
}

// sameTitle compares titles ignoring case and runs of white space.
func sameTitle(a, b string) bool {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	x := norm(a)
	return x != "" && x == norm(b)
}

// similarity is the rule's measure between two memories: 1 for equal titles,
// else the Jaccard similarity of their word sets.
func similarity(a, b *store.Memory) float64 {
	if sameTitle(a.Title, b.Title) {
		return 1
	}
	return jaccard(wordSet(a.Title, a.Description, a.Content), wordSet(b.Title, b.Description, b.Content))
}

// nearDuplicate picks the stored memory m duplicates among hits, following
// the rule above, and its similarity; nil when none does.
func nearDuplicate(m *store.Memory, hits []store.Hit) (*store.Memory, float64) {
	var best *store.Memory
	bestSim := 0.0
	for i := range hits {
		h := &hits[i].Memory
		if h.Project != m.Project || h.Archived || h.ID == "" {
			continue
		}
		if s := similarity(m, h); s >= DuplicateThreshold && s > bestSim {
			best, bestSim = h, s
		}
	}
	return best, bestSim
}
