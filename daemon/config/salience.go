package config

// Salience configures the salience pass: what the first page of a
// safe_bash or safe_read output over its budget shows. Package salience
// compiles the rules (salience.Compile, whose UserRule SalienceRule
// converts to).
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
