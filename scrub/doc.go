// Package scrub finds secrets in text with gitleaks' rules (and a few of contextd's own) and replaces them with numbered placeholders.
//
// The rule set is gitleaks' default configuration, parsed from the copy embedded in the
// gitleaks module (so it follows the gitleaks version in go.mod), plus an optional user
// configuration in gitleaks' TOML format, plus contextd's rules for credential-named
// assignments (RuleEnvCredential) and passwords in URLs (RuleURLCredential).
//
// Building a Scrubber is cheap on purpose: sandbox processes build one per tool call, so
// no rule regex is compiled by New; each is prepared the first time one of its keywords
// is seen. Find scans the input once with a case-insensitive multi-keyword automaton and
// runs each rule only where its keywords are: most rules as an anchored regex at the
// keyword, once a DFA built lazily from the regex has found that a match may start there
// (most hits are rejected within a few bytes), the others on windows around it derived
// from the regex's syntax, spread over the available cores.
//
// Find keeps gitleaks' semantics where they decide what is found: keywords, secret
// groups, entropy thresholds, global and per-rule allowlists (regexes on the secret, the
// match or the line, stopwords, AND/OR conditions), composite rules ([[rules.required]])
// and the decoding of base64, hex, percent and unicode-escaped text that `gitleaks stdin`
// does. It differs where a scrubber should:
//
//   - overlapping findings are merged into one span, named after the most specific rule;
//   - "gitleaks:allow" comments are not honoured: text that leaves for a model provider
//     is scrubbed whatever it says about itself;
//   - rules with a path condition never fire, as with `gitleaks stdin`: text has no path;
//   - a rule runs per keyword occurrence rather than in one pass over the whole text,
//     which can only add findings where gitleaks' matches would overlap;
//   - on lines longer than a few kilobytes, the "line" an allowlist sees and the text
//     decoded around an encoded segment are limited to 4 KiB and 2 KiB around it.
//
// Stream applies the same detection to output that arrives in pieces, and Vault maps
// placeholders back to secrets for one session so that files written back keep theirs.
package scrub
