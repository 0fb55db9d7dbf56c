package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function's length, counted from its func keyword to
// its closing brace: past it a reader can no longer hold the whole function
// in view, and the pieces it does in turn deserve names of their own.
const maxFuncLines = 120

// longMarker, opening a line of a function's doc comment, keeps it exempt;
// the text after it says why splitting it would read worse.
const longMarker = "long:"

// TestFunctionLength: no function, method or top-level func literal in the
// module's non-test, non-generated code runs past maxFuncLines, unless its
// doc comment carries a longMarker line giving the reason.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	var long []string
	files := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "../.." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		long = append(long, overlong(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("checked only %d files: the walk missed the module", files)
	}
	if len(long) > 0 {
		t.Errorf("%d functions run past %d lines; split them along their seams, or say why not in a %q doc comment line:\n\t%s",
			len(long), maxFuncLines, "// "+longMarker, strings.Join(long, "\n\t"))
	}
}

// overlong lists f's functions longer than maxFuncLines that no longMarker
// exempts, as "path:line: name: n lines".
func overlong(fset *token.FileSet, f *ast.File) []string {
	var out []string
	check := func(name string, fn ast.Node, docs ...*ast.CommentGroup) {
		start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
		n := end.Line - start.Line + 1
		if n <= maxFuncLines || exempt(docs...) {
			return
		}
		rel, err := filepath.Rel("../..", start.Filename)
		if err != nil {
			rel = start.Filename
		}
		out = append(out, fmt.Sprintf("%s:%d: %s: %d lines", filepath.ToSlash(rel), start.Line, name, n))
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			check(funcName(d), d, d.Doc)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, v := range vs.Values {
					if lit, ok := v.(*ast.FuncLit); ok && i < len(vs.Names) {
						check(vs.Names[i].Name, lit, d.Doc, vs.Doc)
					}
				}
			}
		}
	}
	return out
}

// funcName names d as a reader searches for it: Recv.Method or Func.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	typ := d.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + d.Name.Name
		}
		return d.Name.Name
	}
}

// exempt reports whether a line of any of docs opens with longMarker and a
// reason after it.
func exempt(docs ...*ast.CommentGroup) bool {
	for _, doc := range docs {
		if doc == nil {
			continue
		}
		for _, c := range doc.List {
			text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
			if reason, ok := strings.CutPrefix(text, longMarker); ok && strings.TrimSpace(reason) != "" {
				return true
			}
		}
	}
	return false
}

// TestOverlong: the checker counts from func to the closing brace, flags
// one line past the limit and not the limit itself, reads the marker only
// with a reason, and sees top-level func literals and methods.
func TestOverlong(t *testing.T) {
	body := func(lines int) string { // a function of exactly lines lines
		return "func() {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	tests := []struct {
		name string
		src  string
		want []string // names flagged
	}{
		{"at the limit", "func F" + body(maxFuncLines)[4:], nil},
		{"one past", "func F" + body(maxFuncLines + 1)[4:], []string{"F"}},
		{"marker with reason", "// F does.\n//\n// long: one flat table.\nfunc F" + body(maxFuncLines + 1)[4:], nil},
		{"marker without reason", "// long:\nfunc F" + body(maxFuncLines + 1)[4:], []string{"F"}},
		{"method on a pointer", "type T int\nfunc (*T) M" + body(maxFuncLines + 1)[4:], []string{"T.M"}},
		{"generic method", "type T[X any] int\nfunc (T[X]) M" + body(maxFuncLines + 1)[4:], []string{"T.M"}},
		{"top-level literal", "var v = " + body(maxFuncLines+1), []string{"v"}},
		{"literal in a marked group", "// long: generated-like table.\nvar v = " + body(maxFuncLines+1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x\n"+tt.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			got := overlong(fset, f)
			if len(got) != len(tt.want) {
				t.Fatalf("flagged %q, want %q", got, tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], ": "+w+": ") {
					t.Errorf("flagged %q, want %q", got[i], w)
				}
			}
		})
	}
}
