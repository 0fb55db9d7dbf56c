// Package salience finds the lines of a command's output that matter (failures and summaries) and folds the noise around them.
package salience

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
)

// Kind says what a matched line is.
type Kind uint8

const (
	// Failure lines are what an agent must see: a failing test, a compiler
	// error, a panic.
	Failure Kind = iota + 1
	// Summary lines are the output's own account of itself ("ok pkg",
	// "Tests: 3 failed, 10 passed"); usually at the end, kept in a few.
	Summary
)

func (k Kind) String() string {
	switch k {
	case Failure:
		return "failure"
	case Summary:
		return "summary"
	}
	return "none"
}

// Rule is one line pattern. A line matches when every matcher that is set
// agrees; the cheap ones (Prefix, Contains) run first so that the regular
// expression runs only on the few lines that already look right.
type Rule struct {
	Name   string
	Family string // "go", "pytest", "cargo", ... or "user"
	Kind   Kind
	// Before and After are how many lines around a match a block keeps.
	Before, After int

	// Prefix must begin the line after its indentation (spaces and tabs).
	Prefix string
	// Col0 rules match only lines that are not indented.
	Col0 bool
	// Contains must occur somewhere in the line.
	Contains string
	// Unless, when it occurs in the line, vetoes the match (jest's
	// "● Console" is a heading for console.log output, not a failure).
	Unless string
	// Re must match the line (RE2). Built-in rules always pair it with Prefix
	// or Contains.
	Re string
	// Follow rules match only on the line right after a Failure block's
	// last line: they extend a block (a stack frame, a test's assertion
	// message) but never start one, since the same lines are harmless
	// elsewhere.
	Follow bool
}

