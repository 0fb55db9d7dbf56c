// Package envallow decides which environment variables a tool call carries from
// the caller into the command it runs: an allowlist, extended by configuration,
// minus anything whose name or value looks like a credential. The proxy sends only
// what passes; the daemon filters again, since it does not trust what it receives.
package envallow

import (
	"math"
	"regexp"
	"strings"
	"sync"
)

// base are the variables always passed (if they pass the credential check);
// LC_* are added by prefix. Everything else stays behind: tokens and keys live in
// agents' environments.
var base = map[string]bool{
	"PATH": true, "LANG": true, "LANGUAGE": true, "TERM": true, "TZ": true,
	"COLORTERM": true, "NO_COLOR": true,
}

// Allowed reports whether variable name is on the base allowlist or on extra
// (from configuration).
func Allowed(name string, extra []string) bool {
	if base[name] || strings.HasPrefix(name, "LC_") && len(name) > 3 {
		return true
	}
	for _, e := range extra {
		if e == name {
			return true
		}
	}
	return false
}

// Pass reports whether name=value may be passed: allowed, and not a credential.
func Pass(name, value string, extra []string) bool {
	return Allowed(name, extra) && !LooksLikeCredential(name, value)
}

// credentialName matches names (compiled on first use: the proxy starts on
// every call, and most calls never need it) that say they hold a secret. The words are matched
// as parts of the name (GITHUB_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY), not as
// substrings of other words (KEYBOARD, MONKEY).
var credentialName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|KEY|APIKEY|AUTH|CREDENTIALS?|PRIVATE|COOKIE|SESSION|SIGNATURE|DSN)(_|$)`)
})

// credentialValue matches well-known token shapes (prefixes of GitHub, GitLab,
// Slack, OpenAI/Anthropic-style, AWS, Google, Stripe keys; PEM blocks; URLs with a
// password; bearer/basic auth headers).
var credentialValue = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)` +
		`^(gh[pousr]_|github_pat_|glpat-|xox[abposr]-|sk-|sk_live_|rk_live_|AKIA|ASIA|AIza|ya29\.|eyJ[A-Za-z0-9_-]{10,}\.)` +
		`|-----BEGIN [A-Z ]*PRIVATE KEY-----` +
		`|[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@` +
		`|^(bearer|basic) [A-Za-z0-9._~+/=-]{8,}$`)
})

// LooksLikeCredential reports whether a variable is probably a secret: its name
// says so (the one exception is PWD, the working directory), its value has a known
// token shape, or it is a long high-entropy string with no spaces or slashes
// (which paths and ordinary settings have).
func LooksLikeCredential(name, value string) bool {
	if name == "PWD" || name == "OLDPWD" {
		return false
	}
	if credentialName().MatchString(name) || credentialValue().MatchString(value) {
		return true
	}
	return len(value) >= 24 && !strings.ContainsAny(value, " /:") && entropy(value) >= 4.0
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
