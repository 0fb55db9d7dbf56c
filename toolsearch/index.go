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
	// coverageBase is what a tool that matches one part of a task in many
	// keeps of its score: the rest grows with the share of parts matched.
	coverageBase = 0.6
	// serverIntent multiplies the tools of a server the query names: the
	// agent has chosen the server, and a tool of another that mentions
	// the name ("a Postgres database") should not outrank its tools.
	serverIntent = 2.0
	exactScore   = 1000
	prefixScore  = 500
)

type posting struct {
	doc int32
	tf  [nFields]float32
}

// Index answers Search over a set of tools. Build it with Build. It is not
// safe for concurrent use with ReplaceServer: a caller that replaces a
// server while others search holds a lock around both.
type Index struct {
	docs     []Doc
	an       []analysis
	lens     [][nFields]float32
	avg      [nFields]float64
	postings map[string][]posting
	terms    []string // the plain terms of postings, sorted
	names    []string // normName of each tool's name
	ids      []string // normName of each tool's ID
	pos      map[string]int
	servers  map[string]bool
	dense    denseCache
}

// analysis is a tool read into its fields' words and terms: the costly
// part of indexing, which ReplaceServer keeps for the other servers.
type analysis struct {
	fields [nFields][]word // for why
	tf     map[string][nFields]float32
	lens   [nFields]float32
	prefix string // the server's shared name prefix it was read with
}

// Build indexes docs.
func Build(docs []Doc) *Index {
	ix := &Index{}
	ix.build(docs, nil)
	return ix
}

// ReplaceServer swaps one server's tools (after its list_changed) and
// rebuilds the postings, which takes milliseconds at a thousand tools.
func (ix *Index) ReplaceServer(server string, docs []Doc) {
	keep := make([]Doc, 0, len(ix.docs)+len(docs))
	var an []analysis
	for i, d := range ix.docs {
		if d.Server != server {
			keep = append(keep, d)
			an = append(an, ix.an[i])
		}
	}
	ix.build(append(keep, docs...), an)
}

// Docs returns the indexed tools.
func (ix *Index) Docs() []Doc { return ix.docs }

// build indexes docs; the first len(an) of them were read before.
func (ix *Index) build(docs []Doc, an []analysis) {
	ix.docs = docs
	ix.an = make([]analysis, len(docs))
	ix.lens = make([][nFields]float32, len(docs))
	ix.postings = map[string][]posting{}
	ix.names = make([]string, len(docs))
	ix.ids = make([]string, len(docs))
	ix.pos = make(map[string]int, len(docs))
	ix.servers = map[string]bool{}
	prefixes := sharedPrefixes(docs)
	var sum [nFields]float64
	for i, d := range docs {
		ix.servers[d.Server] = true
		ix.pos[d.ID()] = i
		ix.names[i], ix.ids[i] = normName(d.Name), normName(d.ID())
		if i < len(an) && an[i].prefix == prefixes[d.Server] {
			ix.an[i] = an[i]
		} else {
			ix.an[i] = analyze(d, prefixes[d.Server])
		}
		ix.lens[i] = ix.an[i].lens
		for f, l := range ix.lens[i] {
			sum[f] += float64(l)
		}
		for t, tf := range ix.an[i].tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: tf})
		}
	}
	ix.terms = sortedTerms(ix.postings)
	for f := range sum {
		if len(docs) > 0 {
			ix.avg[f] = max(sum[f]/float64(len(docs)), 1)
		}
	}
}

func analyze(d Doc, prefix string) analysis {
	a := analysis{fields: fieldsOf(d, prefix), prefix: prefix, tf: map[string][nFields]float32{}}
	for f, ws := range a.fields {
		a.lens[f] = float32(len(nonStop(ws)))
		for _, t := range terms(ws) {
			c := a.tf[t]
			c[f]++
			a.tf[t] = c
		}
	}
	return a
}

// sharedPrefixes finds, per server, a first name word most of its tools
// share (browser_click, browser_type, …): it says which server, not what
// the tool does, so it moves from the name to the server field.
func sharedPrefixes(docs []Doc) map[string]string {
	count := map[string]map[string]int{}
	total := map[string]int{}
	for _, d := range docs {
		ws := nonStop(textWords(d.Name))
		if len(ws) < 2 {
			continue
		}
		if count[d.Server] == nil {
			count[d.Server] = map[string]int{}
		}
		count[d.Server][ws[0]]++
		total[d.Server]++
	}
	out := map[string]string{}
	for srv, c := range count {
		for w, n := range c {
			if n >= 3 && 10*n >= 6*total[srv] {
				out[srv] = w
			}
		}
	}
	return out
}

