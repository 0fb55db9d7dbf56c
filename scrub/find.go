package scrub

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Finding is one secret to replace.
type Finding struct {
	Rule       string // rule id, e.g. "github-pat", "private-key", "contextd-env-credential"
	Start, End int    // byte offsets in the input of the span to replace (the secret itself; for PEM private keys the whole BEGIN..END block)
	Secret     string // the replaced text
}

const (
	// parallelMin is the input size from which Find splits the work: below it the
	// goroutine hand-offs cost more than they save.
	parallelMin = 256 << 10
	// chunkMin is the smallest chunk the keyword pass splits an input into beyond one
	// per worker.
	chunkMin = 128 << 10
	// longReach bounds how far a window extends for unbounded patterns: a token longer
	// than this or a PEM block larger than this is not treated as one secret.
	longReach = 64 << 10
	// maxLineContext bounds the "line" that allowlists with regexTarget = "line" see on
	// each side of a match: on a megabyte-long line, gitleaks' whole line would make
	// every candidate cost as much as the line.
	maxLineContext = 4 << 10
)

type span struct{ start, end int }

// cand is a candidate finding before allowlists, required rules and overlap resolution.
type cand struct {
	rule       int32 // index into Scrubber.rules, or ownEnv/ownURL
	start, end int   // the secret
	mstart     int   // the match, for [[rules.required]] proximity
	aux        bool  // kept only because a composite rule needed it
}

// Find returns the secrets in b, sorted by Start and not overlapping: where candidates
// overlap, they are merged into one span named after the most specific rule (gitleaks'
// specific rules, then contextd's, then generic-api-key). Text that already is a
// placeholder is never reported, so Find on scrubbed text finds nothing new.
func (s *Scrubber) Find(b []byte) []Finding {
	if len(b) == 0 {
		return nil
	}
	cands, _ := s.candidates(b, scanOpts{})
	return s.resolve(b, cands)
}

// scanOpts are what Stream needs beyond Find.
type scanOpts struct {
	// depth counts decoding passes (see decode.go).
	depth int
	// from: the text before it is context already scanned; work that cannot reach it is
	// skipped. It is the start of a line.
	from int
	// forced are windows to scan regardless of keywords: fragment-mode rules whose
	// keyword was seen in earlier text.
	forced []workItem
}

// candidates runs every rule on b. It also returns the end of the last keyword hit of
// each fragment-mode rule.
func (s *Scrubber) candidates(b []byte, o scanOpts) ([]cand, map[int32]int) {
	workers := s.workers
	if len(b)-o.from < parallelMin {
		workers = 1
	}
	// Phase 1: keyword hits -> per-rule windows, and contextd's own rules at their hits.
	// With several workers, in a few chunks per worker, so that one slowed down (a busy
	// core, a chunk dense in secrets) is made up for by the others.
	nchunk := workers
	if workers > 1 {
		nchunk = max(workers, min(4*workers, len(b)/chunkMin))
	}
	chunks := make([]*chunkScan, nchunk)
	size := (len(b) + nchunk - 1) / nchunk
	run(workers, nchunk, func(i int) {
		lo := min(i*size, len(b))
		hi := min(lo+size, len(b))
		chunks[i] = s.scanChunk(b, lo, hi, &o)
	})
	if o.depth < maxDecodeDepth {
		// Decoding, once every keyword is known: a fragment-mode rule whose
		// keyword lies anywhere within its reach (another line, another
		// chunk) runs on a decoded line too, as gitleaks runs it on decoded
		// text when the keyword is in the fragment.
		frag := s.fragmentWindows(chunks, o.forced)
		run(workers, nchunk, func(i int) {
			lo := min(i*size, len(b))
			hi := min(lo+size, len(b))
			chunks[i].cands = append(chunks[i].cands, s.decodedChunk(b, lo, hi, &o, frag)...)
		})
	}
	// Phase 2: merge windows across chunks and run the regexes on them.
	items := append([]workItem(nil), o.forced...)
	for _, ri := range s.unanchored {
		items = append(items, workItem{ri, span{0, len(b)}})
	}
	for ri := range s.rules {
		var cur span
		have := false
		for _, c := range chunks {
			if c.wins == nil {
				continue
			}
			for _, w := range c.wins[ri] {
				if have && w.start <= cur.end {
					cur.end = max(cur.end, w.end)
					continue
				}
				if have {
					items = append(items, workItem{int32(ri), cur})
				}
				cur, have = w, true
			}
		}
		if have {
			items = append(items, workItem{int32(ri), cur})
		}
	}
	// Big windows first so the workers finish together.
	slices.SortStableFunc(items, func(x, y workItem) int {
		return cmp.Compare(y.w.end-y.w.start, x.w.end-x.w.start)
	})
	results := make([][]cand, workers)
	var next atomic.Int64
	run(workers, workers, func(wi int) {
		var out []cand
		for {
			i := int(next.Add(1) - 1)
			if i >= len(items) {
				break
			}
			out = s.runWindow(b, items[i], out)
		}
		results[wi] = out
	})
	var cands []cand
	var frag map[int32]int
	for _, c := range chunks {
		cands = append(cands, c.cands...)
		for ri, e := range c.frag {
			if frag == nil {
				frag = map[int32]int{}
			}
			frag[ri] = max(frag[ri], e)
		}
	}
	for _, r := range results {
		cands = append(cands, r...)
	}
	if s.hasReq {
		cands = s.applyRequired(b, cands)
	}
	return cands, frag
}

