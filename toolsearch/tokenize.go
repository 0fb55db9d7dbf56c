package toolsearch

import (
	"strings"
	"unicode"
)

// stopwords carry no intent in a task or a description: dropping them keeps
// "the" from matching every tool.
var stopwords = set("a", "an", "the", "to", "of", "for", "in", "on", "at", "by", "with", "and", "or", "is", "are", "be", "it", "its",
	"my", "me", "i", "we", "our", "us", "you", "your", "this", "that", "these", "those", "please", "can", "could", "would",
	"should", "will", "just", "so", "from", "into", "as", "if", "then", "than", "some", "any", "do", "does", "did", "was",
	"were", "been", "has", "have", "had", "there", "here", "up", "out", "about", "also", "what", "when", "how")

// keep are words the suffix rules would mangle into another word.
var keep = set("pr", "prs", "status", "kubernetes", "process", "address", "alias", "canvas", "class", "access", "css", "https",
	"always", "news", "ns", "js", "ts", "yes", "this", "was", "has", "does", "bus", "gas", "series", "species", "during", "string",
	"thing", "nothing", "something", "everything", "ping", "ring", "bring", "king", "user", "never", "over", "under",
	"after", "other", "order", "server", "helm", "need", "red", "bed", "shed", "feed", "seed", "speed", "embed", "docker")

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// Words splits s into lowercase words at every non-alphanumeric, at camelCase
// humps and between letters and digits: "getPullRequest_v2" is get, pull,
// request, v, 2.
func Words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := rs[i-1]
			switch {
			case unicode.IsDigit(r) != unicode.IsDigit(prev):
				flush()
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				flush()
			case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				// The last capital of an acronym starts the next word: "HTTPServer".
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// Tokens is Words without stopwords, each stemmed.
func Tokens(s string) []string {
	ws := Words(s)
	out := ws[:0]
	for _, w := range ws {
		if stopwords[w] {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}

// Stem strips the English suffixes that separate a task's words from a
// description's (lists/listing/listed, replies/reply, update/updating) with a
// few rules: a light stemmer, because an aggressive one merges words agents
// keep apart. A final silent e is dropped so that "update" and "updated"
// meet at "updat".
func Stem(w string) string {
	if keep[w] || len(w) <= 3 {
		return w
	}
	s := w
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4, strings.HasSuffix(w, "ied") && len(w) > 4:
		s = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		s = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		s = w[:len(w)-1]
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		s = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4:
		s = undouble(w[:len(w)-2])
	}
	if len(s) > 3 && strings.HasSuffix(s, "e") && !strings.HasSuffix(s, "ee") {
		s = s[:len(s)-1]
	}
	return s
}

// undouble turns "runn" (from running) back into "run"; a doubled l, s, z
// or d stays, as in "install", "pass" and "add".
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lszdaeiou", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
