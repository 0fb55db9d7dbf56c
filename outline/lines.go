package outline

import (
	"regexp"
	"strings"
)

// pattern finds one kind of definition on a line; the name is the regexp's
// submatch named "name". Patterns run on a line with its indentation, so
// that they can ask for column 0 (C's function definitions).
type pattern struct {
	kind string
	re   *regexp.Regexp
	// inClass: the pattern names a method, and matches only directly inside
	// a class-like block (a class, impl or trait).
	inClass bool
	// classLike: the definition opens a block whose direct children are
	// methods.
	classLike bool
	// body: the definition must open a block, on its line or the next
	// non-blank one (a C prototype ends in ';', a definition does not).
	body bool
}

func p(kind, re string) pattern { return pattern{kind: kind, re: regexp.MustCompile(re)} }

var (
	jsFunc     = p("func", `^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(?P<name>[\w$]+)`)
	jsClass    = pattern{kind: "class", re: regexp.MustCompile(`^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(?P<name>[\w$]+)`), classLike: true}
	jsArrow    = p("func", `^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>[\w$]+)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:\([^)]*\)|[\w$]+)\s*(?::\s*[^=]+)?=>`)
	jsFuncExpr = p("func", `^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>[\w$]+)\s*=\s*(?:async\s+)?function\b`)
	jsMethod   = pattern{kind: "method", re: regexp.MustCompile(`^\s+(?:(?:static|async|public|private|protected|readonly|override|get|set|abstract)\s+)*\*?(?P<name>#?[\w$]+)\s*(?:<[^>]*>)?\([^)]*\)?\s*(?::\s*[^{;=]+)?\{?\s*$`), inClass: true}
	tsIface    = p("interface", `^\s*(?:export\s+)?(?:declare\s+)?interface\s+(?P<name>[\w$]+)`)
	tsType     = p("type", `^\s*(?:export\s+)?(?:declare\s+)?type\s+(?P<name>[\w$]+)\s*(?:<[^>]*>)?\s*=`)
	tsEnum     = p("enum", `^\s*(?:export\s+)?(?:declare\s+)?(?:const\s+)?enum\s+(?P<name>[\w$]+)`)

	pyDef   = p("func", `^\s*(?:async\s+)?def\s+(?P<name>\w+)\s*\(`)
	pyClass = pattern{kind: "class", re: regexp.MustCompile(`^\s*class\s+(?P<name>\w+)\s*[(:]`), classLike: true}

	rsFn     = pattern{kind: "func", re: regexp.MustCompile(`^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|default)\s+)*(?:extern\s+"[^"]*"\s+)?fn\s+(?P<name>\w+)`)}
	rsStruct = p("struct", `^\s*(?:pub(?:\([^)]*\))?\s+)?struct\s+(?P<name>\w+)`)
	rsEnum   = p("enum", `^\s*(?:pub(?:\([^)]*\))?\s+)?enum\s+(?P<name>\w+)`)
	rsTrait  = pattern{kind: "trait", re: regexp.MustCompile(`^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?trait\s+(?P<name>\w+)`), classLike: true}
	rsImpl   = pattern{kind: "impl", re: regexp.MustCompile(`^\s*(?:unsafe\s+)?impl\b(?:\s*<[^{]*?>)?\s+(?P<name>[^{]+?)\s*(?:where\b.*)?\{?\s*$`), classLike: true}
	rsMod    = p("mod", `^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(?P<name>\w+)\s*\{`)
	rsType   = p("type", `^\s*(?:pub(?:\([^)]*\))?\s+)?type\s+(?P<name>\w+)`)
	rsConst  = p("const", `^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const|static)\s+(?:mut\s+)?(?P<name>[A-Z_][A-Z0-9_]*)\s*:`)
	rsMacro  = p("macro", `^\s*macro_rules!\s*(?P<name>\w+)`)

	javaType   = pattern{kind: "class", re: regexp.MustCompile(`^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|protected|internal|static|final|abstract|sealed|non-sealed|partial|open|data|inner|enum|annotation|readonly|unsafe|file)\s+)*(?P<kind>class|interface|enum|record|object|struct)\s+(?P<name>\w+)`), classLike: true}
	javaMethod = pattern{kind: "method", re: regexp.MustCompile(`^\s+(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|protected|internal|static|final|abstract|synchronized|native|default|override|virtual|async|sealed|extern|unsafe|new|strictfp)\s+)*(?:<[^>]*>\s+)?[\w<>\[\],.?]+(?:\s*<[^>]*>)?(?:\[\])*\s+(?P<name>\w+)\s*\([^;]*$`), inClass: true}
	javaCtor   = pattern{kind: "method", re: regexp.MustCompile(`^\s+(?:(?:public|private|protected|internal)\s+)(?P<name>[A-Z]\w*)\s*\([^;]*$`), inClass: true}
	ktFun      = p("func", `^\s*(?:(?:public|private|protected|internal|override|open|abstract|suspend|inline|operator|infix|tailrec|private)\s+)*fun\s+(?:<[^>]*>\s*)?(?:[\w.<>]+\.)?(?P<name>\w+)\s*\(`)

	cFunc   = pattern{kind: "func", re: regexp.MustCompile(`^(?:[A-Za-z_][\w\s\*&:<>,~]*?[\s\*&])?(?P<name>~?[A-Za-z_][\w]*(?:::~?[A-Za-z_]\w*)*|operator\s*\S+)\s*\([^;]*$`), body: true}
	cType   = pattern{kind: "struct", re: regexp.MustCompile(`^\s*(?:typedef\s+)?(?:template\s*<[^>]*>\s*)?(?P<kind>struct|class|enum(?:\s+class)?|union|namespace)\s+(?:\[\[[^\]]*\]\]\s*)?(?P<name>\w+)(?:[^;]*$|\s*\{.*)`), classLike: true}
	cMethod = pattern{kind: "method", re: regexp.MustCompile(`^\s+(?:(?:virtual|static|inline|explicit|constexpr|friend)\s+)*(?:[\w:<>,\*&~]+\s+)*[\*&]?(?P<name>~?[A-Za-z_]\w*|operator\s*\S+)\s*\([^;]*\)\s*(?:const\s*)?(?:override\s*)?(?:noexcept\s*)?\{`), inClass: true}

	goFunc  = p("func", `^func\s+(?:\([^)]*\)\s*)?(?P<name>\w+)`)
	goType  = p("type", `^type\s+(?P<name>\w+)`)
	goValue = p("var", `^(?P<kind>var|const)\s+(?P<name>\w+)`)
)

