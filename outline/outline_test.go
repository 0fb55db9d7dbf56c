package outline

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// want is a definition a test expects: line, kind and name.
type want struct {
	line       int
	kind, name string
	depth      int
}

func check(t *testing.T, name, src, lang string, wants []want) []Def {
	t.Helper()
	defs, l := Of(name, []byte(src))
	if l != lang {
		t.Errorf("%s: lang %q, want %q", name, l, lang)
	}
	got := map[int]Def{}
	for _, d := range defs {
		got[d.Line] = d
	}
	for _, w := range wants {
		d, ok := got[w.line]
		if !ok || d.Kind != w.kind || d.Name != w.name || d.Depth != w.depth {
			t.Errorf("%s: line %d: got %+v, want %s %s depth %d", name, w.line, d, w.kind, w.name, w.depth)
		}
	}
	if len(defs) != len(wants) {
		var b strings.Builder
		for _, d := range defs {
			fmt.Fprintf(&b, "  %d %s %s %d\n", d.Line, d.Kind, d.Name, d.Depth)
		}
		t.Errorf("%s: %d defs, want %d:\n%s", name, len(defs), len(wants), b.String())
	}
	return defs
}

// goSource returns the source of a file of the Go standard library, from the
// GOROOT of the go command on PATH (go test puts its own first). Go is on
// every machine the tests run on, so a missing go is a failure, not a skip.
func goSource(t *testing.T, rel string) (path string, src []byte) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to find the standard library's source with: %v", err)
	}
	out, err := exec.Command(goCmd, "env", "GOROOT").Output()
	root := strings.TrimSpace(string(out))
	if err != nil || root == "" {
		t.Fatalf("%s env GOROOT: %q, %v", goCmd, out, err)
	}
	path = filepath.Join(root, "src", rel)
	if src, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	return path, src
}

func TestGoStdlib(t *testing.T) {
	path, src := goSource(t, filepath.Join("bufio", "bufio.go"))
	// Where the definitions checked are, found in the text: their lines
	// move between Go releases.
	lines := strings.Split(string(src), "\n")
	lineOf := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i + 1
			}
		}
		t.Fatalf("no line of %s starts with %q", path, prefix)
		return 0
	}
	const readString = "func (b *Reader) ReadString(delim byte) (string, error)"
	reader, rs := lineOf("type Reader struct {"), lineOf(readString)
	find := func(defs []Def, line int) Def {
		for _, d := range defs {
			if d.Line == line {
				return d
			}
		}
		return Def{}
	}

	defs, lang := Of("bufio.go", src)
	if lang != "go" {
		t.Fatal(lang)
	}
	if d := find(defs, reader); d.Kind != "struct" || d.Name != "Reader" {
		t.Errorf("line %d: %+v, want struct Reader", reader, d)
	}
	if d := find(defs, rs); d.Kind != "method" || d.Name != "*Reader.ReadString" || d.Sig != readString {
		t.Errorf("line %d: %+v, want method *Reader.ReadString", rs, d)
	}

	// A file cut in the middle (of ReadString's body) does not parse: line
	// patterns take over, and find every function and method the parser
	// found above the cut, at its line, as a func.
	cut := []byte(strings.Join(lines[:rs+1], "\n"))
	partial, _ := Of("bufio.go", cut)
	if d := find(partial, rs); d.Kind != "func" || d.Name != "ReadString" {
		t.Errorf("partial file: line %d: %+v, want func ReadString", rs, d)
	}
	funcs := 0
	for _, d := range defs {
		if d.Line > rs || d.Kind != "func" && d.Kind != "method" {
			continue
		}
		funcs++
		if p := find(partial, d.Line); p.Kind != "func" {
			t.Errorf("partial file: line %d: %+v, want the func of %+v", d.Line, p, d)
		}
	}
	if funcs < 10 {
		t.Errorf("only %d functions above line %d of %s", funcs, rs, path)
	}
}

func TestGoSource(t *testing.T) {
	src := `package x

// Server serves.
type Server struct{ n int }

type Handler interface{ Serve() }

const (
	A = 1
	B, C = 2, 3
)

var errX = fmt.Errorf("x")

func New() *Server { return nil }

// Serve serves.
func (s *Server) Serve(ctx context.Context) error {
	f := func() {}
	return nil
}

func Map[T any](xs []T) []T { return xs }
`
	check(t, "x.go", src, "go", []want{
		{4, "struct", "Server", 0}, {6, "interface", "Handler", 0}, {9, "const", "A", 0}, {10, "const", "B, C", 0},
		{13, "var", "errX", 0}, {15, "func", "New", 0}, {18, "method", "*Server.Serve", 0}, {23, "func", "Map", 0},
	})
}