// Rules is the built-in table. Order matters: a line takes the first rule
// that matches, so summary rules come before the failure rules whose words
// they share ("FAILED (failures=1)" before pytest's "FAILED "), and the
// generic rules come last.
var Rules = []Rule{
	// go test. "--- FAIL:" keeps the test's own log lines above it (-v
	// prints them before the verdict; the block stops at the test's
	// "=== RUN") and below it (without -v they follow the verdict).
	{Name: "test-fail", Family: "go", Kind: Failure, Before: 10, After: 8, Prefix: "--- FAIL:"},
	// A failing package's verdict ("FAIL\tpkg\t0.1s", "FAIL\tpkg [build
	// failed]") is a failure, not only a summary: with many packages it sits
	// in the middle, and it is the one line that names a package that did
	// not build.
	{Name: "pkg-fail", Family: "go", Kind: Failure, Prefix: "FAIL\t", Col0: true},
	{Name: "fail", Family: "go", Kind: Summary, Prefix: "FAIL", Col0: true, Re: `^FAIL\s*$`},
	{Name: "pkg-ok", Family: "go", Kind: Summary, Prefix: "ok  ", Col0: true, Re: `^ok\s+\S+`},
	{Name: "pass", Family: "go", Kind: Summary, Prefix: "PASS", Col0: true, Re: `^PASS\s*$`},
	{Name: "panic", Family: "go", Kind: Failure, Before: 2, After: 4, Prefix: "panic: ", Col0: true},
	{Name: "goroutine", Family: "go", Kind: Failure, After: 10, Prefix: "goroutine ", Col0: true, Re: `^goroutine \d+ \[[^\]]+\]:\s*$`},
	{Name: "data-race", Family: "go", Kind: Failure, After: 20, Prefix: "WARNING: DATA RACE", Col0: true},
	// Build errors: "# pkg" heads them; "./x.go:3:5: undefined: y".
	{Name: "build", Family: "go", Kind: Failure, Before: 1, After: 1, Col0: true, Contains: ".go:", Re: `^[^\s:]+\.go:\d+:\d+: `},
	// "    x_test.go:12: got 1, want 2" under a failing test.
	{Name: "assert", Family: "go", Kind: Failure, After: 1, Contains: "_test.go:", Re: `^\s+\S+_test\.go:\d+: `, Follow: true},

	// Compiler diagnostics: gcc, clang, javac, rustc, tsc, ...
	{Name: "error", Family: "compiler", Kind: Failure, After: 3, Contains: ": error", Re: `^[^\s:][^:]*:\d+(:\d+)?:\s*error\b`},
	{Name: "fatal-error", Family: "compiler", Kind: Failure, After: 3, Contains: "fatal error:"},
	{Name: "tool-error", Family: "compiler", Kind: Failure, After: 2, Contains: ": error: ", Re: `^[\w./+-]+: (fatal )?error: `},
	{Name: "tsc", Family: "compiler", Kind: Failure, After: 2, Contains: "error TS", Re: `(\(\d+,\d+\): | - )error TS\d+`},
	{Name: "rust-error", Family: "cargo", Kind: Failure, After: 14, Prefix: "error[", Col0: true},
	{Name: "span", Family: "compiler", Kind: Failure, After: 4, Prefix: "--> ", Follow: true},
	{Name: "undefined-reference", Family: "compiler", Kind: Failure, After: 1, Contains: "undefined reference to"},

	// cargo test
	{Name: "result", Family: "cargo", Kind: Summary, Prefix: "test result: ", Col0: true},
	{Name: "test-failed", Family: "cargo", Kind: Failure, Prefix: "test ", Col0: true, Contains: " ... FAILED"},
	{Name: "stdout", Family: "cargo", Kind: Failure, After: 8, Prefix: "---- ", Col0: true, Contains: " stdout ----"},
	{Name: "panicked", Family: "cargo", Kind: Failure, Before: 1, After: 6, Contains: "' panicked at"},
	{Name: "error", Family: "cargo", Kind: Failure, After: 4, Prefix: "error:", Col0: true},

	// mocha
	{Name: "passing", Family: "mocha", Kind: Summary, Contains: " passing", Re: `^\s*\d+ passing\b`},
	{Name: "failing", Family: "mocha", Kind: Summary, Contains: " failing", Re: `^\s*\d+ failing\b`},
	{Name: "pending", Family: "mocha", Kind: Summary, Contains: " pending", Re: `^\s*\d+ pending\b`},
	{Name: "failure", Family: "mocha", Kind: Failure, After: 10, Contains: ") ", Re: `^\s{2,}\d+\) \S`},
	{Name: "assertion", Family: "mocha", Kind: Failure, After: 8, Contains: "AssertionError"},

	// jest and vitest
	{Name: "suites", Family: "jest", Kind: Summary, Prefix: "Test Suites:"},
	{Name: "tests", Family: "jest", Kind: Summary, Prefix: "Tests:"},
	{Name: "files", Family: "vitest", Kind: Summary, Prefix: "Test Files ", Re: `^\s*Test Files\s+\d`},
	{Name: "tests", Family: "vitest", Kind: Summary, Prefix: "Tests ", Re: `^\s*Tests\s+\d`},
	{Name: "bullet", Family: "jest", Kind: Failure, After: 16, Prefix: "● ", Unless: "● Console"},
	{Name: "fail", Family: "jest", Kind: Failure, After: 2, Prefix: "FAIL ", Re: `^\s*FAIL\s+\S`},
	{Name: "cross", Family: "jest", Kind: Failure, Prefix: "✕ "},
	{Name: "cross", Family: "vitest", Kind: Failure, After: 2, Prefix: "× "},

	// unittest, before pytest: "FAILED (failures=1)" is a summary.
	{Name: "summary", Family: "unittest", Kind: Summary, Prefix: "FAILED (", Col0: true},
	{Name: "ran", Family: "unittest", Kind: Summary, Prefix: "Ran ", Col0: true, Re: `^Ran \d+ tests? in `},
	{Name: "ok", Family: "unittest", Kind: Summary, Prefix: "OK", Col0: true, Re: `^OK( \(.*\))?\s*$`},
	{Name: "fail", Family: "unittest", Kind: Failure, After: 12, Prefix: "FAIL: ", Col0: true},
	{Name: "error", Family: "unittest", Kind: Failure, After: 12, Prefix: "ERROR: ", Col0: true, Re: `^ERROR: \S+ \(`},
	// Verbose runs (-v) give each test a line: "test_x (mod.Case.test_x) ... FAIL".
	{Name: "verbose-fail", Family: "unittest", Kind: Failure, Contains: " ... FAIL", Re: `^\S+ \(\S+\) \.\.\. FAIL$`},
	{Name: "verbose-error", Family: "unittest", Kind: Failure, Contains: " ... ERROR", Re: `^\S+ \(\S+\) \.\.\. ERROR$`},

	// pytest
	{Name: "summary", Family: "pytest", Kind: Summary, Prefix: "=", Col0: true, Re: `^=+ .*\b(passed|failed|errors?|skipped|xfailed|xpassed|deselected|no tests ran)\b.* =+\s*$`},
	{Name: "failed", Family: "pytest", Kind: Failure, Prefix: "FAILED ", Col0: true},
	{Name: "error", Family: "pytest", Kind: Failure, Prefix: "ERROR ", Col0: true},
	{Name: "test", Family: "pytest", Kind: Failure, After: 4, Prefix: "___", Col0: true, Re: `^_{3,} .+ _{3,}\s*$`},
	{Name: "assert", Family: "pytest", Kind: Failure, Before: 4, After: 2, Prefix: "E ", Col0: true},
	// -v gives each test a line: "tests/test_a.py::test_x FAILED   [ 58%]".
	{Name: "verbose-failed", Family: "pytest", Kind: Failure, Contains: " FAILED", Re: `^\S+::\S+.* FAILED(\s+\[\s*\d+%\])?\s*$`},
	{Name: "verbose-error", Family: "pytest", Kind: Failure, Contains: " ERROR", Re: `^\S+::\S+.* ERROR(\s+\[\s*\d+%\])?\s*$`},
	{Name: "traceback", Family: "python", Kind: Failure, After: 20, Prefix: "Traceback (most recent call last):"},

	// npm, pnpm, yarn
	{Name: "code", Family: "npm", Kind: Summary, Prefix: "npm error code ", Col0: true},
	{Name: "err-code", Family: "npm", Kind: Summary, Prefix: "npm ERR! code ", Col0: true},
	// Before 1: the "code" line npm prints right above the message.
	{Name: "error", Family: "npm", Kind: Failure, Before: 1, After: 4, Prefix: "npm error", Col0: true},
	{Name: "err", Family: "npm", Kind: Failure, Before: 1, After: 4, Prefix: "npm ERR!", Col0: true},
	{Name: "pnpm", Family: "npm", Kind: Failure, After: 4, Contains: "ERR_PNPM_"},
	{Name: "yarn", Family: "npm", Kind: Failure, After: 2, Prefix: "error ", Col0: true},

	// make
	// make stops right after the recipe that failed, whose own output
	// (a diff, a linter's list) is the cause: keep more of it.
	{Name: "stop", Family: "make", Kind: Failure, Before: 12, Contains: ": ***", Re: `^g?make(\[\d+\])?: \*\*\*`},

	// shells
	{Name: "not-found", Family: "shell", Kind: Failure, Before: 1, After: 1, Contains: "command not found"},
	{Name: "sh-not-found", Family: "shell", Kind: Failure, Before: 1, After: 1, Contains: ": not found", Re: `^\S*sh: \d+: .*: not found`},
	{Name: "no-such-file", Family: "shell", Kind: Failure, Before: 1, After: 1, Contains: "No such file or directory", Re: `^\S*sh(: line \d+)?: `},
	{Name: "permission", Family: "shell", Kind: Failure, Before: 1, After: 1, Contains: "Permission denied", Re: `^\S*sh(: line \d+)?: `},

	// Other build tools and runners: Gradle, TAP (node-tap, bats, prove),
	// ninja, CMake, apt, git and the like ("fatal: not a git repository"),
	// and the crosses of ava, uvu and bats.
	{Name: "failure", Family: "gradle", Kind: Failure, After: 8, Prefix: "FAILURE: ", Col0: true},
	{Name: "build-failed", Family: "gradle", Kind: Failure, Prefix: "BUILD FAILED", Col0: true},
	{Name: "not-ok", Family: "tap", Kind: Failure, After: 6, Prefix: "not ok ", Re: `^\s*not ok \d+`},
	{Name: "failed", Family: "ninja", Kind: Failure, After: 4, Prefix: "FAILED: ", Col0: true},
	{Name: "error", Family: "cmake", Kind: Failure, After: 4, Prefix: "CMake Error", Col0: true},
	{Name: "error", Family: "apt", Kind: Failure, Before: 1, Prefix: "E: ", Col0: true},
	{Name: "fatal", Family: "generic", Kind: Failure, After: 2, Prefix: "fatal: ", Col0: true},
	{Name: "cross", Family: "generic", Kind: Failure, After: 4, Prefix: "✗ "},
	{Name: "cross", Family: "generic", Kind: Failure, After: 4, Prefix: "✘ "},

	// Generic: last, so that a family's own rule names the line.
	// "TypeError: x", "Error [ERR_X]: y", not "fmt.Errorf(": each form has
	// its own literal, so that source code that mentions Error runs no
	// regular expression (an unanchored one costs about a microsecond a
	// line).
	{Name: "error", Family: "generic", Kind: Failure, After: 6, Contains: "Error:", Re: `(^|[^\w.])[A-Z]?\w*Error:( |$)`},
	{Name: "error", Family: "generic", Kind: Failure, After: 6, Contains: "Error [", Re: `(^|[^\w.])[A-Z]?\w*Error \[\w+\]:( |$)`},
	{Name: "ERROR", Family: "generic", Kind: Failure, After: 3, Contains: "ERROR", Re: `\bERROR\b`},
	{Name: "FATAL", Family: "generic", Kind: Failure, After: 3, Contains: "FATAL", Re: `\bFATAL\b`},
	{Name: "exception", Family: "generic", Kind: Failure, After: 8, Contains: "Exception", Re: `Exception(:|\s+in\b|$)`},
	// (Any word that ends in Exception: the word's start needs no match,
	// so the expression starts with its literal, which the regexp package
	// looks for first.)
	{Name: "segfault", Family: "generic", Kind: Failure, Before: 2, After: 2, Contains: "Segmentation fault"},
	{Name: "killed", Family: "generic", Kind: Failure, Before: 2, Contains: "Killed", Re: `(^|: |\d\s+)Killed\b`},
	{Name: "exit-status", Family: "generic", Kind: Failure, Before: 2, Contains: "exit status ", Re: `\bexit status [1-9]\d*\b`},
	{Name: "exit-code", Family: "generic", Kind: Failure, Before: 2, Contains: "exit code ", Re: `\bexit code [1-9]\d*\b`},
	{Name: "exited", Family: "generic", Kind: Failure, Before: 2, Contains: "exited with code ", Re: `\bexited with code [1-9]\d*\b`},
	// Stack frames extend the block of the error above them.
	{Name: "frame", Family: "generic", Kind: Failure, Prefix: "at ", Follow: true},
}

