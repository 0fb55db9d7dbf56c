package scrub

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
)

// allowlist is a gitleaks allowlist. Commits and paths never match in Find (there are
// none), which also makes an AND allowlist that lists them never match, as in gitleaks.
type allowlist struct {
	and         bool
	hasCommits  bool
	hasPaths    bool
	regexTarget string // "", "match" or "line"
	regexes     []string
	stopwords   []string

	once sync.Once
	re   *regexSet
	stop *wordSet
	err  error
}

func newAllowlist(ta *tomlAllowlist, compileNow bool) (*allowlist, error) {
	a := &allowlist{hasCommits: len(ta.Commits) > 0, hasPaths: len(ta.Paths) > 0, regexes: ta.Regexes}
	switch strings.ToUpper(ta.Condition) {
	case "AND", "&&":
		a.and = true
	case "", "OR", "||":
	default:
		return nil, fmt.Errorf("unknown allowlist |condition| '%s' (expected 'and', 'or')", ta.Condition)
	}
	switch ta.RegexTarget {
	case "", "secret":
	case "match", "line":
		a.regexTarget = ta.RegexTarget
	default:
		return nil, fmt.Errorf("unknown allowlist |regexTarget| '%s' (expected 'match', 'line')", ta.RegexTarget)
	}
	if len(ta.Commits) == 0 && len(ta.Paths) == 0 && len(ta.Regexes) == 0 && len(ta.StopWords) == 0 {
		return nil, fmt.Errorf("must contain at least one check for: commits, paths, regexes, or stopwords")
	}
	// Lower-cased and deduplicated when first used: the default config has 1,446.
	a.stopwords = ta.StopWords
	if compileNow {
		for _, p := range ta.Paths {
			if _, err := regexp.Compile(p); err != nil {
				return nil, fmt.Errorf("invalid path regex: %w", err)
			}
		}
		for _, x := range a.regexes {
			if _, err := regexp.Compile(x); err != nil {
				return nil, fmt.Errorf("invalid regex: %w", err)
			}
		}
		a.prepare()
		if a.err != nil {
			return nil, a.err
		}
	}
	return a, nil
}

// prepare compiles the allowlist's regexes into one alternation and its stopwords into a
// keyword automaton, as gitleaks' Allowlist.Validate does.
func (a *allowlist) prepare() {
	a.once.Do(func() {
		if len(a.regexes) > 0 {
			a.re, a.err = newRegexSet(a.regexes)
		}
		if len(a.stopwords) > 0 {
			seen := map[string]bool{}
			var words []string
			for _, w := range a.stopwords {
				if w = strings.ToLower(w); w != "" && !seen[w] {
					seen[w] = true
					words = append(words, w)
				}
			}
			a.stop = newWordSet(words)
		}
	})
}

// allows reports whether the allowlist excuses a candidate. Cheap checks go first.
func (a *allowlist) allows(secret, match string, line func() string) bool {
	a.prepare()
	if a.and && (a.hasCommits || a.hasPaths) {
		// Find has no commit and no path: an AND with them never holds.
		return false
	}
	stopOK := func() bool { return a.stop != nil && secret != "" && a.stop.containsAny(secret) }
	regexOK := func() bool {
		if a.re == nil {
			return false
		}
		target := secret
		switch a.regexTarget {
		case "match":
			target = match
		case "line":
			target = line()
		}
		return target != "" && a.re.match(target)
	}
	if !a.and {
		return stopOK() || regexOK()
	}
	if a.stop != nil && !stopOK() {
		return false
	}
	if a.re != nil && !regexOK() {
		return false
	}
	return true
}

// regexSet matches like the alternation of its regexes (gitleaks joins an allowlist's
// regexes with |), but runs each top-level branch on its own, and only when the text has
// one of the literal factors every match of the branch contains. The generic rule's
// allowlist is one 900-character alternation that the regex engine can only run as a slow
// NFA; split, the few branches that can apply are small enough for the fast engines.
//
// Splitting costs a couple of milliseconds, more than a sandbox process's whole scan
// needs, so the set starts with the regexes joined in one and splits itself once it has
// been asked splitAfter times. Each regex is its own group in the join, so that flags
// such as (?i) stay within it both ways (gitleaks' plain join lets them leak into the
// following regexes, which can only make it excuse more).
type regexSet struct {
	srcs   []string
	calls  atomic.Int32
	whole  *lazyRegex
	once   sync.Once
	split  *splitSet
	errSet error
}