func TestPython(t *testing.T) {
	src := `"""Module doc.

def not_a_function():
"""
import os


class Store(Base):
    """A store.

    def nope(self):
    """

    def __init__(self, path):
        self.path = path

    async def fetch(self, key):
        # def commented(self):
        return await self._get(key)

    class Inner:
        def deep(self):
            pass


def main(argv=None):
    s = "def in_string():"
    return 0

async def serve():
    pass
`
	check(t, "store.py", src, "python", []want{
		{8, "class", "Store", 0}, {14, "method", "__init__", 1}, {17, "method", "fetch", 1},
		{21, "class", "Inner", 1}, {22, "method", "deep", 2}, {26, "func", "main", 0}, {30, "func", "serve", 0},
	})
}

func TestJavaScript(t *testing.T) {
	src := `import x from "y";

/* function commented() {} */
export default class Cache extends Base {
  #items = new Map();

  constructor(size) {
    super();
    if (size > 0) {
      this.size = size;
    }
  }

  async get(key) {
    for (const k of this.#items) {}
    return this.#items.get(key);
  }

  static from(obj) {
    return new Cache(obj.size);
  }
}

export function makeCache(n) {
  return new Cache(n);
}

const handler = async (req, res) => {
  res.end("function fake() {");
};

export const parse = function (s) {};
// function commentedOut() {}
`
	check(t, "cache.mjs", src, "javascript", []want{
		{4, "class", "Cache", 0}, {7, "method", "constructor", 1}, {14, "method", "get", 1}, {19, "method", "from", 1},
		{24, "func", "makeCache", 0}, {28, "func", "handler", 0}, {32, "func", "parse", 0},
	})
}

func TestTypeScript(t *testing.T) {
	src := `export interface Options {
  size: number;
}

export type Key = string | number;

export enum Mode { Read, Write }

export class Store<T> implements Iterable<T> {
  private items: T[] = [];

  public add(item: T): void {
    this.items.push(item);
  }

  get length(): number {
    return this.items.length;
  }
}

export const toKey = (x: unknown): Key => String(x);

function helper<T>(xs: T[]): T | undefined {
  return xs[0];
}
`
	check(t, "store.tsx", src, "typescript", []want{
		{1, "interface", "Options", 0}, {5, "type", "Key", 0}, {7, "enum", "Mode", 0}, {9, "class", "Store", 0},
		{12, "method", "add", 1}, {16, "method", "length", 1}, {21, "func", "toKey", 0}, {23, "func", "helper", 0},
	})
}

func TestRust(t *testing.T) {
	src := `use std::fmt;

pub const MAX_SIZE: usize = 10;

/// A point.
#[derive(Debug)]
pub struct Point<'a> {
    x: i32,
    name: &'a str,
}

pub enum Shape { Circle, Square }

pub trait Area {
    fn area(&self) -> f64;
}

impl<'a> fmt::Display for Point<'a> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let c = '{';
        write!(f, "({})", self.x)
    }
}

pub(crate) mod geometry {
    pub async fn compute() {}
}

/* fn commented() {} */
fn main() {
    println!("fn fake() {{");
}

macro_rules! square {
    ($x:expr) => { $x * $x };
}
`
	check(t, "lib.rs", src, "rust", []want{
		{3, "const", "MAX_SIZE", 0}, {7, "struct", "Point", 0}, {12, "enum", "Shape", 0}, {14, "trait", "Area", 0},
		{15, "method", "area", 1}, {18, "impl", "fmt::Display for Point<'a>", 0}, {19, "method", "fmt", 1},
		{25, "mod", "geometry", 0}, {26, "func", "compute", 1}, {30, "func", "main", 0}, {34, "macro", "square", 0},
	})
}

func TestJava(t *testing.T) {
	src := `package com.example;

import java.util.List;

/**
 * public class Fake {
 */
public final class OrderService implements Service {
    private final List<Order> orders;

    public OrderService(List<Order> orders) {
        this.orders = orders;
    }

    @Override
    public Optional<Order> find(String id) throws NotFoundException {
        if (id == null) {
            throw new IllegalArgumentException("id");
        }
        return orders.stream().filter(o -> o.id().equals(id)).findFirst();
    }

    private static int count(List<Order> xs) {
        return xs.size();
    }

    public interface Listener {
        void onOrder(Order o);
    }

    enum State { NEW, DONE }
}
`
	check(t, "OrderService.java", src, "java", []want{
		{8, "class", "OrderService", 0}, {11, "method", "OrderService", 1}, {16, "method", "find", 1},
		{23, "method", "count", 1}, {27, "interface", "Listener", 1}, {31, "enum", "State", 1},
	})
}

