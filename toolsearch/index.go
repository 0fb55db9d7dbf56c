package toolsearch

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// The fields of a tool, in the order of fieldWeight and fieldB.
const (
	fName = iota
	fTitle
	fLead
	fRest
	fParam
	fParamDesc
	fServer
	nFields
)

var fieldName = [nFields]string{"name", "title", "desc", "desc", "param", "param", "server"}

// fieldWeight says how much a word counts by where it stands: a tool's name
// says what it does, its description's first sentence says it again in
// prose, parameter descriptions mostly talk about other things.
var fieldWeight = [nFields]float64{3.0, 2.0, 1.5, 0.8, 0.8, 0.4, 1.5}

// fieldB is BM25's length normalisation per field: none for the server, a
// little for the short name and parameter fields, the usual for prose.
var fieldB = [nFields]float64{0.3, 0.5, 0.75, 0.75, 0.3, 0.75, 0}

const (
	k1 = 1.2
	// conceptWeight is what a shared concept counts against a shared word.
	conceptWeight = 0.5
	// serverIntent multiplies the tools of a server the query names.
	serverIntent = 1.5
	exactScore   = 1000
	prefixScore  = 500
)

type posting struct {
	doc int32
	tf  [nFields]float32
}

// Index answers Search over a set of tools. Build it with Build; it is not
// safe for concurrent use with ReplaceServer.
type Index struct {
	docs     []Doc
	fields   [][nFields][]string // stemmed tokens per field, for why
	lens     [][nFields]float32
	avg      [nFields]float64
	postings map[string][]posting
	names    []string // normName of each tool's name
	ids      []string // normName of each tool's ID
	servers  map[string]bool
}

// Build indexes docs.
func Build(docs []Doc) *Index {
	ix := &Index{}
	ix.build(docs)
	return ix
}

// ReplaceServer swaps one server's tools (after its list_changed) and
// rebuilds the postings, which takes milliseconds at a thousand tools.
func (ix *Index) ReplaceServer(server string, docs []Doc) {
	keep := make([]Doc, 0, len(ix.docs)+len(docs))
	for _, d := range ix.docs {
		if d.Server != server {
			keep = append(keep, d)
		}
	}
	ix.build(append(keep, docs...))
}

// Docs returns the indexed tools.
func (ix *Index) Docs() []Doc { return ix.docs }

func (ix *Index) build(docs []Doc) {
	ix.docs = docs
	ix.fields = make([][nFields][]string, len(docs))
	ix.lens = make([][nFields]float32, len(docs))
	ix.postings = map[string][]posting{}
	ix.names = make([]string, len(docs))
	ix.ids = make([]string, len(docs))
	ix.servers = map[string]bool{}
	var sum [nFields]float64
	for i, d := range docs {
		ix.servers[d.Server] = true
		ix.names[i], ix.ids[i] = normName(d.Name), normName(d.ID())
		ix.fields[i] = fieldsOf(d)
		tfs := map[string]*posting{}
		for f, toks := range ix.fields[i] {
			ix.lens[i][f] = float32(len(toks))
			sum[f] += float64(len(toks))
			for _, t := range terms(toks) {
				p := tfs[t]
				if p == nil {
					p = &posting{doc: int32(i)}
					tfs[t] = p
				}
				p.tf[f]++
			}
		}
		for t, p := range tfs {
			ix.postings[t] = append(ix.postings[t], *p)
		}
	}
	for f := range sum {
		if len(docs) > 0 {
			ix.avg[f] = max(sum[f]/float64(len(docs)), 1)
		}
	}
}

// fieldsOf splits a tool into its fields' tokens. A server-name prefix
// (slack_post_message) leaves the name: the server field carries it.
func fieldsOf(d Doc) [nFields][]string {
	var fs [nFields][]string
	name := Tokens(d.Name)
	srv := Tokens(d.Server)
	if len(name) > len(srv) && strings.Join(name[:len(srv)], " ") == strings.Join(srv, " ") {
		name = name[len(srv):]
	}
	fs[fName] = name
	fs[fTitle] = Tokens(d.Title)
	lead, rest := firstSentence(d.Description)
	fs[fLead] = Tokens(lead)
	fs[fRest] = Tokens(rest)
	for _, p := range d.Params {
		fs[fParam] = append(fs[fParam], Tokens(p.Name)...)
		fs[fParamDesc] = append(fs[fParamDesc], Tokens(p.Description)...)
	}
	fs[fServer] = srv
	return fs
}