// UserRule is a rule from configuration.
type UserRule struct {
	Name    string
	Pattern string // RE2, matched against each line (without its '\n')
	Kind    string // "failure" or "summary"
	Before  int
	After   int
}

// maxContext bounds Before and After, so that a block (and the scanner's
// memory of lines past) stays small whatever a configuration says.
const maxContext = 20

// Set is a compiled set of rules. It is safe for concurrent use; each
// Scanner has its own state.
type Set struct {
	rules []compiled
	// byFirst lists the rules with a Prefix by the prefix's first byte, so
	// that a line is tried only against the prefixes it could start with.
	byFirst [256][]uint16
	// gram indexes the Contains-only rules by their key's first two bytes:
	// one table look-up per byte of a line finds where a key could start.
	gram  [1 << 16]uint8 // index+1 into grams
	grams [][]uint16
	// always are rules with no literal to look for (user rules): their
	// regular expression runs on every line.
	always    []uint16
	maxBefore int
	// keys and anchors are for the fast path (fast.go).
	keys     []fastKey
	anchors  []anchor
	passedID uint16
	// user are the rules Compile was given after the built-in table, so
	// that the Set can be rebuilt elsewhere (in a tool's sandbox).
	user []UserRule
	// sparse indexes the triggers' literals for ScanFailures.
	sparse sparseIndex
}