// fieldsOf splits a tool into its fields' words. A server-name prefix
// (slack_post_message) or the server's shared prefix leaves the name: the
// server field carries it.
func fieldsOf(d Doc, prefix string) [nFields][]word {
	var fs [nFields][]word
	name := textWords(d.Name)
	srv := textWords(d.Server)
	name = trimPrefix(name, nonStop(srv))
	if prefix != "" {
		if trimmed := trimPrefix(name, []string{prefix}); len(trimmed) < len(name) {
			name = trimmed
			srv = append(srv, word{stem: prefix, text: prefix, weight: 1, unit: true})
		}
	}
	fs[fName] = name
	fs[fTitle] = textWords(d.Title)
	lead, rest := firstSentence(d.Description)
	fs[fLead] = textWords(lead)
	fs[fRest] = textWords(rest)
	for _, p := range d.Params {
		fs[fParam] = append(fs[fParam], textWords(p.Name)...)
		fs[fParamDesc] = append(fs[fParamDesc], textWords(p.Description)...)
	}
	fs[fServer] = srv
	return fs
}

// trimPrefix drops the words of prefix from the front of name when they
// are all there and something is left.
func trimPrefix(name []word, prefix []string) []word {
	i := 0
	for _, p := range prefix {
		for i < len(name) && name[i].stop {
			i++
		}
		if i >= len(name) || name[i].stem != p {
			return name
		}
		i++
	}
	if len(prefix) == 0 || len(nonStop(name[i:])) == 0 {
		return name
	}
	return name[i:]
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

// terms is a field's words plus the concept ids they yield.
func terms(ws []word) []string {
	out := nonStop(ws)
	spans, _ := matchConcepts(ws)
	for _, sp := range spans {
		out = append(out, sp.id)
	}
	return out
}

// Search returns the k best tools for q, best first: an exact name, then
// name prefixes, then the field-weighted lexical ranking.
func (ix *Index) Search(q string, k int) []Hit {
	qts, units := parseQuery(q)
	return ix.finish(ix.rank(q, qts, units), qts, k)
}

// rank scores every tool for the query's terms; a tool that matches
// nothing and no name tier is left out.
func (ix *Index) rank(q string, qts []qterm, units int) []Hit {
	n := float64(len(ix.docs))
	score := make([]float64, len(ix.docs))
	matched := make([][]bool, len(ix.docs))
	idf := func(ps []posting) float64 { return math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5)) }
	credit := func(doc int32, qt qterm, v float64) {
		score[doc] += v
		if matched[doc] == nil {
			matched[doc] = make([]bool, units)
		}
		for _, u := range qt.units {
			matched[doc][u] = true
		}
	}
	for _, qt := range qts {
		ps := ix.postings[qt.term]
		var lit map[int32]bool
		if len(ps) > 0 {
			w := idf(ps)
			for _, p := range ps {
				s := ix.saturate(p, qt.noServer)
				if s == 0 || (qt.implied && score[p.doc] == 0) {
					continue
				}
				credit(p.doc, qt, qt.weight*w*s)
			}
		}
		if qt.implied {
			continue
		}
		exps := ix.expansions(qt.term)
		if len(exps) == 0 {
			continue
		}
		lit = make(map[int32]bool, len(ps))
		for _, p := range ps {
			lit[p.doc] = true
		}
		best := map[int32]float64{}
		for _, x := range exps {
			xs := ix.postings[x]
			w := idf(xs)
			for _, p := range xs {
				if !lit[p.doc] {
					best[p.doc] = max(best[p.doc], w*ix.saturate(p, qt.noServer))
				}
			}
		}
		for d, v := range best {
			if v > 0 {
				credit(d, qt, qt.weight*prefixWeight*v)
			}
		}
	}
	intent := ix.serverIntent(qts)
	nq := normName(q)
	prefix := len(nq) >= 3 && !strings.ContainsFunc(strings.TrimSpace(q), unicode.IsSpace)
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
			s *= coverageBase + (1-coverageBase)*float64(c)/float64(units)
		}
		if intent[d.Server] {
			s *= serverIntent
		}
		hits = append(hits, Hit{ID: d.ID(), Score: s, Why: tier})
	}
	return hits
}

// finish keeps the k best hits and says why each matched.
func (ix *Index) finish(hits []Hit, qts []qterm, k int) []Hit {
	hits = top(hits, k)
	for h := range hits {
		hits[h].Why = append(hits[h].Why, ix.why(ix.pos[hits[h].ID], qts)...)
		if len(hits[h].Why) > 3 {
			hits[h].Why = hits[h].Why[:3]
		}
	}
	return hits
}

// saturate is BM25F's term frequency: each field's count weighted and
// length-normalised, summed, then saturated once.
func (ix *Index) saturate(p posting, noServer bool) float64 {
	tf := 0.0
	for f, c := range p.tf {
		if c == 0 || (noServer && f == fServer) {
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
		if ix.servers[name] && !qt.noServer {
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
		if qt.implied {
			continue
		}
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
			text = fieldName[bf] + ":" + carrier(ix.an[i].fields[bf], qt.term) + "(≈" + qt.word + ")"
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
func carrier(ws []word, id string) string {
	spans, _ := matchConcepts(ws)
	for _, sp := range spans {
		if sp.id == id {
			parts := make([]string, 0, sp.to-sp.from)
			for _, w := range ws[sp.from:sp.to] {
				parts = append(parts, w.text)
			}
			return strings.Join(parts, " ")
		}
	}
	return strings.TrimPrefix(id, "@")
}
