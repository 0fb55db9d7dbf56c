package toolsearch

import (
	"math"
	"strings"
)

// qterm is one term a query looks for.
type qterm struct {
	term   string
	weight float64
	units  []int  // the query's units it stands for, for coverage
	word   string // the query's own words, for why
	// noServer keeps an everyday word that is also a server's name from
	// matching that server's name ("dump everything" is no request for
	// the everything server).
	noServer bool
	// implied is an action the task implies without a word for it: it
	// only adds to tools its words already found.
	implied bool
}

const (
	// conceptWeight is what a word's shared concept counts against the
	// shared word itself; a phrase's concept counts as a word. Tools and
	// tasks from different hands rarely share the word itself ("orgs"
	// against "organizations", "chargeback" against "dispute"), so the
	// concept carries most of a word.
	conceptWeight = 0.7
	// inPhraseWeight is what the literal word counts when it stands in a
	// phrase: "file" in "file a bug" is not about files.
	inPhraseWeight = 0.5
	// actionWordWeight is what an action's literal word counts: "add"
	// and "create" name one action.
	actionWordWeight = 0.6
	// impliedWeight is the action a task without one implies.
	impliedWeight = 0.5
)

// parseQuery turns a task into its terms: each distinct word, and each
// concept its words or phrases yield; units is how many of its parts say
// what the task is.
func parseQuery(q string) (qts []qterm, units int) {
	ws := queryWords(q)
	unitOf := make([]int, len(ws))
	for i, w := range ws {
		unitOf[i] = -1
		if w.unit {
			unitOf[i] = units
			units++
		}
	}
	seen := map[string]int{}
	add := func(t string, weight float64, us []int, text string, noServer bool) {
		if i, ok := seen[t]; ok {
			qts[i].weight = max(qts[i].weight, weight)
			qts[i].units = append(qts[i].units, us...)
			qts[i].noServer = qts[i].noServer && noServer
			return
		}
		seen[t] = len(qts)
		qts = append(qts, qterm{term: t, weight: weight, units: us, word: text, noServer: noServer})
	}
	spans, inPhrase := matchConcepts(ws)
	action := make([]bool, len(ws))
	acts := false
	for _, sp := range spans {
		if vocab.action[sp.id] {
			acts = true
			if !sp.phrase {
				action[sp.from] = true
			}
		}
	}
	plural := false
	for i, w := range ws {
		if w.stop {
			continue
		}
		weight := w.weight
		if inPhrase[i] {
			weight *= inPhraseWeight
		}
		if action[i] {
			weight *= actionWordWeight
		}
		var us []int
		if unitOf[i] >= 0 {
			us = []int{unitOf[i]}
			plural = plural || w.text != w.stem && strings.HasSuffix(w.text, "s") && !strings.HasSuffix(w.text, "ss")
		}
		add(w.stem, weight, us, w.text, !w.qualified && ambiguousName(w.stem))
	}
	for _, sp := range spans {
		weight, text := conceptWeight, ""
		if sp.phrase {
			weight = 1
		}
		var us []int
		argWeight, noServer, words := 1.0, true, 0
		for j := sp.from; j < sp.to; j++ {
			w := ws[j]
			if !w.stop {
				argWeight = min(argWeight, w.weight)
				noServer = noServer && !w.qualified && ambiguousName(w.stem)
				words++
			}
			if unitOf[j] >= 0 {
				us = append(us, unitOf[j])
			}
			if text != "" {
				text += " "
			}
			text += w.text
		}
		if words == 0 {
			noServer = false
		}
		if len(us) == 0 && argWeight == 1 {
			// A phrase of stopwords alone ("what's in") is a part of the
			// task of its own.
			us = []int{units}
			units++
		}
		add(sp.id, weight*argWeight, us, text, noServer)
	}
	if !acts && units > 0 {
		// "what files are in this folder" lists; "the config file" reads.
		implied := "@read"
		if plural {
			implied = "@list"
		}
		qts = append(qts, qterm{term: implied, weight: impliedWeight, implied: true})
	}
	// A concept the task names with several words ("columns of the table
	// in our db") weighs more, as a repeated word does in BM25.
	for i := range qts {
		if n := distinct(qts[i].units); n > 1 {
			qts[i].weight *= math.Sqrt(float64(n))
		}
	}
	return qts, units
}

func distinct(us []int) int {
	seen := map[int]bool{}
	for _, u := range us {
		seen[u] = true
	}
	return len(seen)
}