type compiled struct {
	Rule
	re *regexp.Regexp
	// The literals as bytes, converted once rather than per line.
	prefix, contains, unless []byte
}

// Compile returns the built-in Rules followed by extra. A bad pattern or
// kind is an error naming the rule.
func Compile(extra []UserRule) (*Set, error) {
	if len(extra) == 0 {
		return defaultSet, nil
	}
	rs := make([]Rule, 0, len(Rules)+len(extra))
	rs = append(rs, Rules...)
	for i, u := range extra {
		name := u.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		r := Rule{Name: name, Family: "user", Re: u.Pattern,
			Before: min(max(u.Before, 0), maxContext), After: min(max(u.After, 0), maxContext)}
		switch u.Kind {
		case "failure", "":
			r.Kind = Failure
		case "summary":
			r.Kind = Summary
		default:
			return nil, fmt.Errorf("salience rule %q: kind %q is neither \"failure\" nor \"summary\"", name, u.Kind)
		}
		if u.Pattern == "" {
			return nil, fmt.Errorf("salience rule %q: empty pattern", name)
		}
		// A pattern that starts with a literal ("QUIRK-[0-9]+") has its
		// lines found by that literal, as the built-in rules are: the
		// expression then runs only on lines that hold it, and the sparse
		// scan of a read's middle need not read every line.
		if re, err := regexp.Compile(u.Pattern); err == nil {
			if lit, _ := re.LiteralPrefix(); len(lit) >= 2 {
				r.Contains = lit
			}
		}
		rs = append(rs, r)
	}
	set, err := newSet(rs)
	if err != nil {
		return nil, err
	}
	set.user = slices.Clone(extra)
	return set, nil
}

