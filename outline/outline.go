// Package outline lists a source file's definitions with their line numbers, to show in place of the part of a file a read leaves out.
package outline

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Def is one definition in a source file.
type Def struct {
	Line  int    // 1-based
	Kind  string // "func", "method", "type", "class", "struct", "interface", "enum", "trait", "impl", "mod", "namespace", "const", "var"
	Name  string
	Depth int // nesting: 0 at top level, 1 for a class's method, ...
	// Sig is the definition's first source line, trimmed, when known.
	Sig string
}

// Languages by file extension.
var langs = map[string]string{
	".go": "go",
	".py": "python", ".pyi": "python",
	".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
	".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript",
	".rs":   "rust",
	".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".cs": "csharp",
	".c": "c", ".h": "c",
	".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
}

// Lang returns the language of a file by its name, or "".
func Lang(name string) string { return langs[strings.ToLower(filepath.Ext(name))] }

// Of returns the definitions in src, in line order, and its language ("" and
// no definitions for a language it does not know).
func Of(name string, src []byte) (defs []Def, lang string) {
	lang = Lang(name)
	switch lang {
	case "":
		return nil, ""
	case "go":
		defs = goDefs(src)
	default:
		defs = lineDefs(lang, src)
	}
	sort.SliceStable(defs, func(i, j int) bool { return defs[i].Line < defs[j].Line })
	// One definition a line: the first (a Go "var a, b" is one line).
	out := defs[:0]
	for _, d := range defs {
		if len(out) > 0 && out[len(out)-1].Line == d.Line {
			continue
		}
		out = append(out, d)
	}
	return out, lang
}

// goDefs uses the Go parser, which knows the language exactly; a file it
// cannot parse (cut, or mid-edit) falls back to line patterns.
func goDefs(src []byte) []Def {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil || f == nil {
		return lineDefs("go", src)
	}
	lines := splitLines(src)
	sig := func(line int) string {
		if line >= 1 && line <= len(lines) {
			return trimSig(lines[line-1])
		}
		return ""
	}
	var defs []Def
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			l := fset.Position(d.Type.Func).Line
			if d.Type.Func == token.NoPos {
				l = fset.Position(d.Name.Pos()).Line
			}
			kind, name := "func", d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				kind = "method"
				name = recvName(d.Recv.List[0].Type) + "." + name
			}
			defs = append(defs, Def{Line: l, Kind: kind, Name: name, Sig: sig(l)})
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					kind := "type"
					switch s.Type.(type) {
					case *ast.StructType:
						kind = "struct"
					case *ast.InterfaceType:
						kind = "interface"
					}
					l := fset.Position(s.Name.Pos()).Line
					defs = append(defs, Def{Line: l, Kind: kind, Name: s.Name.Name, Sig: sig(l)})
				case *ast.ValueSpec:
					kind := "var"
					if d.Tok == token.CONST {
						kind = "const"
					}
					names := make([]string, len(s.Names))
					for i, n := range s.Names {
						names[i] = n.Name
					}
					l := fset.Position(s.Names[0].Pos()).Line
					defs = append(defs, Def{Line: l, Kind: kind, Name: strings.Join(names, ", "), Sig: sig(l)})
				}
			}
		}
	}
	return defs
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.ParenExpr:
		return recvName(t.X)
	}
	return "?"
}

func splitLines(src []byte) [][]byte {
	return bytes.Split(src, []byte{'\n'})
}

// maxSig bounds a signature shown, so that one minified line cannot fill a
// response.
const maxSig = 160

// trimSig returns a definition's line as a signature: without indentation,
// an opening brace or trailing comment-free spaces.
func trimSig(l []byte) string {
	s := strings.TrimSpace(string(l))
	s = strings.TrimSpace(strings.TrimSuffix(s, "{"))
	if len(s) > maxSig {
		s = strings.ToValidUTF8(s[:maxSig], "") + "…"
	}
	return s
}

// Render returns the definitions whose Line is in [from, to], one line each
// ("  L812  func (s *Server) Serve(...) error"), at most maxLines; when some
// are cut, the last line says how many.
func Render(defs []Def, from, to int, maxLines int) []string {
	var in []Def
	for _, d := range defs {
		if d.Line >= from && d.Line <= to {
			in = append(in, d)
		}
	}
	if maxLines <= 0 || len(in) == 0 {
		return nil
	}
	n := len(in)
	if n > maxLines {
		n = maxLines - 1
	}
	out := make([]string, 0, n+1)
	width := len(strconv.Itoa(in[len(in)-1].Line))
	for _, d := range in[:n] {
		text := d.Sig
		if text == "" {
			text = d.Kind + " " + d.Name
		}
		num := strconv.Itoa(d.Line)
		out = append(out, "  L"+num+strings.Repeat(" ", width-len(num)+2)+strings.Repeat("  ", min(d.Depth, 8))+text)
	}
	if n < len(in) {
		more := len(in) - n
		word := " more definitions"
		if more == 1 {
			word = " more definition"
		}
		out = append(out, "  … "+strconv.Itoa(more)+word+" (lines "+strconv.Itoa(in[n].Line)+"-"+strconv.Itoa(in[len(in)-1].Line)+")")
	}
	return out
}
