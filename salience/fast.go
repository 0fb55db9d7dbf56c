package salience

import (
	"bytes"
	"math/bits"
	"slices"
	"strings"
)

// The fast path of Scanner.Write: rather than look for every rule's key at
// every byte of every line, it finds the keys in the whole chunk with
// vectorized byte searches (bytes.IndexByte on each key's rarest byte),
// and then gives each line only the rules whose key it holds or whose
// prefix its first byte could start. Lines it cannot vouch for (escape
// sequences, carriage returns, lines split across writes, overlong lines)
// go through the matcher as before. The result is the same as the
// matcher's line by line; TestFastMatchesSlow checks it.

// fastKey is a Contains key of the rules indexed by gram, or "PASSED" for
// quiet.
type fastKey struct {
	key   string
	rules []uint16
}

// anchor is a byte to search a chunk for, and the keys holding it.
type anchor struct {
	b    byte
	keys []anchorKey
}

type anchorKey struct {
	id  uint16 // index in Set.keys
	off int    // where b is in the key
	// c2 is the key's byte next to b, at d2 (-1 or +1) from it: checked
	// first, it turns away most bytes that are only b.
	c2 byte
	d2 int
}

// hit is a key found in a chunk at body[start:end].
type hit struct {
	start, end int
	id         uint16
}

type fastScratch struct {
	hits   []hit
	local  []hit
	dense  uint64 // anchors too common in the last chunk, by index
	chunks int
}

const passedKey = "PASSED"

const segment = 16 << 10

// maxLocal is how many dense anchors lines are searched for one by one;
// with more, the matcher's single pass over the line is cheaper.
var maxLocal = 0

// quietFirst are the first bytes quiet's prefixes can start with.
var quietFirst = func() (t [256]bool) {
	for _, b := range []byte{'=', '-', 0xe2, 'P', 't'} {
		t[b] = true
	}
	return
}()

// rarity ranks bytes by how often they appear in logs: lower is rarer.
func rarity(b byte) int {
	switch {
	case b == ' ':
		return 100
	case b >= 'a' && b <= 'z':
		return 40 + strings.IndexByte("zqxjkvbpygfwmucldrhsnioate", b)
	case b == ':':
		return 60
	case b >= '0' && b <= '9', b == '.', b == '/', b == '-', b == '=', b == ',', b == '\t':
		return 60
	case b == '_' || b == '(' || b == ')':
		return 30
	case b >= 'A' && b <= 'Z':
		return 10 + strings.IndexByte("ZQXJKVBYWGPFMUCHLDRNSIOATE", b)/2
	}
	return 5
}

// buildFast indexes the keys of the gram rules by their rarest byte.
func (s *Set) buildFast() {
	ids := map[string]uint16{}
	add := func(key string, rule int) {
		id, ok := ids[key]
		if !ok {
			id = uint16(len(s.keys))
			ids[key] = id
			s.keys = append(s.keys, fastKey{key: key})
		}
		if rule >= 0 {
			s.keys[id].rules = append(s.keys[id].rules, uint16(rule))
		}
	}
	for _, g := range s.grams {
		for _, i := range g {
			add(s.rules[i].Contains, int(i))
		}
	}
	add(passedKey, -1)
	s.passedID = ids[passedKey]
	for id, k := range s.keys {
		best := 0
		for j := 1; j < len(k.key); j++ {
			if rarity(k.key[j]) < rarity(k.key[best]) {
				best = j
			}
		}
		b := k.key[best]
		ai := slices.IndexFunc(s.anchors, func(a anchor) bool { return a.b == b })
		if ai < 0 {
			s.anchors = append(s.anchors, anchor{b: b})
			ai = len(s.anchors) - 1
		}
		d2 := 1
		if best+1 == len(k.key) {
			d2 = -1
		}
		s.anchors[ai].keys = append(s.anchors[ai].keys, anchorKey{id: uint16(id), off: best, c2: k.key[best+d2], d2: d2})
	}
}

// findKeys returns where the keys occur in body, in order of start. An
// anchor byte so common in body that searching the chunk for it costs more
// than looking for it in the few lines that need it is left out of hits
// and marked in dense instead; so is one that was dense in the last chunk,
// but for every eighth chunk, which tries it again.
func (s *Set) findKeys(body []byte, f *fastScratch) {
	hits := f.hits[:0]
	sorted := true
	budget := len(body)/256 + 16
	f.chunks++
	probe := f.chunks%8 == 0
	if !probe && bits.OnesCount64(f.dense) > maxLocal {
		// Lines will be matched one by one: the keys are not needed.
		f.hits = hits
		return
	}
	var dense uint64
	for ai := range s.anchors {
		a := &s.anchors[ai]
		bit := uint64(1) << (ai % 64)
		if ai >= 64 || (!probe && f.dense&bit != 0) {
			dense |= bit
			continue
		}
		from := len(hits)
		seen := 0
		for off := 0; off < len(body); {
			j := bytes.IndexByte(body[off:], a.b)
			if j < 0 {
				break
			}
			if seen++; seen > budget {
				hits = hits[:from]
				dense |= bit
				if bits.OnesCount64(dense) > maxLocal {
					f.hits, f.dense = hits, dense
					return
				}
				break
			}
			pos := off + j
			hits = s.verify(body, pos, a, hits)
			off = pos + 1
		}
		if from > 0 && len(hits) > from {
			sorted = false
		}
	}
	if !sorted {
		slices.SortFunc(hits, func(a, b hit) int { return a.start - b.start })
	}
	f.hits, f.dense = hits, dense
}

