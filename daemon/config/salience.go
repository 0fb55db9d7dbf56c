package config

import (
	"fmt"

	"github.com/contextd/contextd/salience"
)

// Salience configures the salience pass: what the first page of a
// safe_bash or safe_read output over its budget shows (package salience).
type Salience struct {
	// Enabled shows failures first (head, the salient blocks, tail, passing
	// tests' progress folded). Off: head and tail only, the head streamed
	// as the command prints it.
	Enabled bool `toml:"enabled"`
	// Rules are more line rules, after the built-in table.
	Rules []SalienceRule `toml:"rules"`
}

// SalienceRule is one user rule: lines matching Pattern (RE2) are a
// failure (shown with Before and After lines of context) or a summary.
type SalienceRule struct {
	Name    string `toml:"name"`
	Pattern string `toml:"pattern"`
	Kind    string `toml:"kind"`
	Before  int    `toml:"before"`
	After   int    `toml:"after"`
}

func defaultSalience() Salience { return Salience{Enabled: true, Rules: []SalienceRule{}} }

// Set compiles the built-in rules and the user's.
func (s *Salience) Set() (*salience.Set, error) {
	var extra []salience.UserRule
	for _, r := range s.Rules {
		extra = append(extra, salience.UserRule{Name: r.Name, Pattern: r.Pattern, Kind: r.Kind, Before: r.Before, After: r.After})
	}
	set, err := salience.Compile(extra)
	if err != nil {
		return nil, fmt.Errorf("salience.rules: %v", err)
	}
	return set, nil
}

func (s *Salience) validate() error {
	_, err := s.Set()
	return err
}
