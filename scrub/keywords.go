package scrub

import (
	"math"
	"slices"
)

// matcher finds many keywords at once, ASCII case-insensitively, in one pass: an
// Aho-Corasick automaton turned into a full DFA over a reduced alphabet (the bytes that
// occur in keywords, plus one class for every other byte), so a scan costs two table
// loads per input byte. Built in well under a millisecond for gitleaks' ~250 keywords.
type matcher struct {
	class  [256]uint8
	nclass int
	// next is the DFA: for state s and byte class c, next[s*nclass+c] holds the target's
	// row offset (target*nclass) shifted left once, with the low bit set when keywords
	// end in the target, which saves a multiplication and a load per scanned byte.
	next []int32
	// Keywords ending in a state: own[s] is the first keyword id ending exactly there
	// (more follow through sameEnd), dict[s] the nearest shorter suffix state that has
	// keywords of its own (-1 for none).
	own     []int32
	sameEnd []int32
	dict    []int32
	lens    []int
	// maxLen is the longest keyword: the automaton's state at any point depends on at
	// most that many bytes before it, which lets scan start a stream mid-text.
	maxLen int
}

// newMatcher builds the automaton with one large allocation for the DFA: it is built in
// every sandbox process, where the heap is small and each allocation may trigger work.
func newMatcher(keywords []string) *matcher {
	m := &matcher{nclass: 1, lens: make([]int, len(keywords)), sameEnd: make([]int32, len(keywords))}
	for _, k := range keywords {
		for i := 0; i < len(k); i++ {
			c := lower(k[i])
			if m.class[c] == 0 {
				if m.nclass == 255 {
					panic("scrub: too many distinct keyword bytes")
				}
				m.class[c] = uint8(m.nclass)
				m.nclass++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		m.class[c] = m.class[c+'a'-'A']
	}
	// Count the trie's states: distinct prefixes of the sorted, lower-cased keywords.
	sorted := make([]string, 0, len(keywords))
	for _, k := range keywords {
		sorted = append(sorted, lowerASCII(k))
	}
	slices.Sort(sorted)
	states := 1
	for i, k := range sorted {
		lcp := 0
		if i > 0 {
			p := sorted[i-1]
			for lcp < len(k) && lcp < len(p) && k[lcp] == p[lcp] {
				lcp++
			}
		}
		states += len(k) - lcp
	}
	nc := m.nclass
	next := make([]int32, states*nc)
	for i := range next {
		next[i] = -1
	}
	m.own = make([]int32, states)
	m.dict = make([]int32, states)
	for i := range m.own {
		m.own[i], m.dict[i] = -1, -1
	}
	used := int32(1)
	for id, k := range keywords {
		m.lens[id] = len(k)
		m.maxLen = max(m.maxLen, len(k))
		m.sameEnd[id] = -1
		if k == "" {
			continue
		}
		s := int32(0)
		for i := 0; i < len(k); i++ {
			e := s*int32(nc) + int32(m.class[lower(k[i])])
			if next[e] < 0 {
				next[e] = used
				used++
			}
			s = next[e]
		}
		m.sameEnd[id] = m.own[s]
		m.own[s] = int32(id)
	}
	// Breadth-first: fill missing edges from the failure state, link outputs.
	fail := make([]int32, states)
	queue := make([]int32, 0, states)
	for c := 0; c < nc; c++ {
		if t := next[c]; t < 0 {
			next[c] = 0
		} else {
			queue = append(queue, t)
		}
	}
	for qi := 0; qi < len(queue); qi++ {
		s := queue[qi]
		if f := fail[s]; m.own[f] >= 0 {
			m.dict[s] = f
		} else {
			m.dict[s] = m.dict[f]
		}
		for c := 0; c < nc; c++ {
			e := int(s)*nc + c
			f := next[int(fail[s])*nc+c]
			if next[e] < 0 {
				next[e] = f
				continue
			}
			fail[next[e]] = f
			queue = append(queue, next[e])
		}
	}
	for i, t := range next {
		v := t * int32(nc) << 1
		if m.own[t] >= 0 || m.dict[t] >= 0 {
			v |= 1
		}
		next[i] = v
	}
	m.next = next
	return m
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lower(b[j])
			}
			return string(b)
		}
	}
	return s
}

