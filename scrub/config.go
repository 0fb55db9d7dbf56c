package scrub

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/BurntSushi/toml"
	gitleaksconfig "github.com/zricethezav/gitleaks/v8/config"
)

// tomlConfig mirrors gitleaks' configuration file (config.ViperConfig). It is decoded with
// BurntSushi/toml rather than viper: viper plus compiling every regex is what makes
// gitleaks' own loader take ~80 ms, and sandbox processes build a Scrubber per call.
// BurntSushi matches keys case-insensitively, as viper does.
type tomlConfig struct {
	Title       string
	Description string
	MinVersion  string
	Extend      tomlExtend
	Rules       []tomlRule
	// Deprecated single [allowlist] table, still used by gitleaks' own default config.
	AllowList  *tomlAllowlist
	Allowlists []*tomlAllowlist
}

type tomlExtend struct {
	Path          string
	URL           string
	UseDefault    bool
	DisabledRules []string
}

type tomlRule struct {
	ID          string
	Description string
	Path        string
	Regex       string
	SecretGroup int
	Entropy     float64
	Keywords    []string
	Tags        []string
	// Deprecated single [rules.allowlist] table.
	AllowList  *tomlAllowlist
	Allowlists []*tomlAllowlist
	Required   []tomlRequired
	SkipReport bool
}

type tomlRequired struct {
	ID            string
	WithinLines   *int
	WithinColumns *int
}

type tomlAllowlist struct {
	Description string
	Condition   string
	Commits     []string
	Paths       []string
	RegexTarget string
	Regexes     []string
	StopWords   []string
	// Only in global allowlists: the rules the allowlist applies to (all when empty).
	TargetRules []string
}

// maxExtendDepth is gitleaks' limit on chained [extend] path configs (gitleaks ignores
// deeper ones silently; New says so).
const maxExtendDepth = 2

// ruleSet is the merged configuration: rules in a stable order and the global allowlists.
type ruleSet struct {
	rules      []*rule
	byID       map[string]*rule
	allowlists []*allowlist
}

func decodeTOML(text, what string) (*tomlConfig, error) {
	var tc tomlConfig
	if _, err := toml.Decode(text, &tc); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &tc, nil
}

// loadRuleSet builds gitleaks' defaults plus the user's config (which may be empty). The
// user's config is always layered on the defaults, as if it said [extend] useDefault =
// true; an [extend] path is layered in between, as gitleaks does.
func loadRuleSet(extra string) (*ruleSet, error) {
	base, err := defaults()
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(extra) == "" {
		return finish(base)
	}
	user, err := decodeTOML(extra, "ExtraConfig")
	if err != nil {
		return nil, err
	}
	merged, err := layer(user, base, 0)
	if err != nil {
		return nil, fmt.Errorf("ExtraConfig: %w", err)
	}
	rs, err := finish(merged)
	if err != nil {
		return nil, fmt.Errorf("ExtraConfig: %w", err)
	}
	return rs, nil
}

// gitleaksDefaultConfig is the TOML text of gitleaks' default rules, embedded in its module.
func gitleaksDefaultConfig() string { return gitleaksconfig.DefaultConfig }

// layer translates tc and extends it with base (or with the config tc's [extend] path
// names, itself extending base), following gitleaks' Config.extend.
func layer(tc *tomlConfig, base *partialConfig, depth int) (*partialConfig, error) {
	cur, err := translate(tc, false)
	if err != nil {
		return nil, err
	}
	if tc.Extend.URL != "" {
		return nil, errors.New("[extend] url is not supported (gitleaks does not implement it either); inline the rules or use [extend] path")
	}
	below := base
	if tc.Extend.Path != "" {
		if depth+1 > maxExtendDepth {
			return nil, fmt.Errorf("[extend] path %q: configs extend each other more than %d levels deep", tc.Extend.Path, maxExtendDepth)
		}
		text, err := os.ReadFile(tc.Extend.Path)
		if err != nil {
			return nil, fmt.Errorf("[extend] path: %w", err)
		}
		sub, err := decodeTOML(string(text), tc.Extend.Path)
		if err != nil {
			return nil, err
		}
		if below, err = layer(sub, base, depth+1); err != nil {
			return nil, fmt.Errorf("[extend] path %s: %w", tc.Extend.Path, err)
		}
	}
	disabled := map[string]bool{}
	for _, id := range tc.Extend.DisabledRules {
		disabled[id] = true
	}
	merged := &partialConfig{byID: map[string]*rule{}, targeted: cur.targeted}
	// Base rules first, in their order; a rule the user redefines is merged into the
	// base one (user fields win, lists are concatenated), as gitleaks' extend does.
	for _, br := range below.rules {
		if disabled[br.id] {
			continue
		}
		r := br.clone()
		if ur, ok := cur.byID[br.id]; ok {
			r.mergeOverride(ur)
			// The merged rule may pair the base regex with the user's secretGroup.
			if err := r.compileNow(); err != nil {
				return nil, err
			}
		}
		merged.add(r)
	}
	for _, ur := range cur.rules {
		// disabledRules only removes base rules: the user's own rule of that id stays.
		if _, ok := merged.byID[ur.id]; ok {
			continue
		}
		merged.add(ur)
	}
	merged.allowlists = append(append([]*allowlist{}, cur.allowlists...), below.allowlists...)
	for id, als := range below.targeted {
		merged.targeted[id] = append(merged.targeted[id], als...)
	}
	return merged, nil
}

