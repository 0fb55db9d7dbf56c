package toolsearch

import (
	"sort"
	"strings"
)

// Abbreviations: agents shorten the words tool authors spell out (org for
// organization, env for environment, config for configuration) and the
// other way round. A query word that begins a tool's word, or a tool's
// word that begins a query word, counts at a fraction of a match.

// prefixWeight is what a prefix match counts against the word itself.
const prefixWeight = 0.5

// minPrefix is the shortest word that stands for a longer one.
const minPrefix = 3

// sortedTerms returns the sorted plain terms of the index, for prefix lookups.
func sortedTerms(postings map[string][]posting) []string {
	out := make([]string, 0, len(postings))
	for t := range postings {
		if !strings.HasPrefix(t, "@") {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// expansions are the index's terms a query term may abbreviate or be an
// abbreviation of. A word of the concept table has a meaning of its own
// there ("tab" is no "table", "add" no "address"), so it neither expands
// nor is an expansion.
func (ix *Index) expansions(t string) []string {
	if len(t) < minPrefix || strings.HasPrefix(t, "@") || allDigits(t) || len(vocab.byToken[t]) > 0 {
		return nil
	}
	var out []string
	for i := sort.SearchStrings(ix.terms, t); i < len(ix.terms) && strings.HasPrefix(ix.terms[i], t); i++ {
		if x := ix.terms[i]; x != t && len(vocab.byToken[x]) == 0 && !allDigits(x) {
			out = append(out, x)
		}
	}
	for n := len(t) - 1; n >= minPrefix; n-- {
		if p := t[:n]; len(ix.postings[p]) > 0 && len(vocab.byToken[p]) == 0 {
			out = append(out, p)
			break
		}
	}
	return out
}