// UserRules returns the rules the Set was compiled with after the built-in
// table: Compile(s.UserRules()) makes the same Set.
func (s *Set) UserRules() []UserRule { return slices.Clone(s.user) }

func newSet(rs []Rule) (*Set, error) {
	s := &Set{rules: make([]compiled, len(rs))}
	for i, r := range rs {
		c := compiled{Rule: r, prefix: []byte(r.Prefix), contains: []byte(r.Contains), unless: []byte(r.Unless)}
		if r.Re != "" {
			re, err := regexp.Compile(r.Re)
			if err != nil {
				return nil, fmt.Errorf("salience rule %q (%s): %w", r.Name, r.Family, err)
			}
			c.re = re
		}
		c.Before = min(max(c.Before, 0), maxContext)
		c.After = min(max(c.After, 0), maxContext)
		s.maxBefore = max(s.maxBefore, c.Before)
		s.rules[i] = c
		idx := uint16(i)
		switch {
		case r.Prefix != "":
			b := r.Prefix[0]
			s.byFirst[b] = append(s.byFirst[b], idx)
		case len(r.Contains) >= 2:
			g := uint16(r.Contains[0])<<8 | uint16(r.Contains[1])
			if s.gram[g] == 0 {
				s.grams = append(s.grams, nil)
				if len(s.grams) > 255 {
					return nil, fmt.Errorf("salience: too many substring rules")
				}
				s.gram[g] = uint8(len(s.grams))
			}
			k := s.gram[g] - 1
			s.grams[k] = append(s.grams[k], idx)
		default:
			s.always = append(s.always, idx)
		}
	}
	s.buildFast()
	s.buildSparse()
	return s, nil
}

var defaultSet = func() *Set {
	s, err := newSet(Rules)
	if err != nil {
		panic(err) // the built-in table is tested
	}
	return s
}()

// Default returns the Set of the built-in Rules.
func Default() *Set { return defaultSet }

// Rule returns the rule a Block names by index.
func (s *Set) Rule(i int) Rule { return s.rules[i].Rule }

// Match returns the index of the first rule line matches, or -1. line has no
// '\n'. inBlock says the previous line ended a Failure block, which Follow
// rules need.
func (s *Set) Match(line []byte, inBlock bool) int {
	var m matcher
	ri, _ := m.match(s, line, inBlock)
	return ri
}

// matcher holds the scratch space matching needs, so that a Scanner matches
// without allocating.
type matcher struct {
	plain []byte // line without ANSI escapes
}

// lineClass is what quiet found out about a line.
type lineClass uint8

const (
	progress  lineClass = 1 << iota // a passing test's progress line
	verdict                         // ...that is its passing verdict
	testStart                       // ...that starts a test ("=== RUN")
)

// match returns the first rule line matches (-1 for none), and the line's
// class.
func (m *matcher) match(s *Set, line []byte, inBlock bool) (int, lineClass) {
	line = matchText(line)
	if bytes.IndexByte(line, 0x1b) >= 0 {
		m.plain = stripANSI(m.plain[:0], line)
		line = m.plain
	}
	return s.matchPlain(line, inBlock)
}

// matchPlain is match for a line with no carriage return or escape.
func (s *Set) matchPlain(line []byte, inBlock bool) (int, lineClass) {
	t := trimIndent(line)
	if len(t) == 0 {
		return -1, 0
	}
	if c, q := quietClass(t); q {
		// A passing test's line: its name may say "Error".
		return -1, c
	}
	best := len(s.rules)
	try := func(i uint16) {
		if int(i) < best && s.rules[i].matches(line, t, inBlock) {
			best = int(i)
		}
	}
	for _, i := range s.byFirst[t[0]] {
		try(i)
	}
	if len(s.grams) > 0 {
		for j := 0; j+1 < len(line); j++ {
			k := s.gram[uint16(line[j])<<8|uint16(line[j+1])]
			if k == 0 {
				continue
			}
			for _, i := range s.grams[k-1] {
				if int(i) < best && hasKey(line[j+2:], s.rules[i].Contains[2:]) {
					try(i)
				}
			}
		}
	}
	for _, i := range s.always {
		try(i)
	}
	if best == len(s.rules) {
		return -1, 0
	}
	return best, 0
}

