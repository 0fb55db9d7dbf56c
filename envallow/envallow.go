// Package envallow is the allowlist of environment variables a tool call carries
// from the caller into the command it runs. The proxy sends only these; the daemon
// filters again, since it does not trust what it receives.
package envallow

import "strings"

// names are the variables passed through; LC_* are added by prefix. Everything
// else stays behind: tokens and keys live in agents' environments.
var names = map[string]bool{
	"PATH": true, "LANG": true, "LANGUAGE": true, "TERM": true, "TZ": true,
	"COLORTERM": true, "NO_COLOR": true,
}

// Allowed reports whether variable name may be passed.
func Allowed(name string) bool {
	return names[name] || strings.HasPrefix(name, "LC_") && len(name) > 3
}