func TestKotlinCSharp(t *testing.T) {
	kt := `package x

data class User(val name: String)

class Repo {
    fun find(id: Int): User? {
        return null
    }
}

suspend fun main() {
}
`
	check(t, "Repo.kt", kt, "kotlin", []want{{3, "class", "User", 0}, {5, "class", "Repo", 0}, {6, "method", "find", 1}, {11, "func", "main", 0}})
	cs := `namespace App
{
    public class Greeter
    {
        public Greeter(string name)
        {
        }

        public async Task<string> GreetAsync(int times)
        {
            return "";
        }
    }
}
`
	check(t, "Greeter.cs", cs, "csharp", []want{{3, "class", "Greeter", 1}, {5, "method", "Greeter", 2}, {9, "method", "GreetAsync", 2}})
}

func TestC(t *testing.T) {
	src := `#include <stdio.h>

struct point {
	int x, y;
};

static int helper(int a);

/* int commented(void) { */
static int
helper(int a)
{
	if (a > 0) {
		return a;
	}
	return 0;
}

int main(int argc, char **argv) {
	printf("int fake(void) {\n");
	return helper(argc);
}

typedef enum color { RED, GREEN } color_t;
`
	check(t, "main.c", src, "c", []want{{3, "struct", "point", 0}, {11, "func", "helper", 0}, {19, "func", "main", 0}, {24, "enum", "color", 0}})
}

func TestCpp(t *testing.T) {
	src := `#include <string>

namespace app {

class Widget : public Base {
public:
    explicit Widget(std::string name) : name_(name) {}
    ~Widget() override {}
    int size() const { return 0; }
    void draw();
private:
    std::string name_;
};

void Widget::draw()
{
    for (int i = 0; i < 3; i++) {
    }
}

}  // namespace app

template <typename T>
T max_of(T a, T b) {
    return a > b ? a : b;
}
`
	check(t, "widget.cpp", src, "cpp", []want{
		{3, "namespace", "app", 0}, {5, "class", "Widget", 1}, {7, "method", "Widget", 2}, {8, "method", "~Widget", 2},
		{9, "method", "size", 2}, {15, "func", "Widget::draw", 1}, {24, "func", "max_of", 0},
	})
}

func TestRender(t *testing.T) {
	defs := []Def{
		{Line: 5, Kind: "struct", Name: "Server", Sig: "type Server struct"},
		{Line: 812, Kind: "method", Name: "*Server.Serve", Sig: "func (s *Server) Serve(ctx context.Context, ln net.Listener) error"},
		{Line: 900, Kind: "func", Name: "helper", Depth: 1},
		{Line: 950, Kind: "func", Name: "a"},
		{Line: 990, Kind: "func", Name: "b"},
	}
	got := Render(defs, 10, 1000, 3)
	want := []string{
		"  L812  func (s *Server) Serve(ctx context.Context, ln net.Listener) error",
		"  L900    func helper",
		"  … 2 more definitions (lines 950-990)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := Render(defs, 10, 1000, 10); len(got) != 4 {
		t.Errorf("uncut: %q", got)
	}
	if got := Render(defs, 1000, 2000, 10); got != nil {
		t.Errorf("none in range: %q", got)
	}
}

func TestUnknownLanguage(t *testing.T) {
	if defs, lang := Of("README.md", []byte("# def x():\n")); defs != nil || lang != "" {
		t.Errorf("%v %q", defs, lang)
	}
}

func FuzzOutline(f *testing.F) {
	f.Add("x.go", []byte("package x\nfunc A() {}\n"))
	f.Add("x.py", []byte("class A:\n    def b(self):\n        '''\n"))
	f.Add("x.rs", []byte("impl<T> X for Y<T> {\n fn a() {}\n}\n/* fn b"))
	f.Add("x.cpp", []byte("int\nf(int a)\n{\n}\nclass C {\n int g() {}\n};\n"))
	f.Add("x.ts", []byte("export class A {\n  m(): void {\n  }\n}\nconst f = () => 1;\n"))
	f.Fuzz(func(t *testing.T, name string, src []byte) {
		exts := []string{".go", ".py", ".js", ".ts", ".rs", ".java", ".kt", ".cs", ".c", ".cpp"}
		if Lang(name) == "" && len(name) > 0 {
			name = "f" + exts[int(name[0])%len(exts)]
		}
		defs, _ := Of(name, src)
		lines := strings.Count(string(src), "\n") + 1
		last := 0
		for _, d := range defs {
			if d.Line <= last || d.Line > lines {
				t.Fatalf("def %+v after line %d of %d", d, last, lines)
			}
			last = d.Line
		}
		for _, l := range Render(defs, 1, lines, 5) {
			if strings.Contains(l, "\n") {
				t.Fatalf("rendered line with a newline: %q", l)
			}
		}
	})
}