// hasKey reports whether b starts with key; for the few bytes of a key
// left after its gram, a loop is cheaper than a call.
func hasKey(b []byte, key string) bool {
	if len(b) < len(key) {
		return false
	}
	for i := 0; i < len(key); i++ {
		if b[i] != key[i] {
			return false
		}
	}
	return true
}

// matches checks every matcher of r; t is line without its indentation.
func (r *compiled) matches(line, t []byte, inBlock bool) bool {
	if r.Follow && !inBlock {
		return false
	}
	if r.Col0 && len(t) != len(line) {
		return false
	}
	if len(r.prefix) > 0 && !bytes.HasPrefix(t, r.prefix) {
		return false
	}
	if len(r.contains) > 0 && !bytes.Contains(line, r.contains) {
		return false
	}
	if len(r.unless) > 0 && bytes.Contains(line, r.unless) {
		return false
	}
	return r.re == nil || r.re.Match(line)
}

// matchText is what of a line rules see: its final state after carriage
// returns (a progress bar redrawn in place), without a CRLF's '\r'.
func matchText(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if bytes.IndexByte(line, '\r') >= 0 { // IndexByte is vectorized, LastIndexByte not
		return lastSegment(line)
	}
	return line
}

// lastSegment returns the last non-empty '\r'-separated part of line: what
// the terminal shows last.
func lastSegment(line []byte) []byte {
	for len(line) > 0 {
		i := bytes.LastIndexByte(line, '\r')
		if i < 0 {
			return line
		}
		if i < len(line)-1 {
			return line[i+1:]
		}
		line = line[:i]
	}
	return line
}

func trimIndent(b []byte) []byte {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return b[i:]
}

// stripANSI appends b without its escape sequences (CSI "ESC [ ... final",
// OSC "ESC ] ... BEL or ST", and two-byte ESC X) to dst. Colour codes would
// otherwise hide a prefix such as jest's "●".
func stripANSI(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c != 0x1b {
			dst = append(dst, c)
			i++
			continue
		}
		i++
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '[':
			i++
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
			i++
		case ']':
			for i < len(b) && b[i] != 0x07 && !(b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\') {
				i++
			}
			if i < len(b) && b[i] == 0x1b {
				i++
			}
			i++
		default:
			i++
		}
	}
	return dst
}

// quietClass returns the class of a quiet line t (without indentation),
// and whether it is one.
func quietClass(t []byte) (lineClass, bool) {
	// go test -v's two commonest lines, first.
	if len(t) >= 8 {
		if string(t[:7]) == "=== RUN" {
			return progress | testStart, true
		}
		if string(t[:8]) == "--- PASS" {
			return progress | verdict, true
		}
	}
	q, pass := quiet(t)
	if !q {
		return 0, false
	}
	c := progress
	if pass {
		c |= verdict
	}
	if t[0] == '=' {
		c |= testStart
	}
	return c, true
}

// quiet reports whether t (a line without its indentation) is a passing
// test's progress line, and whether it is a test's passing verdict, which
// folds count. Such lines are never matched: a test named TestError passes
// quietly.
func quiet(t []byte) (q, pass bool) {
	if len(t) < 3 {
		return false, false
	}
	switch t[0] {
	case '=':
		if hasAny(t, "=== RUN", "=== PAUSE", "=== CONT", "=== NAME") {
			return true, false
		}
	case '-':
		if hasAny(t, "--- PASS", "--- SKIP") {
			return true, true
		}
	case 0xe2: // ✓ U+2713, ✔ U+2714
		if bytes.HasPrefix(t, []byte("✓")) || bytes.HasPrefix(t, []byte("✔")) {
			return true, true
		}
	case 'P':
		// jest's "PASS src/a.test.js"; go's bare "PASS" is a summary.
		if bytes.HasPrefix(t, []byte("PASS ")) {
			return true, true
		}
	case 't':
		// cargo's "test a::b ... ok"
		if bytes.HasPrefix(t, []byte("test ")) && bytes.HasSuffix(bytes.TrimRight(t, " \r"), []byte(" ... ok")) {
			return true, true
		}
	}
	// pytest -v: "tests/test_a.py::test_x PASSED    [ 10%]"
	// (Looking for " PASSED" would stop at every space.)
	if i := bytes.Index(t, []byte("PASSED")); i > 0 && t[i-1] == ' ' && bytes.Contains(t[:i], []byte("::")) {
		return true, true
	}
	return false, false
}

func hasAny(t []byte, prefixes ...string) bool {
	for _, p := range prefixes {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	return false
}
