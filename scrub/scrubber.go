package scrub

import (
	"fmt"
	"runtime"
	"strings"
)

// Options configures a Scrubber. The zero value (or a nil *Options) means gitleaks'
// default rules plus contextd's own, and as many workers as GOMAXPROCS.
type Options struct {
	// ExtraConfig is a gitleaks config (TOML, gitleaks' own format: [[rules]],
	// [allowlist]/[[allowlists]], [extend]) whose rules and allowlists are added to the
	// default rule set. Empty: defaults only.
	//
	// A rule with the id of a default rule is merged into it as gitleaks' [extend] does
	// (the user's regex, entropy, secretGroup and description win; keywords, tags and
	// allowlists are appended). [extend] disabledRules removes default rules; [extend]
	// path layers another config file in between; [extend] useDefault is implied.
	// Rules with a path condition never fire: Find scans text, not files.
	ExtraConfig string
	// Workers bounds the goroutines Find uses on large inputs; 0 = GOMAXPROCS.
	Workers int
}

// Scrubber finds secrets. It is safe for concurrent use.
type Scrubber struct {
	rules      []*rule // rules Find runs, in config order
	global     []*allowlist
	kw         *matcher
	maxKw      int
	targets    [][]int32        // keyword id -> rule indexes, or ownEnv/ownURL
	unanchored []int32          // rules without keywords: gitleaks runs them on everything
	index      map[string]int32 // rule id -> index in rules
	hasReq     bool             // some rule has [[rules.required]] or skipReport
	workers    int
}

// Targets of a keyword besides gitleaks rules.
const (
	ownEnv int32 = -1 - iota
	ownURL
)

// New builds a Scrubber. It parses gitleaks' default rules (once per process) but compiles
// none of their regexes: each is compiled the first time one of its keywords is seen.
// An ExtraConfig that does not parse, has an invalid regex, an unknown rule reference or
// any other error gitleaks would reject is reported here.
func New(o *Options) (*Scrubber, error) {
	if o == nil {
		o = &Options{}
	}
	rs, err := loadRuleSet(o.ExtraConfig)
	if err != nil {
		return nil, fmt.Errorf("scrub: %w", err)
	}
	s := &Scrubber{global: rs.allowlists, workers: o.Workers, index: map[string]int32{}}
	if s.workers <= 0 {
		s.workers = runtime.GOMAXPROCS(0)
	}
	var words []string
	index := map[string]int{}
	addWord := func(w string, t int32) {
		id, ok := index[w]
		if !ok {
			id = len(words)
			index[w] = id
			words = append(words, w)
			s.targets = append(s.targets, nil)
		}
		for _, x := range s.targets[id] {
			if x == t {
				return
			}
		}
		s.targets[id] = append(s.targets[id], t)
	}
	for _, r := range rs.rules {
		if len(r.required) > 0 || r.skipReport {
			s.hasReq = true
		}
		if !r.active() {
			continue
		}
		ri := int32(len(s.rules))
		s.rules = append(s.rules, r)
		s.index[r.id] = ri
		if len(r.keywords) == 0 {
			// gitleaks runs a rule without keywords on everything.
			s.unanchored = append(s.unanchored, ri)
			continue
		}
		for _, k := range r.keywords {
			if k != "" {
				addWord(k, ri)
			}
		}
	}
	for _, w := range envKeywords {
		addWord(w, ownEnv)
	}
	addWord(urlKeyword, ownURL)
	s.kw = newMatcher(words)
	for _, w := range words {
		s.maxKw = max(s.maxKw, len(w))
	}
	return s, nil
}

// Rules lists the ids of the rules Find can report, gitleaks' and contextd's.
func (s *Scrubber) Rules() []string {
	var ids []string
	for _, r := range s.rules {
		if !r.skipReport {
			ids = append(ids, r.id)
		}
	}
	return append(ids, RuleEnvCredential, RuleURLCredential)
}

func isGeneric(id string) bool { return strings.Contains(strings.ToLower(id), "generic") }
