package scrub

import (
	"math/rand"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// genMatch returns a random string that re can match, choosing printable ASCII where a
// class allows: fake secrets in each rule's own format, without a list written by hand.
// Empty-width assertions produce nothing; the caller supplies suitable surroundings.
func genMatch(re *syntax.Regexp, r *rand.Rand) string {
	var b strings.Builder
	genInto(&b, re, r)
	return b.String()
}

func genInto(b *strings.Builder, re *syntax.Regexp, r *rand.Rand) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && r.Intn(2) == 0 {
				c = unicode.SimpleFold(c)
				if c > unicode.MaxASCII {
					c = unicode.SimpleFold(c)
				}
			}
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		b.WriteRune(genRune(re.Rune, r))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte(byte('!' + r.Intn('~'-'!')))
	case syntax.OpCapture:
		genInto(b, re.Sub[0], r)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			genInto(b, s, r)
		}
	case syntax.OpAlternate:
		genInto(b, re.Sub[r.Intn(len(re.Sub))], r)
	case syntax.OpQuest:
		if r.Intn(2) == 0 {
			genInto(b, re.Sub[0], r)
		}
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		lo, hi := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			lo, hi = 1, 4
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 || hi > lo+12 {
				hi = lo + 12
			}
		}
		n := lo
		if hi > lo {
			n += r.Intn(hi - lo + 1)
		}
		for i := 0; i < n; i++ {
			genInto(b, re.Sub[0], r)
		}
	}
}

// genRune picks a rune of a class, preferring printable ASCII (and not a newline).
func genRune(ranges []rune, r *rand.Rand) rune {
	var ascii []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		for c := max(ranges[i], ' '); c <= min(ranges[i+1], '~'); c++ {
			ascii = append(ascii, c)
		}
	}
	if len(ascii) > 0 {
		return ascii[r.Intn(len(ascii))]
	}
	i := 2 * r.Intn(len(ranges)/2)
	c := ranges[i] + rune(r.Intn(int(min(ranges[i+1]-ranges[i], 1000))+1))
	if !utf8.ValidRune(c) {
		return ranges[i]
	}
	return c
}
