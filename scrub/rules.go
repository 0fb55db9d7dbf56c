package scrub

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"
)

// rule is one gitleaks rule. Its regex is compiled on first use: compiling all 222
// default rules costs tens of milliseconds, and most inputs only ever wake a few rules.
type rule struct {
	id          string
	description string
	regexSrc    string
	// pathSrc is gitleaks' file-path condition. Find scans text without a path (like
	// `gitleaks stdin`), so a rule with a path never fires.
	pathSrc     string
	secretGroup int
	entropy     float64
	keywords    []string // lower case
	tags        []string
	allowlists  []*allowlist
	required    []required
	skipReport  bool

	// re is shared between clones of a rule whose regex is unchanged, so each default
	// regex is compiled at most once per process.
	re *lazyRegex
	// prep computes how the rule is run around its keyword hits (see plan).
	prep   sync.Once
	planOf plan
}

type required struct {
	id            string
	withinLines   *int
	withinColumns *int
}

// lazyRegex is a regex compiled on first use.
type lazyRegex struct {
	src       string
	parseOnce sync.Once
	once      sync.Once
	re        *regexp.Regexp
	tree      *syntax.Regexp
	err       error
}

var (
	regexCacheMu sync.Mutex
	regexCache   = map[string]*lazyRegex{}
)

// sharedRegex returns the process-wide lazy regex for src, so that Scrubbers built one
// after another (tests, a daemon reloading its config) compile each pattern once.
func sharedRegex(src string) *lazyRegex {
	regexCacheMu.Lock()
	defer regexCacheMu.Unlock()
	l, ok := regexCache[src]
	if !ok {
		l = &lazyRegex{src: src}
		regexCache[src] = l
	}
	return l
}

// parsed returns the syntax tree, without compiling: rules that run anchored never
// need their regex as written.
func (l *lazyRegex) parsed() (*syntax.Regexp, error) {
	l.parseOnce.Do(func() { l.tree, l.err = syntax.Parse(l.src, syntax.Perl) })
	return l.tree, l.err
}

func (l *lazyRegex) get() (*regexp.Regexp, error) {
	l.once.Do(func() {
		if _, err := l.parsed(); err != nil {
			return
		}
		l.re, l.err = regexp.Compile(l.src)
	})
	return l.re, l.err
}

func (r *rule) regex() *regexp.Regexp {
	if r.re == nil {
		return nil
	}
	re, err := r.re.get()
	if err != nil {
		// Default rules are checked by a test; user rules by compileNow in New.
		panic(fmt.Sprintf("scrub: rule %s: %v", r.id, err))
	}
	return re
}

// compileNow compiles and validates a user rule, for New to report errors up front.
func (r *rule) compileNow() error {
	if r.regexSrc == "" {
		return nil
	}
	re, err := r.re.get()
	if err != nil {
		return fmt.Errorf("%s: invalid regex: %w", r.id, err)
	}
	if r.secretGroup > re.NumSubexp() {
		return fmt.Errorf("%s: invalid regex secret group %d, max regex secret group %d", r.id, r.secretGroup, re.NumSubexp())
	}
	if r.pathSrc != "" {
		if _, err := regexp.Compile(r.pathSrc); err != nil {
			return fmt.Errorf("%s: invalid path regex: %w", r.id, err)
		}
	}
	return nil
}

// active reports whether Find can ever report this rule: path rules need a file path.
func (r *rule) active() bool {
	return r.regexSrc != "" && r.pathSrc == ""
}

func (r *rule) clone() *rule {
	c := &rule{
		id: r.id, description: r.description, regexSrc: r.regexSrc, pathSrc: r.pathSrc,
		secretGroup: r.secretGroup, entropy: r.entropy, skipReport: r.skipReport, re: r.re,
	}
	c.keywords = append([]string(nil), r.keywords...)
	c.tags = append([]string(nil), r.tags...)
	c.allowlists = append([]*allowlist(nil), r.allowlists...)
	c.required = append([]required(nil), r.required...)
	return c
}

// mergeOverride applies a user rule of the same id on top of a base rule, with gitleaks'
// extend semantics: set scalar fields win, lists are appended.
func (r *rule) mergeOverride(u *rule) {
	if u.description != "" {
		r.description = u.description
	}
	if u.entropy != 0 {
		r.entropy = u.entropy
	}
	if u.secretGroup != 0 {
		r.secretGroup = u.secretGroup
	}
	if u.regexSrc != "" {
		r.regexSrc = u.regexSrc
		r.re = u.re
	}
	if u.pathSrc != "" {
		r.pathSrc = u.pathSrc
	}
	r.tags = append(r.tags, u.tags...)
	r.keywords = append(r.keywords, u.keywords...)
	r.allowlists = append(r.allowlists, u.allowlists...)
	r.required = append(r.required, u.required...)
	r.skipReport = r.skipReport || u.skipReport
}

// plan returns how the rule runs around its keyword hits, computing it on first use.
func (r *rule) plan() *plan {
	r.prep.Do(func() {
		tree, err := r.re.parsed()
		if err != nil {
			panic(fmt.Sprintf("scrub: rule %s: %v", r.id, err))
		}
		r.planOf = makePlan(r.regexSrc, tree, numCaptures(tree), r.keywords)
		if r.planOf.anchored == nil {
			r.planOf.win = windowDFA(r.regexSrc, tree)
		}
	})
	return &r.planOf
}

// defaultRules is gitleaks' default rule set, parsed once per process.
var (
	defaultOnce sync.Once
	defaultSet  *partialConfig
	defaultErr  error
)

func defaults() (*partialConfig, error) {
	defaultOnce.Do(func() {
		tc, err := parseDefaultTOML(gitleaksDefaultConfig())
		if err != nil {
			// A newer gitleaks may use TOML the quick parser does not know.
			if tc, defaultErr = decodeTOML(gitleaksDefaultConfig(), "gitleaks default config"); defaultErr != nil {
				return
			}
		}
		defaultSet, defaultErr = translate(tc, true)
	})
	return defaultSet, defaultErr
}

func numCaptures(re *syntax.Regexp) int {
	n := 0
	if re.Op == syntax.OpCapture {
		n++
	}
	for _, s := range re.Sub {
		n += numCaptures(s)
	}
	return n
}
