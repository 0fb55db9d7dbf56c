package scrub

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// reach says how far a rule's match can extend around one of its keyword hits, so that
// running the regex on a window around each hit finds every match the regex would find on
// the whole text. It is derived from the regex's syntax tree, not guessed per rule.
type reach struct {
	// back and fwd bound the bytes between a hit's start and the match's start, and
	// between the hit's start and the match's end; -1 means unbounded.
	back, fwd int
	// nlBack and nlFwd bound the newlines a match can span before and after the hit;
	// -1 means unbounded.
	nlBack, nlFwd int
	// anchored is true when every match contains one of the rule's keywords. When false
	// a match need not be near a keyword and the rule scans whole inputs that contain one,
	// as gitleaks does.
	anchored bool
}

const (
	inf = -1
	// setLimit bounds the literal sets the analysis tracks.
	setLimit = 64
)

func addLen(a, b int) int {
	if a == inf || b == inf {
		return inf
	}
	return a + b
}

func maxLen(a, b int) int {
	if a == inf || b == inf {
		return inf
	}
	return max(a, b)
}

func mulLen(a, n int) int {
	if a == inf {
		if n == 0 {
			return 0
		}
		return inf
	}
	return a * n
}

// extent is the longest match of a node in bytes and in newlines.
type extent struct{ bytes, nl int }

func extentOf(re *syntax.Regexp) extent {
	switch re.Op {
	case syntax.OpLiteral:
		e := extent{}
		for _, r := range re.Rune {
			e.bytes += runeWidth(r, re.Flags&syntax.FoldCase != 0)
			if r == '\n' {
				e.nl++
			}
		}
		return e
	case syntax.OpCharClass:
		e := extent{}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			e.bytes = max(e.bytes, utf8.RuneLen(min(re.Rune[i+1], unicode.MaxRune)))
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				e.nl = 1
			}
		}
		return e
	case syntax.OpAnyCharNotNL:
		return extent{utf8.UTFMax, 0}
	case syntax.OpAnyChar:
		return extent{utf8.UTFMax, 1}
	case syntax.OpCapture:
		return extentOf(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return repeatExtent(extentOf(re.Sub[0]), -1)
	case syntax.OpQuest:
		return extentOf(re.Sub[0])
	case syntax.OpRepeat:
		return repeatExtent(extentOf(re.Sub[0]), re.Max)
	case syntax.OpConcat:
		e := extent{}
		for _, s := range re.Sub {
			se := extentOf(s)
			e.bytes, e.nl = addLen(e.bytes, se.bytes), addLen(e.nl, se.nl)
		}
		return e
	case syntax.OpAlternate:
		e := extent{}
		for _, s := range re.Sub {
			se := extentOf(s)
			e.bytes, e.nl = maxLen(e.bytes, se.bytes), maxLen(e.nl, se.nl)
		}
		return e
	}
	// Empty-width assertions and empty matches.
	return extent{}
}

func repeatExtent(e extent, n int) extent {
	if n < 0 {
		b, nl := e.bytes, e.nl
		if b != 0 {
			b = inf
		}
		if nl != 0 {
			nl = inf
		}
		return extent{b, nl}
	}
	return extent{mulLen(e.bytes, n), mulLen(e.nl, n)}
}

// runeWidth is the widest UTF-8 encoding a literal rune can match, counting case
// folding (under (?i) "k" also matches the 3-byte Kelvin sign).
func runeWidth(r rune, fold bool) int {
	w := utf8.RuneLen(r)
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			w = max(w, utf8.RuneLen(f))
		}
	}
	return max(w, 1)
}

// lits is what the analysis knows of the text a node matches, in lower case: full is the
// exact set of strings it can match (nil when unknown or too large), pre and suf sets of
// prefixes and suffixes every match starts and ends with, and must whether every match
// contains a keyword.
type lits struct {
	full     []string
	pre, suf []string
	must     bool
}

var emptyOnly = []string{""}

