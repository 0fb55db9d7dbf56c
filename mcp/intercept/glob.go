package intercept

import (
	"fmt"
	"unicode/utf8"
)

// glob is a compiled name pattern: '*' matches any run of characters ('/'
// included, so "tools/*" and "*" both match "tools/call"), '?' one character,
// and '\' makes the next character literal. Everything else matches itself,
// case-sensitively, as MCP method and tool names are.
type glob struct {
	src   string
	parts []globPart
}

type globPart struct {
	star bool // '*'
	any  bool // '?'
	lit  byte // one literal byte
}

func compileGlob(src string) (*glob, error) {
	if !utf8.ValidString(src) {
		return nil, fmt.Errorf("pattern %q is not valid UTF-8", src)
	}
	g := &glob{src: src}
	var lit []byte
	// Literal text becomes one part per byte, which keeps the matcher the
	// simple single-character one.
	flush := func() {
		for _, c := range lit {
			g.parts = append(g.parts, globPart{lit: c})
		}
		lit = nil
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '*':
			flush()
			if n := len(g.parts); n == 0 || !g.parts[n-1].star {
				g.parts = append(g.parts, globPart{star: true})
			}
		case '?':
			flush()
			g.parts = append(g.parts, globPart{any: true})
		case '\\':
			if i+1 >= len(src) {
				return nil, fmt.Errorf("pattern %q ends in a lone '\\'", src)
			}
			i++
			lit = append(lit, src[i])
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return g, nil
}

// match reports whether s matches the whole pattern. It is the classic
// wildcard matcher that backtracks only to the last '*' seen, so it takes
// O(len(s) * len(pattern)) at worst whatever the pattern: method and tool
// names come from the other side and may be long.
func (g *glob) match(s string) bool {
	parts := g.parts
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(parts) {
			switch p := parts[pi]; {
			case p.star:
				starP, starS = pi, si
				pi++
				continue
			case p.any:
				_, n := utf8.DecodeRuneInString(s[si:])
				si += n
				pi++
				continue
			case s[si] == p.lit:
				si++
				pi++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last '*' take one more character and retry from there.
		_, n := utf8.DecodeRuneInString(s[starS:])
		starS += n
		si = starS
		pi = starP + 1
	}
	for pi < len(parts) && parts[pi].star {
		pi++
	}
	return pi == len(parts)
}