var patterns = map[string][]pattern{
	"go":         {goFunc, goType, goValue},
	"python":     {pyClass, pyDef},
	"javascript": {jsClass, jsFunc, jsArrow, jsFuncExpr, jsMethod},
	"typescript": {jsClass, jsFunc, jsArrow, jsFuncExpr, tsIface, tsType, tsEnum, jsMethod},
	"rust":       {rsImpl, rsTrait, rsStruct, rsEnum, rsMod, rsType, rsConst, rsMacro, rsFn},
	"java":       {javaType, javaCtor, javaMethod},
	"csharp":     {javaType, javaCtor, javaMethod},
	"kotlin":     {javaType, ktFun},
	"c":          {cType, cFunc},
	"cpp":        {cType, cMethod, cFunc},
}

// keywords are words a method or function pattern may take for a name in
// a statement ("if (x) {", "return f(x);").
var keywords = map[string]bool{
	"if": true, "else": true, "for": true, "while": true, "switch": true, "catch": true, "return": true,
	"do": true, "try": true, "new": true, "throw": true, "sizeof": true, "case": true, "function": true,
	"with": true, "synchronized": true, "foreach": true, "using": true, "lock": true, "await": true, "typeof": true,
	"defined": true, "elif": true, "when": true, "super": true, "this": true, "constructor": false,
}

// block is an open class-like definition: its methods are one level in.
type block struct {
	depth  int  // brace depth inside it
	indent int  // python: the class line's indentation
	opened bool // its '{' has been seen (it may come on the next line)
}