func containsAll(set []string, kws []string) bool {
	if len(set) == 0 {
		return false
	}
	for _, s := range set {
		ok := false
		for _, k := range kws {
			if strings.Contains(s, k) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func cross(a, b []string) []string {
	if a == nil || b == nil || len(a)*len(b) > setLimit {
		return nil
	}
	out := make([]string, 0, len(a)*len(b))
	seen := map[string]bool{}
	for _, x := range a {
		for _, y := range b {
			if s := x + y; !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func union(a, b []string) []string {
	if a == nil || b == nil {
		return nil
	}
	out := append([]string(nil), a...)
	for _, y := range b {
		dup := false
		for _, x := range out {
			if x == y {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, y)
		}
	}
	if len(out) > setLimit {
		return nil
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return emptyOnly
	}
	return s
}

func litsOf(re *syntax.Regexp, kws []string) lits {
	var l lits
	switch re.Op {
	case syntax.OpLiteral:
		l.full = []string{strings.ToLower(string(re.Rune))}
	case syntax.OpCharClass:
		// A class of a few letters that differ only in case ([Aa]) is a literal here.
		seen := map[rune]bool{}
		var set []string
		ok := true
		for i := 0; ok && i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi-lo > 8 {
				ok = false
				break
			}
			for r := lo; r <= hi; r++ {
				if lr := unicode.ToLower(r); !seen[lr] {
					seen[lr] = true
					set = append(set, string(lr))
				}
			}
			ok = len(set) <= 4
		}
		if ok && len(set) > 0 {
			l.full = set
		}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		l.full = emptyOnly
	case syntax.OpCapture:
		return litsOf(re.Sub[0], kws)
	case syntax.OpQuest:
		s := litsOf(re.Sub[0], kws)
		l.full = union(s.full, emptyOnly)
	case syntax.OpStar:
		// Matches the empty string: nothing is known.
	case syntax.OpPlus:
		s := litsOf(re.Sub[0], kws)
		l.pre, l.suf, l.must = orEmpty(s.pre), orEmpty(s.suf), s.must
	case syntax.OpRepeat:
		s := litsOf(re.Sub[0], kws)
		if re.Min == re.Max && s.full != nil && re.Min <= 8 {
			full := emptyOnly
			for i := 0; i < re.Min && full != nil; i++ {
				full = cross(full, s.full)
			}
			l.full = full
		} else if re.Min >= 1 {
			l.pre, l.suf, l.must = orEmpty(s.pre), orEmpty(s.suf), s.must
		}
	case syntax.OpAlternate:
		var full, pre, suf []string
		must := true
		for i, sub := range re.Sub {
			s := litsOf(sub, kws)
			if i == 0 {
				full, pre, suf = s.full, s.pre, s.suf
			} else {
				full, pre, suf = union(full, s.full), union(pre, s.pre), union(suf, s.suf)
			}
			must = must && s.must
		}
		l.full, l.pre, l.suf, l.must = full, orEmpty(pre), orEmpty(suf), must
	case syntax.OpConcat:
		l = concatLits(re.Sub, kws)
	}
	if l.full != nil {
		l.pre, l.suf = l.full, l.full
		l.must = containsAll(l.full, kws)
	}
	if l.pre == nil {
		l.pre = emptyOnly
	}
	if l.suf == nil {
		l.suf = emptyOnly
	}
	return l
}

func concatLits(subs []*syntax.Regexp, kws []string) lits {
	var l lits
	parts := make([]lits, len(subs))
	for i, s := range subs {
		parts[i] = litsOf(s, kws)
		if parts[i].must {
			l.must = true
		}
	}
	// full: product of all parts if every part is exact.
	full := emptyOnly
	for _, p := range parts {
		full = cross(full, p.full)
		if full == nil {
			break
		}
	}
	l.full = full
	// pre: the exact parts from the left, then the first inexact part's prefixes.
	pre := emptyOnly
	for _, p := range parts {
		if p.full != nil {
			if pre = cross(pre, p.full); pre == nil {
				break
			}
			continue
		}
		pre = cross(pre, p.pre)
		break
	}
	l.pre = orEmpty(pre)
	suf := emptyOnly
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if p.full != nil {
			if suf = cross(p.full, suf); suf == nil {
				break
			}
			continue
		}
		suf = cross(p.suf, suf)
		break
	}
	l.suf = orEmpty(suf)
	// must: some stretch of text every match has contains a keyword. Walk left to right
	// keeping the possible text since the last inexact part.
	tails := emptyOnly
	for _, p := range parts {
		if l.must {
			break
		}
		if p.full != nil {
			tails = cross(tails, p.full)
			if tails == nil {
				tails = orEmpty(p.suf)
				continue
			}
			if containsAll(tails, kws) {
				l.must = true
			}
			continue
		}
		if joined := cross(tails, p.pre); joined != nil && containsAll(joined, kws) {
			l.must = true
			break
		}
		tails = p.suf
	}
	return l
}

// analyzeReach computes a rule's window around a keyword hit.
func analyzeReach(tree *syntax.Regexp, kws []string) reach {
	for tree.Op == syntax.OpCapture {
		tree = tree.Sub[0]
	}
	whole := extentOf(tree)
	r := reach{back: whole.bytes, fwd: whole.bytes, nlBack: whole.nl, nlFwd: whole.nl}
	if len(kws) == 0 {
		return r
	}
	r.anchored = litsOf(tree, kws).must
	if !r.anchored {
		return r
	}
	// Narrow the window: find the shortest run of top-level parts i..j that always holds a
	// keyword. The match starts at most extent(0..j) before a hit in that run and ends at
	// most extent(i..end) after the hit's start.
	subs := flatten(tree, nil)
	n := len(subs)
	for j := 0; j < n; j++ {
		if !concatLits(subs[:j+1], kws).must {
			continue
		}
		i := j
		for i > 0 && !concatLits(subs[i:j+1], kws).must {
			i--
		}
		before := extentOf(&syntax.Regexp{Op: syntax.OpConcat, Sub: subs[:j+1]})
		after := extentOf(&syntax.Regexp{Op: syntax.OpConcat, Sub: subs[i:]})
		r.back, r.nlBack = before.bytes, before.nl
		r.fwd, r.nlFwd = after.bytes, after.nl
		break
	}
	return r
}

// flatten lists the parts of a concatenation, looking through captures and nested
// concatenations, which change neither extents nor literals.
func flatten(re *syntax.Regexp, out []*syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpCapture:
		return flatten(re.Sub[0], out)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			out = flatten(s, out)
		}
		return out
	}
	return append(out, re)
}

// plan is how Find runs one rule.
//
// Most gitleaks rules are a keyword followed by a token, optionally after a lazy prefix
// such as [\w.-]{0,50}? and a \b: every match then starts at a keyword hit, so the rule
// runs as an anchored regex at each hit, which fails within a few bytes when no secret
// follows. Other rules run their regex on windows around their hits (reach), and rules
// whose matches need not contain a keyword run on the ±fragment around a hit, as
// gitleaks' keyword prefilter effectively does.
type plan struct {
	anchored *lazyRegex // ^(?:regex without its prefix), or nil for window mode
	// pre is a DFA of anchored, with its long bounded repeats made unbounded (a
	// superset, with far fewer states): a hit it rejects cannot match anchored, and it
	// rejects most hits within a few bytes, so the regex runs only where a secret may be.
	pre *prefixDFA
	// win, for a rule run on windows, is a DFA of the regex (relaxed as pre is) after
	// any text: a window it finds no match in is not given to the regex.
	win   *prefixDFA
	wordB bool // the stripped prefix had a \b at the hit
	// prefix is the stripped optional prefix (a class repeated up to prefixMax runes,
	// -1 unbounded), put back on the match for allowlists that look at the match.
	prefix    *syntax.Regexp
	prefixMax int
	ext       extent // of the anchored regex
	reach     reach  // window mode
	// printed counts the regexes that had to be printed from the tree (slow, see
	// resrc.go) because the source rewrite did not give the same tree.
	printed int
}

func makePlan(src string, tree *syntax.Regexp, nsub int, kws []string) plan {
	p := plan{reach: analyzeReach(tree, kws)}
	if len(kws) == 0 || !p.reach.anchored {
		return p
	}
	parts := []*syntax.Regexp{tree}
	if tree.Op == syntax.OpConcat {
		parts = tree.Sub
	}
	i := 0
scan:
	for ; i < len(parts); i++ {
		switch q := parts[i]; {
		case q.Op == syntax.OpWordBoundary:
			p.wordB = true
		case p.prefix == nil && optionalClass(q):
			p.prefix = q.Sub[0]
			p.prefixMax = -1
			if q.Op == syntax.OpRepeat {
				p.prefixMax = q.Max
			} else if q.Op == syntax.OpQuest {
				p.prefixMax = 1
			}
		default:
			break scan
		}
	}
	if i == len(parts) {
		return plan{reach: p.reach}
	}
	rest := make([]*syntax.Regexp, len(parts)-i)
	copy(rest, parts[i:])
	for {
		n, ok := stripLeadingWordBoundary(rest[0])
		if !ok {
			break
		}
		rest[0] = n
		p.wordB = true
	}
	body := rest[0]
	if len(rest) > 1 {
		body = &syntax.Regexp{Op: syntax.OpConcat, Sub: rest, Flags: tree.Flags}
	}
	pre := litsOf(body, kws).pre
	for _, s := range pre {
		ok := false
		for _, k := range kws {
			if strings.HasPrefix(s, k) {
				ok = true
				break
			}
		}
		if !ok {
			return plan{reach: p.reach}
		}
	}
	bodySrc := stripLeadingSrc(src)
	if !sameTree(bodySrc, body) {
		bodySrc = body.String()
		p.printed++
	}
	if numCaptures(body) != nsub {
		return plan{reach: p.reach}
	}
	// Compiled when a hit first gets past pre: the anchored form of generic-api-key
	// takes ~1.7 ms to compile, and most inputs never need it.
	p.anchored = sharedRegex(`^(?:` + bodySrc + `)`)
	if _, err := p.anchored.parsed(); err != nil {
		return plan{reach: p.reach}
	}
	p.ext = extentOf(body)
	rsrc := bodySrc
	if relaxed, changed := relax(body); changed {
		rsrc = relaxSrc(bodySrc, relaxAbove)
		if !sameTree(rsrc, relaxed) {
			rsrc = relaxed.String()
			p.printed++
		}
	}
	if d, err := newPrefixDFA(`^(?:` + rsrc + `)`); err == nil {
		p.pre = d
	}
	return p
}

// windowDFA returns a DFA that tells whether a rule's regex (relaxed) matches anywhere in
// a text, or nil.
func windowDFA(src string, tree *syntax.Regexp) *prefixDFA {
	rsrc := src
	if relaxed, changed := relax(tree); changed {
		rsrc = relaxSrc(src, relaxAbove)
		if !sameTree(rsrc, relaxed) {
			rsrc = relaxed.String()
		}
	}
	d, err := newPrefixDFA(`^(?s:.)*?(?:` + rsrc + `)`)
	if err != nil {
		return nil
	}
	return d
}

// relaxAbove is the longest repeat relax keeps bounded.
const relaxAbove = 32

// stripLeadingSrc is makePlan's prefix stripping done on the source: leading  and one
// optional class repeat go, and so does a  at the start of leading groups.
func stripLeadingSrc(src string) string {
	flags, rest := leadingFlags(src)
	prefix := false
	for {
		if strings.HasPrefix(rest, `\b`) {
			rest = rest[2:]
			continue
		}
		a := atomEnd(rest, 0)
		q := quantEnd(rest, a)
		quant := rest[a:q]
		optional := strings.HasPrefix(quant, "*") || strings.HasPrefix(quant, "?") || strings.HasPrefix(quant, "{0,") || strings.HasPrefix(quant, "{0}")
		if !prefix && a > 0 && optional && rest[0] != '(' {
			rest, prefix = rest[q:], true
			continue
		}
		break
	}
	for pos := 0; pos < len(rest) && rest[pos] == '('; {
		pos++
		if strings.HasPrefix(rest[pos:], "?:") {
			pos += 2
		}
		if strings.HasPrefix(rest[pos:], `\b`) {
			rest = rest[:pos] + rest[pos+2:]
		}
	}
	return flags + rest
}

// relax returns re with every repeat of more than relaxAbove made unbounded: a superset
// of the language, with a much smaller program.
func relax(re *syntax.Regexp) (*syntax.Regexp, bool) {
	changed := false
	c := *re
	if len(re.Sub) > 0 {
		c.Sub = make([]*syntax.Regexp, len(re.Sub))
		for i, s := range re.Sub {
			var ch bool
			c.Sub[i], ch = relax(s)
			changed = changed || ch
		}
	}
	if c.Op == syntax.OpRepeat && c.Max > relaxAbove {
		c.Max = -1
		changed = true
	}
	return &c, changed
}

// optionalClass matches X{0,n}, X*, X? of one character class.
func optionalClass(q *syntax.Regexp) bool {
	switch q.Op {
	case syntax.OpRepeat:
		if q.Min != 0 {
			return false
		}
	case syntax.OpStar, syntax.OpQuest:
	default:
		return false
	}
	s := q.Sub[0].Op
	return s == syntax.OpCharClass || s == syntax.OpAnyCharNotNL
}

// stripLeadingWordBoundary removes a \b that starts re (also inside leading captures,
// which an empty-width assertion does not change).
func stripLeadingWordBoundary(re *syntax.Regexp) (*syntax.Regexp, bool) {
	switch re.Op {
	case syntax.OpWordBoundary:
		return &syntax.Regexp{Op: syntax.OpEmptyMatch, Flags: re.Flags}, true
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return re, false
		}
		if re.Sub[0].Op == syntax.OpWordBoundary {
			// Drop it, as the parser would have built the concatenation without it.
			if len(re.Sub) == 2 {
				return re.Sub[1], true
			}
			c := *re
			c.Sub = re.Sub[1:]
			return &c, true
		}
		fallthrough
	case syntax.OpCapture:
		if len(re.Sub) == 0 {
			return re, false
		}
		n, ok := stripLeadingWordBoundary(re.Sub[0])
		if !ok {
			return re, false
		}
		c := *re
		c.Sub = append([]*syntax.Regexp{n}, re.Sub[1:]...)
		return &c, true
	}
	return re, false
}

// matchesClass reports whether r is in a character class node.
func matchesClass(c *syntax.Regexp, r rune) bool {
	if c.Op == syntax.OpAnyCharNotNL {
		return r != '\n'
	}
	for i := 0; i+1 < len(c.Rune); i += 2 {
		if c.Rune[i] <= r && r <= c.Rune[i+1] {
			return true
		}
	}
	return false
}

// factors returns strings (lower case) one of which every match of re contains, or nil
// when the analysis cannot tell. A regex can then be skipped on text that contains none,
// which a keyword automaton checks far faster than the regex engine fails.
func factors(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return factors(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return factors(re.Sub[0])
		}
		return nil
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			f := factors(s)
			if f == nil {
				return nil
			}
			out = append(out, f...)
		}
		return out
	case syntax.OpConcat:
		// The longest exact run of parts gives the most selective factors; any part's
		// own factors would do.
		var best []string
		score := func(set []string) int {
			if set == nil {
				return -1
			}
			m := 1 << 30
			for _, s := range set {
				m = min(m, len(s))
			}
			return m
		}
		run := []string{""}
		for _, s := range re.Sub {
			l := litsOf(s, nil)
			if l.full != nil {
				if run = cross(run, l.full); run == nil {
					run = l.full
				}
				if score(run) > score(best) {
					best = run
				}
				continue
			}
			if f := factors(s); score(f) > score(best) {
				best = f
			}
			run = []string{""}
		}
		if score(best) <= 0 {
			return nil
		}
		return best
	}
	l := litsOf(re, nil)
	if l.full == nil {
		return nil
	}
	for _, s := range l.full {
		if s == "" {
			return nil
		}
	}
	return l.full
}

// asciiFactors returns the factors of a regex if a case-folding keyword matcher can look
// for them, or nil.
func asciiFactors(tree *syntax.Regexp) []string {
	fs := factors(tree)
	if len(fs) == 0 || len(fs) > 4096 {
		return nil
	}
	for _, f := range fs {
		if f == "" {
			return nil
		}
		for i := 0; i < len(f); i++ {
			// The matcher folds ASCII case only.
			if f[i] >= utf8.RuneSelf {
				return nil
			}
		}
	}
	return fs
}
