// Package envallow decides which environment variables a tool call carries from
// the caller into the command it runs: an allowlist, extended by configuration,
// minus anything whose name or value looks like a credential. The proxy sends only
// what passes; the daemon filters again, since it does not trust what it receives.
package envallow

import (
	"math"
	"strings"
)

// HookPrefix starts the variables an automation's run gets from the daemon
// (CONTEXTD_HOOK_REF...). They never come from a caller: the allowlist
// does not hold them, and the daemon sets them for a webhook's call only.
const HookPrefix = "CONTEXTD_HOOK_"

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

// credentialWords are the parts of a variable name (split at '_') that say it
// holds a secret: GITHUB_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY, but not
// KEYBOARD or MONKEY. Plain string checks, not regular expressions: the proxy runs
// them on every variable at every start.
var credentialWords = map[string]bool{
	"TOKEN": true, "SECRET": true, "PASSWORD": true, "PASSWD": true, "PASS": true, "PWD": true,
	"KEY": true, "APIKEY": true, "AUTH": true, "CREDENTIAL": true, "CREDENTIALS": true,
	"PRIVATE": true, "COOKIE": true, "SESSION": true, "SIGNATURE": true, "DSN": true,
}

// tokenPrefixes are the starts of well-known token shapes (GitHub, GitLab, Slack,
// OpenAI/Anthropic-style, Stripe, AWS, Google), compared case-insensitively.
var tokenPrefixes = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
	"xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "sk-", "sk_live_", "rk_live_",
	"akia", "asia", "aiza", "ya29."}

func credentialName(name string) bool {
	for _, w := range strings.Split(strings.ToUpper(name), "_") {
		if credentialWords[w] {
			return true
		}
	}
	return false
}

func credentialValue(v string) bool {
	lower := strings.ToLower(v)
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	switch {
	case strings.HasPrefix(lower, "eyj") && strings.Count(v, ".") >= 2: // a JWT
		return true
	case strings.Contains(v, "-----BEGIN ") && strings.Contains(v, "PRIVATE KEY-----"):
		return true
	case urlWithPassword(v):
		return true
	}
	for _, scheme := range []string{"bearer ", "basic "} {
		if rest, ok := strings.CutPrefix(lower, scheme); ok && len(rest) >= 8 && !strings.ContainsAny(rest, " \t") {
			return true
		}
	}
	return false
}

// urlWithPassword reports whether v holds scheme://user:password@host.
func urlWithPassword(v string) bool {
	for {
		i := strings.Index(v, "://")
		if i < 0 {
			return false
		}
		v = v[i+3:]
		end := strings.IndexAny(v, "/ \t")
		if end < 0 {
			end = len(v)
		}
		authority := v[:end]
		if at := strings.LastIndexByte(authority, '@'); at > 0 {
			if colon := strings.IndexByte(authority[:at], ':'); colon > 0 && colon < at-1 {
				return true
			}
		}
	}
}

// LooksLikeCredential reports whether a variable is probably a secret: its name
// says so (the one exception is PWD, the working directory), its value has a known
// token shape, or it is a long high-entropy string with no spaces or slashes
// (which paths and ordinary settings have).
func LooksLikeCredential(name, value string) bool {
	if name == "PWD" || name == "OLDPWD" {
		return false
	}
	if credentialName(name) || credentialValue(value) {
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