// emit calls fn for every keyword ending in state s.
func (m *matcher) emit(s int32, fn func(id int32) bool) bool {
	for ; s >= 0; s = m.dict[s] {
		for id := m.own[s]; id >= 0; id = m.sameEnd[id] {
			if !fn(id) {
				return false
			}
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// scan calls fn for every keyword occurrence in b (overlapping ones included), in order of
// their end, with the keyword's id and its end offset; fn returns false to stop.
//
// Each step of the automaton waits for the previous one's table load, so one walk
// through the text runs at the latency of a load per byte. Beyond a few kilobytes, scan
// walks four quarters of b at once, whose loads overlap: each quarter but the first
// starts in the state the automaton has there, got by walking the maxLen bytes before it,
// and the quarters' hits are collected, then reported in order.
func (m *matcher) scan(b []byte, fn func(id int32, end int) bool) {
	if len(b) < interleaveMin || len(b) > math.MaxInt32 {
		m.scanOne(b, fn)
		return
	}
	var hits [4][]kwHit
	q := len(b) / 4
	var rows [4]int32
	for k := 1; k < 4; k++ {
		rows[k] = m.walk(b[k*q-min(k*q, m.maxLen) : k*q])
		hits[k] = make([]kwHit, 0, q/64)
	}
	hits[0] = make([]kwHit, 0, q/64)
	next, class := m.next, &m.class
	b0, b1, b2, b3 := b[:q], b[q:2*q], b[2*q:3*q], b[3*q:4*q]
	r0, r1, r2, r3 := rows[0], rows[1], rows[2], rows[3]
	for i := range b0 {
		v0 := next[r0+int32(class[b0[i]])]
		v1 := next[r1+int32(class[b1[i]])]
		v2 := next[r2+int32(class[b2[i]])]
		v3 := next[r3+int32(class[b3[i]])]
		r0, r1, r2, r3 = v0>>1, v1>>1, v2>>1, v3>>1
		if (v0|v1|v2|v3)&1 != 0 {
			if v0&1 != 0 {
				hits[0] = append(hits[0], kwHit{int32(i + 1), r0})
			}
			if v1&1 != 0 {
				hits[1] = append(hits[1], kwHit{int32(q + i + 1), r1})
			}
			if v2&1 != 0 {
				hits[2] = append(hits[2], kwHit{int32(2*q + i + 1), r2})
			}
			if v3&1 != 0 {
				hits[3] = append(hits[3], kwHit{int32(3*q + i + 1), r3})
			}
		}
	}
	// The last quarter takes the bytes the division left over.
	for i := 4 * q; i < len(b); i++ {
		v := next[r3+int32(class[b[i]])]
		r3 = v >> 1
		if v&1 != 0 {
			hits[3] = append(hits[3], kwHit{int32(i + 1), r3})
		}
	}
	nc := int32(m.nclass)
	for _, hs := range hits {
		for _, h := range hs {
			end := int(h.end)
			if !m.emit(h.row/nc, func(id int32) bool { return fn(id, end) }) {
				return
			}
		}
	}
}

// interleaveMin is the input size from which scan walks four streams.
const interleaveMin = 4 << 10

// kwHit is a position where keywords end, and the automaton's row there.
type kwHit struct{ end, row int32 }

// scanOne is scan in one walk.
func (m *matcher) scanOne(b []byte, fn func(id int32, end int) bool) {
	nc := int32(m.nclass)
	next, class := m.next, &m.class
	row := int32(0)
	for i := 0; i < len(b); i++ {
		v := next[row+int32(class[b[i]])]
		row = v >> 1
		if v&1 != 0 {
			end := i + 1
			if !m.emit(row/nc, func(id int32) bool { return fn(id, end) }) {
				return
			}
		}
	}
}

// walk returns the automaton's row after b, from the start state.
func (m *matcher) walk(b []byte) int32 {
	row := int32(0)
	for _, c := range b {
		row = m.next[row+int32(m.class[c])] >> 1
	}
	return row
}

// containsAny reports whether s contains any keyword.
func (m *matcher) containsAny(s string) bool {
	row := int32(0)
	for i := 0; i < len(s); i++ {
		v := m.next[row+int32(m.class[s[i]])]
		if v&1 != 0 {
			return true
		}
		row = v >> 1
	}
	return false
}

// scanString calls fn with the id of every keyword occurrence in s until fn returns false.
func (m *matcher) scanString(s string, fn func(id int32) bool) {
	nc := int32(m.nclass)
	row := int32(0)
	for i := 0; i < len(s); i++ {
		v := m.next[row+int32(m.class[s[i]])]
		row = v >> 1
		if v&1 != 0 && !m.emit(row/nc, fn) {
			return
		}
	}
}

// wordSet answers "does s contain one of these words", ASCII case-insensitively, for long
// word lists checked against short strings (gitleaks' 1,446 stopwords against a secret):
// an Aho-Corasick automaton kept sparse (children as sibling lists, no maps), because a
// full DFA over so many words costs milliseconds to build, in every sandbox process, and
// only a few candidates are ever checked.
type wordSet struct {
	first, sibling []int32 // first child, next sibling; -1 for none
	label          []byte
	fail           []int32
	term           []bool // a word ends here or at a suffix of here
	// root is the start state's transitions, the one state with dozens of children,
	// where a scan spends most of its steps.
	root [256]int32
}

func newWordSet(words []string) *wordSet {
	n := 1
	for _, w := range words {
		n += len(w)
	}
	ws := &wordSet{
		first: make([]int32, 1, n), sibling: make([]int32, 1, n), label: make([]byte, 1, n),
		fail: make([]int32, 1, n), term: make([]bool, 1, n),
	}
	ws.first[0], ws.sibling[0] = -1, -1
	for _, w := range words {
		if w == "" {
			continue
		}
		s := int32(0)
		for i := 0; i < len(w); i++ {
			c := lower(w[i])
			t := ws.child(s, c)
			if t < 0 {
				t = int32(len(ws.first))
				ws.first = append(ws.first, -1)
				ws.sibling = append(ws.sibling, ws.first[s])
				ws.label = append(ws.label, c)
				ws.fail = append(ws.fail, 0)
				ws.term = append(ws.term, false)
				ws.first[s] = t
			}
			s = t
		}
		ws.term[s] = true
	}
	queue := make([]int32, 0, len(ws.first))
	for t := ws.first[0]; t >= 0; t = ws.sibling[t] {
		queue = append(queue, t)
	}
	for c := range ws.root {
		ws.root[c] = max(0, ws.child(0, byte(c)))
	}
	for qi := 0; qi < len(queue); qi++ {
		s := queue[qi]
		ws.term[s] = ws.term[s] || ws.term[ws.fail[s]]
		for t := ws.first[s]; t >= 0; t = ws.sibling[t] {
			ws.fail[t] = ws.step(ws.fail[s], ws.label[t])
			queue = append(queue, t)
		}
	}
	return ws
}

func (ws *wordSet) child(s int32, c byte) int32 {
	for t := ws.first[s]; t >= 0; t = ws.sibling[t] {
		if ws.label[t] == c {
			return t
		}
	}
	return -1
}

// step follows c from state s, through failure links.
func (ws *wordSet) step(s int32, c byte) int32 {
	for s != 0 {
		if t := ws.child(s, c); t >= 0 {
			return t
		}
		s = ws.fail[s]
	}
	return ws.root[c]
}

func (ws *wordSet) containsAny(s string) bool {
	st := int32(0)
	for i := 0; i < len(s); i++ {
		st = ws.step(st, lower(s[i]))
		if ws.term[st] {
			return true
		}
	}
	return false
}