const splitAfter = 32

type splitSet struct {
	branches []*lazyRegex
	always   []int32   // branches without factors
	factors  *matcher  // all branches' factors
	targets  [][]int32 // factor id -> branches
}

func newRegexSet(srcs []string) (*regexSet, error) {
	parts := make([]string, len(srcs))
	for i, src := range srcs {
		if _, err := syntax.Parse(src, syntax.Perl); err != nil {
			return nil, fmt.Errorf("invalid regex %q: %w", src, err)
		}
		parts[i] = "(?:" + src + ")"
	}
	return &regexSet{srcs: srcs, whole: sharedRegex(strings.Join(parts, "|"))}, nil
}

func (rs *regexSet) match(s string) bool {
	if rs.calls.Load() < splitAfter {
		rs.calls.Add(1)
		re, err := rs.whole.get()
		if err != nil {
			panic(fmt.Sprintf("scrub: allowlist regex: %v", err))
		}
		return re.MatchString(s)
	}
	rs.once.Do(func() { rs.split, rs.errSet = newSplitSet(rs.srcs) })
	if rs.errSet != nil {
		panic(fmt.Sprintf("scrub: allowlist regex: %v", rs.errSet))
	}
	return rs.split.match(s)
}

func newSplitSet(srcs []string) (*splitSet, error) {
	rs := &splitSet{}
	var words []string
	index := map[string]int{}
	for _, src := range srcs {
		tree, err := syntax.Parse(src, syntax.Perl)
		if err != nil {
			return nil, fmt.Errorf("invalid regex %q: %w", src, err)
		}
		// Branches as source text (see resrc.go). A split in the wrong place leaves a
		// branch that does not parse, and then the regex is kept whole.
		type branch struct {
			src  string
			tree *syntax.Regexp
		}
		bs := []branch{{src, tree}}
		if parts := splitAlternation(src); parts != nil {
			bs = nil
			for _, ps := range parts {
				t, err := syntax.Parse(ps, syntax.Perl)
				if err != nil {
					bs = []branch{{src, tree}}
					break
				}
				bs = append(bs, branch{ps, t})
			}
		}
		for _, b := range bs {
			bsrc, sub := b.src, b.tree
			bi := int32(len(rs.branches))
			// Compiled when first needed, like the rules' regexes.
			rs.branches = append(rs.branches, sharedRegex(bsrc))
			fs := asciiFactors(sub)
			if fs == nil {
				rs.always = append(rs.always, bi)
				continue
			}
			for _, f := range fs {
				id, ok := index[f]
				if !ok {
					id = len(words)
					index[f] = id
					words = append(words, f)
					rs.targets = append(rs.targets, nil)
				}
				rs.targets[id] = append(rs.targets[id], bi)
			}
		}
	}
	if len(words) > 0 {
		rs.factors = newMatcher(words)
	}
	return rs, nil
}

func (rs *splitSet) match(s string) bool {
	for _, bi := range rs.always {
		if rs.branch(bi).MatchString(s) {
			return true
		}
	}
	if rs.factors == nil {
		return false
	}
	var tried []bool
	found := false
	rs.factors.scanString(s, func(id int32) bool {
		for _, bi := range rs.targets[id] {
			if tried == nil {
				tried = make([]bool, len(rs.branches))
			}
			if tried[bi] {
				continue
			}
			tried[bi] = true
			if rs.branch(bi).MatchString(s) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

func (rs *splitSet) branch(i int32) *regexp.Regexp {
	re, err := rs.branches[i].get()
	if err != nil {
		// Parsed when the set was built; the default config is checked by a test.
		panic(fmt.Sprintf("scrub: allowlist regex: %v", err))
	}
	return re
}
