package scrub

import (
	"regexp/syntax"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// prefixDFA answers one question about a regex that starts with ^: does it match some
// prefix of a text? It answers as the regexp package's Match would, with the text's start
// and end as the start and end of text, but by running a DFA built lazily from the
// regex's compiled program (each state a set of the program's threads), so that a hit
// that leads nowhere costs a table load per byte until its state dies, instead of a
// backtracker or NFA set up per call. Most keyword hits die within a few bytes.
//
// States are built on first use and shared by all goroutines: a transition, once
// computed, is read without locking. Past maxDFAStates states no new ones are made and
// match reports that it cannot tell; the caller then runs the regex.
type prefixDFA struct {
	src    string
	prog   *syntax.Prog
	limit  int                  // on the number of states
	class  [utf8.RuneSelf]uint8 // ASCII byte -> class of bytes the program cannot tell apart
	nclass int
	// accepts tells, by program counter, the classes a rune instruction consumes.
	accepts [][2]uint64
	start   *dstate
	// past is true for the DFA that reach uses: a match does not end the walk.
	past bool
	// pastDFA is that DFA, made from this one on first use.
	pastOnce sync.Once
	pastDFA  *prefixDFA

	mu      sync.Mutex         // guards what follows, and the creation of transitions
	states  map[uint64]*dstate // by a hash of their threads, chained through link
	nstates int
	// Blocks new states and their slices are carved from.
	stateBlock []dstate
	nextBlock  []atomic.Pointer[dstate]
	pcBlock    []uint32
	// Scratch space for steps: a generation mark per instruction, a stack, the rune
	// instructions reached and the threads after the rune.
	mark         []uint32
	gen          uint32
	stack, runes []uint32
	after        []uint32
}

// dstate is a DFA state: the program counters of the threads waiting to consume the next
// rune (before their empty-width steps, which depend on that rune), and the kind of rune
// before it, which \b, ^ and $ need.
type dstate struct {
	pcs  []uint32
	prev uint8
	next []atomic.Pointer[dstate] // by class of the next ASCII byte
	end  atomic.Int32             // at end of text: 0 unknown, 1 no match, 2 match
	link *dstate                  // the next state with the same hash
}

// Kinds of the rune before a position.
const (
	prevStart uint8 = iota // no rune: start of text
	prevNL
	prevWord
	prevOther
)

// A representative rune of each kind, for syntax.EmptyOpContext.
var prevRune = [...]rune{prevStart: -1, prevNL: '\n', prevWord: 'a', prevOther: ' '}

func runeKind(r rune) uint8 {
	switch {
	case r == '\n':
		return prevNL
	case syntax.IsWordChar(r):
		return prevWord
	}
	return prevOther
}

// Terminal states.
var (
	dfaMatch = &dstate{}
	dfaDead  = &dstate{}
)

// reachMax bounds the walk of reach: past it the regex runs on the whole text.
const reachMax = 4 << 10

// maxDFAStates bounds each DFA, which lives as long as its rule (the default rules', as
// long as the process: the daemon's for its life), at a few hundred bytes a state. The
// relaxed generic-api-key, among the largest, has 165 states after the benchmark's
// 4.7 MB corpus.
const maxDFAStates = 2048

// newPrefixDFA compiles src, which must start with ^ (outside any group), as the regexp
// package does (Perl syntax, simplified).
func newPrefixDFA(src string) (*prefixDFA, error) {
	tree, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, err
	}
	d := &prefixDFA{src: src, prog: prog, limit: maxDFAStates, states: map[uint64]*dstate{}, mark: make([]uint32, len(prog.Inst))}
	d.classify()
	d.start = d.state([]uint32{uint32(prog.Start)}, prevStart)
	return d, nil
}