type workItem struct {
	rule int32
	w    span
}

// run calls fn(0..n-1) on up to workers goroutines (inline when workers is 1).
func run(workers, n int, fn func(int)) {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// chunkScan is what the keyword pass over one chunk produced.
type chunkScan struct {
	wins  [][]span      // per window-mode rule, merged windows in order (nil: none)
	cands []cand        // from anchored rules and contextd's own rules
	frag  map[int32]int // fragment-mode rule -> end of its last hit
}

func (s *Scrubber) scanChunk(b []byte, lo, hi int, o *scanOpts) *chunkScan {
	// Per-rule state is allocated on the first hit: decoding scans many short lines that
	// have none.
	c := &chunkScan{}
	from := max(0, lo-(s.maxKw-1))
	to := min(len(b), hi+s.maxKw-1)
	lens := s.kw.lens
	var last []int
	lastEnv, lastURL := -1, -1
	s.kw.scan(b[from:to], func(id int32, end int) bool {
		end += from
		start := end - lens[id]
		if start < lo || start >= hi {
			return true
		}
		for _, t := range s.targets[id] {
			switch {
			case t >= 0:
				if last == nil {
					last = make([]int, len(s.rules))
					for i := range last {
						last[i] = -1
					}
				}
				// Two keywords of a rule can start at one place (passwd, password).
				if last[t] == start {
					continue
				}
				last[t] = start
				s.hit(b, c, t, start, end, o.from)
			case start < o.from:
				// contextd's rules find a value on the keyword's own line.
			case t == ownEnv:
				// Several credential words can sit in one name (API_KEY_TOKEN); the
				// name is examined once.
				if start > lastEnv {
					f, next, ok := envCredential(b, start, end)
					if ok {
						c.cands = append(c.cands, f)
					}
					lastEnv = next
				}
			case t == ownURL:
				if start > lastURL {
					if f, ok := urlCredential(b, start); ok {
						c.cands = append(c.cands, f)
						lastURL = f.end
					}
				}
			}
		}
		return true
	})
	return c
}

// decodedChunk decodes the lines that start in [lo, hi) (see decoded); frag are the
// windows of the fragment-mode rules whose keyword was seen (fragmentWindows).
func (s *Scrubber) decodedChunk(b []byte, lo, hi int, o *scanOpts, frag []workItem) []cand {
	ls := max(lo, o.from)
	if ls > 0 && ls < hi && b[ls-1] != '\n' {
		i := bytes.IndexByte(b[ls:hi], '\n')
		if i < 0 {
			return nil
		}
		ls += i + 1
	}
	if ls >= hi {
		return nil
	}
	return s.decoded(b, ls, hi, o.depth, frag)
}

// fragmentWindows lists the windows of the fragment-mode rules: where a keyword pass
// found their keyword, and the windows forced on the scan.
func (s *Scrubber) fragmentWindows(chunks []*chunkScan, forced []workItem) []workItem {
	out := append([]workItem(nil), forced...)
	for _, c := range chunks {
		for ri := range c.frag {
			for _, w := range c.wins[ri] {
				out = append(out, workItem{ri, w})
			}
		}
	}
	return out
}

// hit handles keyword hit [hs, he) of rule t: an anchored rule is matched right there, a
// window-mode rule gets a window to run on later.
func (s *Scrubber) hit(b []byte, c *chunkScan, t int32, hs, he, from int) {
	r := s.rules[t]
	p := r.plan()
	if p.anchored != nil {
		if hs < from && p.ext.bytes != inf && hs+p.ext.bytes < from {
			return
		}
		c.cands = s.matchAnchored(b, t, p, hs, c.cands)
		return
	}
	if c.wins == nil {
		c.wins = make([][]span, len(s.rules))
	}
	var w span
	if p.reach.anchored {
		ws := c.wins[t]
		rc := &p.reach
		if hs < from && rc.fwd != inf && hs+rc.fwd < from {
			return
		}
		// Cheap test first: hits of frequent keywords often fall in the previous window.
		if n := len(ws); n > 0 && rc.back != inf && rc.fwd != inf && ws[n-1].end > hs+rc.fwd && ws[n-1].start < hs-rc.back {
			return
		}
		w = window(b, hs, he, rc)
	} else {
		w = fragment(b, hs, he)
		if c.frag == nil {
			c.frag = map[int32]int{}
		}
		c.frag[t] = he
	}
	ws := c.wins[t]
	if n := len(ws); n > 0 && w.start <= ws[n-1].end {
		ws[n-1].end = max(ws[n-1].end, w.end)
		ws[n-1].start = min(ws[n-1].start, w.start)
		return
	}
	c.wins[t] = append(ws, w)
}

// A rule whose match need not hold its keyword (a bare 40-hex Sourcegraph token, once
// "sourcegraph" was seen) runs on the text around the keyword: gitleaks runs it on its
// whole ~100 kB fragment when the keyword is anywhere in it, so Find covers 128 kB on
// each side. (Stream can only look back as far as its context; see stream.go.)
const (
	fragmentBack = 128 << 10
	fragmentFwd  = 128 << 10
)

func fragment(b []byte, hs, he int) span {
	start, end := max(0, hs-fragmentBack), min(len(b), he+fragmentFwd)
	// Extend to whole lines, within reason.
	if i := bytes.LastIndexByte(b[max(0, start-maxLineContext):start], '\n'); i >= 0 {
		start = max(0, start-maxLineContext) + i + 1
	}
	if i := bytes.IndexByte(b[end:min(len(b), end+maxLineContext)], '\n'); i >= 0 {
		end += i + 1
	}
	return span{start, end}
}

// window is the part of b a rule's regex must see to find every match that contains the
// keyword hit [hs, he): bounded by the rule's reach in bytes and in lines, plus one byte
// of context on each side so that \b and $ see what surrounds the window. A match that
// uses a context byte cannot contain the hit (it would exceed the reach) and is dropped.
func window(b []byte, hs, he int, rc *reach) span {
	start := max(0, hs-longReach)
	if rc.back != inf {
		start = max(0, hs-rc.back)
	}
	if rc.nlBack != inf {
		// Start of the line nlBack lines above the hit, unless start is later.
		p := hs
		for k := 0; k <= rc.nlBack && p > start; k++ {
			i := bytes.LastIndexByte(b[start:p], '\n')
			if i < 0 {
				p = -1
				break
			}
			p = start + i
			if k == rc.nlBack {
				start = p + 1
			}
		}
	}
	end := min(len(b), he+longReach)
	if rc.fwd != inf {
		end = min(len(b), max(he, hs+rc.fwd))
	}
	if rc.nlFwd != inf {
		end = min(end, afterNewlines(b, he, end, rc.nlFwd+1))
	}
	return span{max(0, start-1), min(len(b), end+1)}
}

// afterNewlines returns the offset just after the n-th newline at or after p, or limit
// if there are fewer before limit.
func afterNewlines(b []byte, p, limit, n int) int {
	for k := 0; k < n; k++ {
		i := bytes.IndexByte(b[p:limit], '\n')
		if i < 0 {
			return limit
		}
		p += i + 1
	}
	return p
}

func isASCIIWord(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// matchAnchored runs an anchored rule at hit hs.
func (s *Scrubber) matchAnchored(b []byte, t int32, p *plan, hs int, out []cand) []cand {
	if p.wordB {
		prev := hs > 0 && isASCIIWord(b[hs-1])
		if prev == isASCIIWord(b[hs]) {
			return out
		}
	}
	end := min(len(b), hs+longReach)
	if p.ext.bytes != inf {
		// One byte past the longest match, so $ never matches inside a longer token.
		end = min(len(b), hs+p.ext.bytes+1)
	}
	// Nor past the line after the last a match can reach.
	lines := 0
	if p.ext.nl != inf {
		lines = p.ext.nl + 1
	}
	if p.pre != nil {
		if m, ok := p.pre.match(b[hs:end], lines); ok && !m {
			return out
		}
	}
	if lines > 0 {
		end = afterNewlines(b, hs, end, lines)
	}
	if p.pre != nil {
		// The regex then runs on no more than it can match: short enough for the regexp
		// package's backtracker, and its visited set is cleared for fewer bytes.
		end = hs + p.pre.reach(b[hs:end])
	}
	re, err := p.anchored.get()
	if err != nil {
		return out
	}
	loc := re.FindSubmatchIndex(b[hs:end])
	if loc == nil {
		return out
	}
	for i := range loc {
		if loc[i] >= 0 {
			loc[i] += hs
		}
	}
	ms, me := loc[0], loc[1]
	for me > ms && b[me-1] == '\n' {
		me--
	}
	if p.prefix != nil {
		// Put back the optional prefix the anchored regex left out, as far as the
		// original lazy prefix would have reached.
		for k := 0; ms > 0 && (p.prefixMax < 0 || k < p.prefixMax) && hs-ms < longReach; k++ {
			r, n := utf8.DecodeLastRune(b[:ms])
			if !matchesClass(p.prefix, r) {
				break
			}
			ms -= n
		}
	}
	ss, se := ms, me
	if len(loc) > 2 {
		ss, se = pickGroup(s.rules[t].secretGroup, loc, ms, me)
		if ss < 0 {
			return out
		}
	}
	// Two keywords of one secret's name (API_TOKEN) give the generic rule the same
	// secret twice: the allowlists are not run again for it.
	for k := len(out) - 1; k >= max(0, len(out)-4); k-- {
		if c := out[k]; c.rule == t && c.start == ss && c.end == se && c.mstart == ms && !c.aux {
			return out
		}
	}
	if c, ok := s.accept(b, t, ss, se, ms, me); ok {
		out = append(out, c)
	}
	return out
}

// pickGroup chooses the secret among a match's groups as gitleaks does: the secretGroup,
// else the first non-empty group, else the whole match. ss < 0 drops the match.
func pickGroup(sg int, g []int, ms, me int) (ss, se int) {
	if sg > 0 {
		if 2*sg+1 >= len(g) {
			return -1, -1
		}
		if g[2*sg] < 0 {
			return ms, ms
		}
		return g[2*sg], g[2*sg+1]
	}
	for k := 2; k+1 < len(g); k += 2 {
		if g[k] >= 0 && g[k+1] > g[k] {
			return g[k], g[k+1]
		}
	}
	return ms, me
}

// accept applies entropy and allowlists to a secret [ss, se) of match [ms, me).
func (s *Scrubber) accept(b []byte, t int32, ss, se, ms, me int) (cand, bool) {
	r := s.rules[t]
	if ss >= se {
		return cand{}, false
	}
	if r.entropy != 0 && shannon(b[ss:se]) <= r.entropy {
		return cand{}, false
	}
	if s.allowed(r, b, b[ss:se], ms, me) {
		return cand{}, false
	}
	return cand{rule: t, start: ss, end: se, mstart: ms}, true
}

// runWindow runs a window-mode rule's regex on one window.
func (s *Scrubber) runWindow(b []byte, it workItem, out []cand) []cand {
	r := s.rules[it.rule]
	text := b[it.w.start:it.w.end]
	if p := r.plan(); p.win != nil {
		// Most windows hold no match: the DFA says so for less than the regex would.
		if m, ok := p.win.match(text, 0); ok && !m {
			return out
		}
	}
	re := r.regex()
	for _, m := range re.FindAllSubmatchIndex(text, -1) {
		if (m[0] == 0 && it.w.start > 0) || (m[1] == len(text) && it.w.end < len(b)) {
			continue
		}
		ms, me := it.w.start+m[0], it.w.start+m[1]
		// gitleaks trims newlines off the match.
		for ms < me && b[ms] == '\n' {
			ms++
		}
		for me > ms && b[me-1] == '\n' {
			me--
		}
		if ms == me {
			continue
		}
		ss, se := ms, me
		if re.NumSubexp() > 0 {
			// gitleaks matches the regex again on the match alone to pick the secret.
			if g := re.FindSubmatchIndex(b[ms:me]); len(g) >= 4 {
				for i := range g {
					if g[i] >= 0 {
						g[i] += ms
					}
				}
				if ss, se = pickGroup(r.secretGroup, g, ms, me); ss < 0 {
					continue
				}
			}
		}
		if c, ok := s.accept(b, it.rule, ss, se, ms, me); ok {
			out = append(out, c)
		}
	}
	return out
}

// allowed applies the global allowlists, then the rule's.
func (s *Scrubber) allowed(r *rule, b, secret []byte, ms, me int) bool {
	if len(s.global) == 0 && len(r.allowlists) == 0 {
		return false
	}
	sec, match := string(secret), string(b[ms:me])
	var line string
	lineOnce := false
	getLine := func() string {
		if !lineOnce {
			lineOnce = true
			// gitleaks' Line runs from the newline before the match to the one after it;
			// on a very long line, only maxLineContext on each side of the match.
			lo := max(0, ms-maxLineContext)
			ls := lo
			if i := bytes.LastIndexByte(b[lo:ms], '\n'); i >= 0 {
				ls = lo + i
			}
			hi := min(len(b), me+maxLineContext)
			le := hi
			if i := bytes.IndexByte(b[me:hi], '\n'); i >= 0 {
				le = me + i
			}
			line = string(b[ls:le])
		}
		return line
	}
	for _, als := range [][]*allowlist{s.global, r.allowlists} {
		for _, a := range als {
			if a.allows(sec, match, getLine) {
				return true
			}
		}
	}
	return false
}

// shannon is gitleaks' entropy: over runes, divided by the length in bytes.
func shannon(b []byte) float64 {
	if len(b) == 0 {
		return 0
	}
	var ascii [128]int
	var other map[rune]int
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			ascii[c]++
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if other == nil {
			other = map[rune]int{}
		}
		other[r]++
		i += n
	}
	inv := 1 / float64(len(b))
	e := 0.0
	for _, n := range ascii {
		if n > 0 {
			f := float64(n) * inv
			e -= f * math.Log2(f)
		}
	}
	for _, n := range other {
		f := float64(n) * inv
		e -= f * math.Log2(f)
	}
	return e
}

// FindRange finds the secrets that touch b[a:e], looking margin bytes beyond
// both ends (b is all there is around it), with offsets in b, and returns the
// range widened to the secrets that cross its ends, so that a caller cutting
// b at na and ne never cuts a secret in two. The findings all lie in
// b[na:ne].
func (s *Scrubber) FindRange(b []byte, a, e, margin int) (fs []Finding, na, ne int) {
	lo, hi := max(0, a-margin), min(len(b), e+margin)
	na, ne = a, e
	for _, f := range s.Find(b[lo:hi]) {
		f.Start += lo
		f.End += lo
		if f.End > a && f.Start < e {
			na, ne = min(na, f.Start), max(ne, f.End)
			fs = append(fs, f)
		}
	}
	return fs, na, ne
}