// firstSentence splits at the first ". " or newline.
func firstSentence(s string) (string, string) {
	for i, r := range s {
		if r == '\n' || (r == '.' && i+1 < len(s) && unicode.IsSpace(rune(s[i+1]))) {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// terms is a field's tokens plus the concept ids they yield.
func terms(toks []string) []string {
	out := append([]string(nil), toks...)
	for _, sp := range conceptsOf(toks) {
		out = append(out, sp.id)
	}
	return out
}

// qterm is one term a query looks for; unit is the query word it stands for.
type qterm struct {
	term   string
	weight float64
	units  []int
	word   string // the query's own words, for why
}

// parseQuery turns a query into its terms: each distinct token, and each
// concept its words or phrases yield at conceptWeight.
func parseQuery(q string) (qts []qterm, units int) {
	toks := Tokens(q)
	words := displayWords(q)
	seen := map[string]int{}
	add := func(t string, w float64, from, to int) {
		var us []int
		for u := from; u < to; u++ {
			us = append(us, u)
		}
		if i, ok := seen[t]; ok {
			qts[i].units = append(qts[i].units, us...)
			return
		}
		seen[t] = len(qts)
		word := strings.Join(toks[from:to], " ")
		if len(words) == len(toks) {
			word = strings.Join(words[from:to], " ")
		}
		qts = append(qts, qterm{term: t, weight: w, units: us, word: word})
	}
	for i, t := range toks {
		add(t, 1, i, i+1)
	}
	for _, sp := range conceptsOf(toks) {
		// A phrase ("file bug", "pull request") says more than any of its
		// words: it counts as a word.
		w := conceptWeight
		if sp.to-sp.from > 1 {
			w = 1
		}
		add(sp.id, w, sp.from, sp.to)
	}
	return qts, len(toks)
}

// displayWords are the query's words as typed, aligned with Tokens.
func displayWords(q string) []string {
	var out []string
	for _, w := range Words(q) {
		if !stopwords[w] {
			out = append(out, w)
		}
	}
	return out
}

// Search returns the k best tools for q, best first: an exact name, then
// name prefixes, then the field-weighted lexical ranking.
func (ix *Index) Search(q string, k int) []Hit {
	qts, units := parseQuery(q)
	n := float64(len(ix.docs))
	score := make([]float64, len(ix.docs))
	matched := make([][]bool, len(ix.docs))
	for _, qt := range qts {
		ps := ix.postings[qt.term]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			score[p.doc] += qt.weight * idf * ix.saturate(p)
			if matched[p.doc] == nil {
				matched[p.doc] = make([]bool, units)
			}
			for _, u := range qt.units {
				matched[p.doc][u] = true
			}
		}
	}
	intent := ix.serverIntent(qts)
	nq := normName(q)
	prefix := nq != "" && len(nq) >= 3 && !strings.ContainsFunc(strings.TrimSpace(q), unicode.IsSpace)
	var hits []Hit
	for i, s := range score {
		d := ix.docs[i]
		var tier []string
		switch {
		case nq != "" && (ix.names[i] == nq || ix.ids[i] == nq):
			s, tier = exactScore+s, []string{"name:exact"}
		case prefix && (strings.HasPrefix(ix.names[i], nq) || strings.HasPrefix(ix.ids[i], nq)):
			s, tier = prefixScore+1/float64(1+len(ix.names[i]))+s, []string{"name:prefix"}
		}
		if s <= 0 {
			continue
		}
		if units > 0 && matched[i] != nil {
			c := 0
			for _, m := range matched[i] {
				if m {
					c++
				}
			}
			s *= 0.6 + 0.4*float64(c)/float64(units)
		}
		if intent[d.Server] {
			s *= serverIntent
		}
		hits = append(hits, Hit{ID: d.ID(), Score: s, Why: tier})
	}
	hits = top(hits, k)
	pos := map[string]int{}
	for i, d := range ix.docs {
		pos[d.ID()] = i
	}
	for h := range hits {
		hits[h].Why = append(hits[h].Why, ix.why(pos[hits[h].ID], qts)...)
		if len(hits[h].Why) > 3 {
			hits[h].Why = hits[h].Why[:3]
		}
	}
	return hits
}

// saturate is BM25F's term frequency: each field's count weighted and
// length-normalised, summed, then saturated once.
func (ix *Index) saturate(p posting) float64 {
	tf := 0.0
	for f, c := range p.tf {
		if c == 0 {
			continue
		}
		norm := 1 - fieldB[f] + fieldB[f]*float64(ix.lens[p.doc][f])/ix.avg[f]
		tf += fieldWeight[f] * float64(c) / norm
	}
	return tf / (k1 + tf)
}

// serverIntent is the servers a query names, by name or alias.
func (ix *Index) serverIntent(qts []qterm) map[string]bool {
	out := map[string]bool{}
	for _, qt := range qts {
		name := strings.TrimPrefix(qt.term, "@")
		if ix.servers[name] {
			out[name] = true
		}
	}
	return out
}

// why names, for each query term that matched the tool, the field where it
// counted most, best first: "name:scale(≈bump)" when a concept carried it.
func (ix *Index) why(i int, qts []qterm) []string {
	type reason struct {
		w    float64
		text string
	}
	var rs []reason
	for _, qt := range qts {
		best, bf := 0.0, -1
		for _, p := range ix.postings[qt.term] {
			if int(p.doc) != i {
				continue
			}
			for f, c := range p.tf {
				if v := float64(c) * fieldWeight[f] * qt.weight; v > best {
					best, bf = v, f
				}
			}
		}
		if bf < 0 {
			continue
		}
		text := fieldName[bf] + ":" + qt.word
		if strings.HasPrefix(qt.term, "@") {
			text = fieldName[bf] + ":" + carrier(ix.fields[i][bf], qt.term) + "(≈" + qt.word + ")"
		}
		rs = append(rs, reason{best, text})
	}
	sort.SliceStable(rs, func(a, b int) bool { return rs[a].w > rs[b].w })
	var out []string
	seen := map[string]bool{}
	for _, r := range rs {
		if !seen[r.text] {
			seen[r.text] = true
			out = append(out, r.text)
		}
	}
	return out
}

// carrier is the word or phrase of a field that yields concept id.
func carrier(toks []string, id string) string {
	for _, sp := range conceptsOf(toks) {
		if sp.id == id {
			return strings.Join(toks[sp.from:sp.to], " ")
		}
	}
	return strings.TrimPrefix(id, "@")
}