// classify groups the ASCII bytes that every rune instruction treats alike and that are
// alike for the empty-width assertions (word byte, newline), and notes which classes
// each rune instruction accepts. It runs in every sandbox process that meets the rule,
// so each distinct rune set is tested once against the 128 bytes: a counted repeat
// compiles to as many instructions as its count, all with the same set.
func (d *prefixDFA) classify() {
	type byteSet [2]uint64
	setOf := map[string]int{} // rune set (as its instruction's op, flags and ranges) -> index in sets
	var sets []byteSet
	instSet := make([]int32, len(d.prog.Inst)) // -1: not a rune instruction
	var key []byte
	for pc := range d.prog.Inst {
		in := &d.prog.Inst[pc]
		instSet[pc] = -1
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
		default:
			continue
		}
		key = append(key[:0], byte(in.Op), byte(in.Arg&uint32(syntax.FoldCase)))
		for _, r := range in.Rune {
			key = append(key, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
		}
		i, ok := setOf[string(key)]
		if !ok {
			var bs byteSet
			for c := rune(0); c < utf8.RuneSelf; c++ {
				if in.MatchRune(c) {
					bs[c>>6] |= 1 << (c & 63)
				}
			}
			i = len(sets)
			setOf[string(key)] = i
			sets = append(sets, bs)
		}
		instSet[pc] = int32(i)
	}
	sigs := map[string]uint8{}
	sig := make([]byte, len(sets)+1)
	var rep []rune // a byte of each class
	for c := rune(0); c < utf8.RuneSelf; c++ {
		sig[0] = runeKind(c)
		for i, bs := range sets {
			sig[i+1] = byte(bs[c>>6] >> (c & 63) & 1)
		}
		k, ok := sigs[string(sig)]
		if !ok {
			k = uint8(len(sigs))
			sigs[string(sig)] = k
			rep = append(rep, c)
		}
		d.class[c] = k
	}
	d.nclass = len(sigs)
	// accepts[pc] has bit k set when instruction pc consumes the bytes of class k.
	d.accepts = make([][2]uint64, len(d.prog.Inst))
	for pc, si := range instSet {
		if si < 0 {
			continue
		}
		bs := sets[si]
		for k, c := range rep {
			if bs[c>>6]>>(c&63)&1 != 0 {
				d.accepts[pc][k>>6] |= 1 << (k & 63)
			}
		}
	}
}

// state returns the state for a set of threads (sorted, without repeats), making it if
// needed; nil when the DFA is full. d.mu is held, or d is being built. States and their
// slices are carved from blocks: a sandbox process makes hundreds of them.
func (d *prefixDFA) state(pcs []uint32, prev uint8) *dstate {
	if len(pcs) == 0 {
		return dfaDead
	}
	h := uint64(prev) + 1
	for _, pc := range pcs {
		h = (h ^ uint64(pc)) * 0x100000001b3
	}
	for s := d.states[h]; s != nil; s = s.link {
		if s.prev == prev && slices.Equal(s.pcs, pcs) {
			return s
		}
	}
	if d.nstates >= d.limit {
		return nil
	}
	d.nstates++
	// Blocks grow with the DFA: most DFAs of a sandbox process have a few states.
	n := min(64, max(4, d.nstates))
	if len(d.stateBlock) == 0 {
		d.stateBlock = make([]dstate, n)
	}
	st := &d.stateBlock[0]
	d.stateBlock = d.stateBlock[1:]
	if len(d.nextBlock) < d.nclass {
		d.nextBlock = make([]atomic.Pointer[dstate], n*d.nclass)
	}
	st.next, d.nextBlock = d.nextBlock[:d.nclass:d.nclass], d.nextBlock[d.nclass:]
	if len(d.pcBlock) < len(pcs) {
		d.pcBlock = make([]uint32, max(16*n, len(pcs)))
	}
	st.pcs, d.pcBlock = d.pcBlock[:len(pcs):len(pcs)], d.pcBlock[len(pcs):]
	copy(st.pcs, pcs)
	st.prev = prev
	st.link = d.states[h]
	d.states[h] = st
	return st
}

// closure follows the empty steps of s's threads where the assertions hold under flags,
// and returns the rune instructions reached, or matched when the program's match is.
func (d *prefixDFA) closure(s *dstate, flags syntax.EmptyOp) (runes []uint32, matched bool) {
	d.gen++
	if d.gen == 0 {
		clear(d.mark)
		d.gen = 1
	}
	runes = d.runes[:0]
	stack := append(d.stack[:0], s.pcs...)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d.mark[pc] == d.gen {
			continue
		}
		d.mark[pc] = d.gen
		in := &d.prog.Inst[pc]
		switch in.Op {
		case syntax.InstMatch:
			if !d.past {
				d.stack, d.runes = stack, runes
				return nil, true
			}
			matched = true
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.Arg, in.Out)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, in.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^flags == 0 {
				stack = append(stack, in.Out)
			}
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			runes = append(runes, pc)
		}
	}
	d.stack, d.runes = stack, runes
	return runes, matched
}