// verify appends the keys of a whose anchor byte at body[pos] is theirs.
func (s *Set) verify(body []byte, pos int, a *anchor, hits []hit) []hit {
	for _, k := range a.keys {
		key := s.keys[k.id].key
		st := pos - k.off
		if st < 0 || st+len(key) > len(body) || body[pos+k.d2] != k.c2 {
			continue
		}
		if string(body[st:st+len(key)]) == key {
			hits = append(hits, hit{start: st, end: st + len(key), id: k.id})
		}
	}
	return hits
}

// localKeys returns the keys of the dense anchors in body[ls:e].
func (s *Set) localKeys(body []byte, ls, e int, dense uint64, hits []hit) []hit {
	hits = hits[:0]
	line := body[:e]
	for ai := range s.anchors {
		if ai < 64 && dense&(1<<ai) == 0 {
			continue
		}
		a := &s.anchors[ai]
		for off := ls; off < e; {
			j := bytes.IndexByte(line[off:], a.b)
			if j < 0 {
				break
			}
			hits = s.verify(line, off+j, a, hits)
			off += j + 1
		}
	}
	return hits
}

// writeFast is Write's fast path.
func (sc *Scanner) writeFast(p []byte) (int, error) {
	n := len(p)
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		sc.appendPart(p)
		return n, nil
	}
	if sc.partLen > 0 {
		sc.appendPart(p[:i+1])
		sc.line(sc.part, sc.partLen, false)
		sc.part, sc.partLen = sc.part[:0], 0
		p = p[i+1:]
	}
	end := bytes.LastIndexByte(p, '\n') + 1
	// Lines go in segments of about segment bytes, which the searches for
	// keys keep in cache.
	for body := p[:end]; len(body) > 0; {
		n := len(body)
		if n > segment {
			n = segment + bytes.IndexByte(body[segment:], '\n') + 1
		}
		sc.lines(body[:n])
		body = body[n:]
	}
	if end < len(p) {
		sc.appendPart(p[end:])
	}
	sc.release()
	return n, nil
}

// lines handles body, whole lines each ending in '\n'.
func (sc *Scanner) lines(body []byte) {
	s := sc.set
	f := &sc.fast
	// The keys are looked for from the first line that needs them on: a
	// chunk of passing tests' progress needs none.
	var hits []hit
	known, base, h, h2 := false, 0, 0, 0
	nextESC, nextCR := -1, -1
	for ls := 0; ls < len(body); {
		e := ls + bytes.IndexByte(body[ls:], '\n')
		line := body[ls : e+1]
		if nextESC < ls {
			nextESC = indexFrom(body, ls, 0x1b)
		}
		if nextCR < ls {
			nextCR = indexFrom(body, ls, '\r')
		}
		if e-ls > MaxMatchLine || nextESC < e || nextCR < e {
			sc.line(line, int64(len(line)), true)
			ls = e + 1
			continue
		}
		content := body[ls:e]
		t := trimIndent(content)
		ri, class := -1, lineClass(0)
		if len(t) > 0 {
			q := false
			if quietFirst[t[0]] {
				class, q = quietClass(t)
			}
			if !q {
				if !known {
					s.findKeys(body[ls:], f)
					hits, base, h, known = f.hits, ls, 0, true
				}
				for h < len(hits) && hits[h].start+base < ls {
					h++
				}
				h2 = h
				for h2 < len(hits) && hits[h2].start+base < e {
					h2++
				}
			}
			local := f.local[:0]
			if !q && f.dense != 0 && bits.OnesCount64(f.dense) > maxLocal {
				// Too many anchors to look for line by line: the matcher
				// looks for every key in one pass over the line.
				inBlock := sc.open != nil && !sc.openFull && sc.open.LastLine == sc.n
				ri, class = s.matchPlain(content, inBlock)
				q = true
			}
			if !q && f.dense != 0 {
				local = s.localKeys(body, ls, e, f.dense, local)
				f.local = local
			}
			if !q && (hasHit(hits[h:h2], s.passedID) || hasHit(local, s.passedID)) {
				class, q = quietClass(t)
			}
			if !q {
				inBlock := sc.open != nil && !sc.openFull && sc.open.LastLine == sc.n
				best := len(s.rules)
				for _, i := range s.byFirst[t[0]] {
					if int(i) < best && s.rules[i].matches(content, t, inBlock) {
						best = int(i)
					}
				}
				for li, l := range [2][]hit{hits[h:h2], local} {
					for _, x := range l {
						if li == 0 {
							x.end += base
						}
						if x.end > e {
							continue
						}
						for _, i := range s.keys[x.id].rules {
							if int(i) < best && s.rules[i].matches(content, t, inBlock) {
								best = int(i)
							}
						}
					}
				}
				if best < len(s.rules) {
					ri = best
				}
			}
		}
		sc.handle(line, int64(len(line)), ri, class, indented(content), true)
		ls = e + 1
	}
}

func hasHit(hits []hit, id uint16) bool {
	for _, x := range hits {
		if x.id == id {
			return true
		}
	}
	return false
}

// indexFrom returns the index of c in b from i on, or len(b).
func indexFrom(b []byte, i int, c byte) int {
	j := bytes.IndexByte(b[i:], c)
	if j < 0 {
		return len(b)
	}
	return i + j
}

// release copies the ring lines borrowed from the current Write.
func (sc *Scanner) release() {
	if !sc.borrowed {
		return
	}
	for i := range sc.ring {
		l := &sc.ring[i]
		if l.borrowed {
			l.buf = append(l.buf[:0], l.text...)
			l.text, l.borrowed = l.buf, false
		}
	}
	sc.borrowed = false
}