// partialConfig is one translated config layer before targeted allowlists are attached.
type partialConfig struct {
	rules      []*rule
	byID       map[string]*rule
	allowlists []*allowlist
	targeted   map[string][]*allowlist
}

func (p *partialConfig) add(r *rule) {
	p.rules = append(p.rules, r)
	p.byID[r.id] = r
}

// translate turns one decoded config into rules and allowlists. Regexes of trusted configs
// (gitleaks' defaults) are compiled lazily; the user's are compiled now so that a bad
// pattern is reported by New rather than at the first scan.
func translate(tc *tomlConfig, trusted bool) (*partialConfig, error) {
	p := &partialConfig{byID: map[string]*rule{}, targeted: map[string][]*allowlist{}}
	for i := range tc.Rules {
		tr := &tc.Rules[i]
		if strings.TrimSpace(tr.ID) == "" {
			return nil, fmt.Errorf("[[rules]] #%d: rule |id| is missing or empty (description %q, regex %q)", i+1, tr.Description, tr.Regex)
		}
		if _, dup := p.byID[tr.ID]; dup {
			return nil, fmt.Errorf("[[rules]] %s: defined twice", tr.ID)
		}
		r := &rule{
			id:          tr.ID,
			description: tr.Description,
			regexSrc:    tr.Regex,
			pathSrc:     tr.Path,
			secretGroup: tr.SecretGroup,
			entropy:     tr.Entropy,
			tags:        tr.Tags,
			skipReport:  tr.SkipReport,
		}
		if tr.Regex != "" {
			r.re = sharedRegex(tr.Regex)
		}
		for _, k := range tr.Keywords {
			r.keywords = append(r.keywords, strings.ToLower(k))
		}
		if tr.AllowList != nil {
			if len(tr.Allowlists) > 0 {
				return nil, fmt.Errorf("%s: [rules.allowlist] is deprecated, it cannot be used alongside [[rules.allowlists]]", tr.ID)
			}
			tr.Allowlists = append(tr.Allowlists, tr.AllowList)
		}
		for j, ta := range tr.Allowlists {
			a, err := newAllowlist(ta, !trusted)
			if err != nil {
				return nil, fmt.Errorf("%s: [[rules.allowlists]] #%d: %w", tr.ID, j+1, err)
			}
			r.allowlists = append(r.allowlists, a)
		}
		for _, rq := range tr.Required {
			if rq.ID == "" {
				return nil, fmt.Errorf("%s: [[rules.required]] rule ID is empty", tr.ID)
			}
			r.required = append(r.required, required{id: rq.ID, withinLines: rq.WithinLines, withinColumns: rq.WithinColumns})
		}
		if !trusted {
			if err := r.compileNow(); err != nil {
				return nil, err
			}
		}
		p.add(r)
	}
	if tc.AllowList != nil {
		if len(tc.Allowlists) > 0 {
			return nil, errors.New("[allowlist] is deprecated, it cannot be used alongside [[allowlists]]")
		}
		tc.Allowlists = append(tc.Allowlists, tc.AllowList)
	}
	for j, ta := range tc.Allowlists {
		a, err := newAllowlist(ta, !trusted)
		if err != nil {
			return nil, fmt.Errorf("[[allowlists]] #%d: %w", j+1, err)
		}
		if len(ta.TargetRules) == 0 {
			p.allowlists = append(p.allowlists, a)
			continue
		}
		for _, id := range ta.TargetRules {
			p.targeted[id] = append(p.targeted[id], a)
		}
	}
	return p, nil
}

// finish attaches targeted allowlists and checks references between rules, which can only
// be done once all layers are merged.
func finish(p *partialConfig) (*ruleSet, error) {
	rs := &ruleSet{byID: p.byID, allowlists: p.allowlists}
	for id, als := range p.targeted {
		r, ok := p.byID[id]
		if !ok {
			return nil, fmt.Errorf("[[allowlists]] target rule ID '%s' does not exist", id)
		}
		r.allowlists = append(r.allowlists, als...)
	}
	for _, r := range p.rules {
		if r.regexSrc == "" && r.pathSrc == "" {
			return nil, fmt.Errorf("%s: both |regex| and |path| are empty, this rule will have no effect", r.id)
		}
		for _, rq := range r.required {
			if _, ok := p.byID[rq.id]; !ok {
				return nil, fmt.Errorf("%s: [[rules.required]] rule ID '%s' does not exist", r.id, rq.id)
			}
		}
		rs.rules = append(rs.rules, r)
	}
	return rs, nil
}