// lineDefs finds definitions line by line. Brace languages track the brace
// depth (outside comments and strings) to know nesting; Python tracks
// indentation.
func lineDefs(lang string, src []byte) []Def {
	pats := patterns[lang]
	python := lang == "python"
	lines := splitLines(src)
	var defs []Def
	var classes []block
	var sc lexState
	depth := 0
	for i, raw := range lines {
		line := string(raw)
		startDepth := depth
		code := sc.code(line, python) // the line without comments and strings
		if !python {
			depth = max(depth+strings.Count(code, "{")-strings.Count(code, "}"), 0)
		}
		if strings.TrimSpace(code) == "" || sc.startedInside {
			if !python {
				markOpened(classes, depth)
			}
			continue
		}
		indent := indentOf(line)
		d := startDepth
		if python {
			for len(classes) > 0 && indent <= classes[len(classes)-1].indent {
				classes = classes[:len(classes)-1]
			}
			d = indent / 4
			if indent%4 != 0 { // two-space or tab indentation
				d = len(classes)
			}
		} else {
			for len(classes) > 0 && classes[len(classes)-1].opened && startDepth < classes[len(classes)-1].depth {
				classes = classes[:len(classes)-1]
			}
		}
		inClass := len(classes) > 0 && (python && indent > classes[len(classes)-1].indent || !python && startDepth == classes[len(classes)-1].depth)
		for _, pt := range pats {
			if pt.inClass && !inClass {
				continue
			}
			if pt.body && !opensBody(code, lines, i) {
				continue
			}
			m := pt.re.FindStringSubmatch(code)
			if m == nil {
				continue
			}
			name := m[pt.re.SubexpIndex("name")]
			if keywords[name] {
				continue
			}
			kind := pt.kind
			if k := pt.re.SubexpIndex("kind"); k >= 0 && m[k] != "" {
				kind = strings.Fields(m[k])[0]
			}
			if python && kind == "func" && inClass {
				kind = "method"
			}
			if lang == "rust" && kind == "func" && inClass {
				kind = "method"
			}
			if lang == "kotlin" && kind == "func" && inClass {
				kind = "method"
			}
			defs = append(defs, Def{Line: i + 1, Kind: kind, Name: strings.TrimSpace(name), Depth: d, Sig: trimSig(raw)})
			if pt.classLike && kind != "namespace" {
				switch {
				case python:
					classes = append(classes, block{indent: indent})
				case strings.Contains(code, "{") && depth <= startDepth:
					// Opened and closed on its line: no members to come.
				default:
					// Its members are one level in, whether its brace is on
					// this line or the next.
					classes = append(classes, block{depth: startDepth + 1})
				}
			}
			break
		}
		markOpened(classes, depth)
	}
	return defs
}

// markOpened notes the blocks whose brace the depth shows open, so that
// their end can be told from the line before their brace.
func markOpened(classes []block, depth int) {
	for i := range classes {
		if depth >= classes[i].depth {
			classes[i].opened = true
		}
	}
}

// opensBody reports whether a C function header on line i opens a body: a
// '{' on it or on the next non-blank line, before any ';'.
func opensBody(code string, lines [][]byte, i int) bool {
	if strings.Contains(code, "{") {
		return true
	}
	for j := i + 1; j < len(lines) && j <= i+8; j++ {
		t := strings.TrimSpace(string(lines[j]))
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "{"):
			return true
		case strings.Contains(t, ";") || strings.HasPrefix(t, "#"):
			return false
		case strings.Contains(t, "{"):
			return !strings.Contains(t, ")") || strings.HasSuffix(t, "{")
		}
	}
	return false
}

func indentOf(l string) int {
	n := 0
	for _, c := range l {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// lexState carries a block comment or a Python triple-quoted string from
// one line to the next.
type lexState struct {
	inComment     bool   // inside /* */
	inTriple      string // inside a Python """ or ''' string
	startedInside bool   // the last line began inside one of them
}

// code returns line with comments and string literals blanked out (so that
// braces and keywords in them are not taken for code), updating the state.
func (s *lexState) code(line string, python bool) string {
	s.startedInside = s.inComment || s.inTriple != ""
	var b strings.Builder
	for i := 0; i < len(line); {
		switch {
		case s.inComment:
			j := strings.Index(line[i:], "*/")
			if j < 0 {
				return b.String()
			}
			i += j + 2
			s.inComment = false
			b.WriteByte(' ')
		case s.inTriple != "":
			j := strings.Index(line[i:], s.inTriple)
			if j < 0 {
				return b.String()
			}
			i += j + 3
			s.inTriple = ""
			b.WriteString(`""`)
		case python && line[i] == '#':
			return b.String()
		case !python && strings.HasPrefix(line[i:], "//"):
			return b.String()
		case !python && strings.HasPrefix(line[i:], "/*"):
			s.inComment = true
			i += 2
		case python && (strings.HasPrefix(line[i:], `"""`) || strings.HasPrefix(line[i:], `'''`)):
			s.inTriple = line[i : i+3]
			i += 3
		case line[i] == '"' || line[i] == '`' || line[i] == '\'' && python:
			q := line[i]
			j := i + 1
			for j < len(line) && line[j] != q {
				if line[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString(`""`)
			i = j + 1
		case line[i] == '\'' && !python:
			// A char literal ('{', '\n'), or a Rust lifetime ('a): skip a
			// literal only when it closes within four bytes.
			if j := strings.IndexByte(line[i+1:min(i+5, len(line))], '\''); j >= 0 {
				b.WriteString("' '")
				i += j + 2
				continue
			}
			b.WriteByte(line[i])
			i++
		default:
			b.WriteByte(line[i])
			i++
		}
	}
	return b.String()
}