// step computes s's transition on r: dfaMatch if the program matches before r, dfaDead
// if no thread survives r, nil if the DFA is full.
func (d *prefixDFA) step(s *dstate, r rune) *dstate {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r < utf8.RuneSelf {
		if t := s.next[d.class[r]].Load(); t != nil {
			return t
		}
	}
	runes, matched := d.closure(s, syntax.EmptyOpContext(prevRune[s.prev], r))
	var t *dstate
	if matched && !d.past {
		t = dfaMatch
	} else {
		pcs := d.after[:0]
		k := int(d.class[r&0x7f])
		for _, pc := range runes {
			in := &d.prog.Inst[pc]
			var ok bool
			if r < utf8.RuneSelf {
				ok = d.accepts[pc][k>>6]>>(k&63)&1 != 0
			} else {
				ok = in.MatchRune(r)
			}
			if ok {
				pcs = append(pcs, in.Out)
			}
		}
		d.after = pcs
		slices.Sort(pcs)
		t = d.state(slices.Compact(pcs), runeKind(r))
	}
	if t != nil && r < utf8.RuneSelf {
		s.next[d.class[r]].Store(t)
	}
	return t
}

// atEnd reports whether the program matches at the end of the text in state s.
func (d *prefixDFA) atEnd(s *dstate) bool {
	switch s.end.Load() {
	case 1:
		return false
	case 2:
		return true
	}
	d.mu.Lock()
	_, matched := d.closure(s, syntax.EmptyOpContext(prevRune[s.prev], -1))
	d.mu.Unlock()
	v := int32(1)
	if matched {
		v = 2
	}
	s.end.Store(v)
	return matched
}

// match reports whether the regex matches a prefix of text; ok is false when the DFA grew
// too large to tell. With lines > 0, text ends after its lines-th newline, if it has
// that many (as if cut there, without a pass to find where).
func (d *prefixDFA) match(text []byte, lines int) (matched, ok bool) {
	s := d.start
	for i := 0; i < len(text); {
		c := text[i]
		var t *dstate
		if c < utf8.RuneSelf {
			t = s.next[d.class[c]].Load()
			if t == nil {
				t = d.step(s, rune(c))
			}
			i++
			if c == '\n' {
				if lines--; lines == 0 && t != nil && t != dfaMatch && t != dfaDead {
					return d.atEnd(t), true
				}
			}
		} else {
			// As the regexp package reads text: invalid UTF-8 is U+FFFD, one byte wide.
			r, n := utf8.DecodeRune(text[i:])
			t = d.step(s, r)
			i += n
		}
		switch t {
		case nil:
			return false, false
		case dfaMatch:
			return true, true
		case dfaDead:
			return false, true
		}
		s = t
	}
	return d.atEnd(s), true
}

// reach returns how much of text the regex can see the end of: every match of it that
// starts at text's start ends before the first rune no thread of the program can consume,
// so text cut after that rune (kept, as the context \b and $ look at) has the same
// matches. It is len(text) when threads live to the end, or past reachMax bytes (a PEM
// block's [\s\S]* lives to the end of the window), or when the DFA is full.
func (d *prefixDFA) reach(text []byte) int {
	d.pastOnce.Do(func() {
		p := &prefixDFA{src: d.src, prog: d.prog, limit: d.limit, class: d.class, nclass: d.nclass, accepts: d.accepts,
			past: true, states: map[uint64]*dstate{}, mark: make([]uint32, len(d.prog.Inst))}
		p.start = p.state([]uint32{uint32(d.prog.Start)}, prevStart)
		d.pastDFA = p
	})
	p := d.pastDFA
	s := p.start
	for i := 0; i < min(len(text), reachMax); {
		c := text[i]
		var t *dstate
		n := 1
		if c < utf8.RuneSelf {
			t = s.next[p.class[c]].Load()
			if t == nil {
				t = p.step(s, rune(c))
			}
		} else {
			var r rune
			r, n = utf8.DecodeRune(text[i:])
			t = p.step(s, r)
		}
		switch t {
		case nil:
			return len(text)
		case dfaDead:
			return i + n
		}
		s = t
		i += n
	}
	return len(text)
}
