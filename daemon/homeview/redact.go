package homeview

import (
	"bytes"
	"regexp"
	"strings"
)

// RuleConfigCredential names the secrets Redact finds, in their placeholders.
const RuleConfigCredential = "contextd-config-credential"

// credentialKeys are the last words of a configuration key whose value is a
// credential whatever it looks like: the secret scanners judge a value by its
// shape and entropy, and a registry password may be a dictionary word. Keys
// are compared lower-case, after the last ':' '.' '/' (npm's
// "//host/:_authToken", gradle's "signing.password").
var credentialKeys = []string{
	"_authtoken", "_auth", "_password", // npm (.npmrc)
	"npmauthtoken", "npmauthident", "npmpassword", // yarn berry (.yarnrc.yml)
	"token", "password", "passwd", "secret", "passphrase", // cargo, pip, uv, poetry, gradle
	"apikey", "api_key", "api-key", "accesstoken", "access_token", "auth-token",
	"extraheader", // git's http.extraHeader: "Authorization: Bearer ..."
}

// credentialKey reports whether a key names a credential: one of
// credentialKeys, or a name ending in one of the generic ones
// ("mavenPassword", "artifactory_password", "nexus.token").
func credentialKey(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	if i := strings.LastIndexAny(k, ":./"); i >= 0 {
		k = k[i+1:]
	}
	for _, c := range credentialKeys {
		if k == c {
			return true
		}
	}
	for _, suffix := range []string{"password", "passwd", "token", "secret", "passphrase", "apikey", "api_key"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// assignment is one "key = value" or "key: value" line of an ini, properties,
// TOML, npmrc or YAML file.
var assignment = regexp.MustCompile(`^(\s*-?\s*["']?)([^=:"'\s#;][^=:"'\s]*(?::[^=:"'\s]+)*)(["']?\s*[=:]\s*)(.*)$`)

// spacePair is one "key value" line of yarn v1's .yarnrc, where a space
// separates the two ("//host/:_authToken" TOKEN).
var spacePair = regexp.MustCompile(`^(\s*"?)([^"\s=#;\[][^"\s]*)("?[ \t]+)(\S.*)$`)

// urlUserinfo is the user info of a URL ("https://user:token@host",
// "https://token@host"): git remotes and url.<base>.insteadOf, GOPROXY,
// pip's index-url, a registry in any rc file. It is a credential whatever
// key it sits under, and even in a section header.
var urlUserinfo = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)([^/?#@\s"'<>\[\]]+)@`)

// xmlSecret is an XML element holding a credential (Maven's settings.xml:
// <password>, <passphrase>).
var xmlSecret = regexp.MustCompile(`(?i)(<(password|passphrase)>)([^<]+)(</(?:password|passphrase)>)`)

// Redact replaces, in a toolchain configuration file, the value of every key
// that names a credential with placeholder(secret), whatever the value looks
// like. Values that only refer to a secret elsewhere (${NPM_TOKEN}) are left
// as they are. The caller runs the secret scanner over the result as well,
// for what no key names (a password in a URL).
func Redact(content []byte, placeholder func(secret string) string) []byte {
	content = xmlSecret.ReplaceAllFunc(content, func(m []byte) []byte {
		g := xmlSecret.FindSubmatch(m)
		v := string(bytes.TrimSpace(g[3]))
		if v == "" || isReference(v) {
			return m
		}
		return append(append(append([]byte{}, g[1]...), placeholder(v)...), g[4]...)
	})
	content = urlUserinfo.ReplaceAllFunc(content, func(m []byte) []byte {
		g := urlUserinfo.FindSubmatch(m)
		v := string(g[2])
		if isReference(v) { // (a placeholder has brackets, which urlUserinfo excludes)
			return m
		}
		// user:password: the password is the secret, and the one the egress
		// proxy puts back (a registry's placeholder for it is the same); the
		// user name stays, as the tool must send it. A lone token@ is the
		// secret itself.
		// (GitHub's TOKEN:x-oauth-basic@ puts the token in the user's place.)
		if user, pass, ok := strings.Cut(v, ":"); ok && !strings.EqualFold(pass, "x-oauth-basic") && pass != "" {
			if isReference(pass) {
				return m
			}
			return append(append(append([]byte{}, g[1]...), user+":"+placeholder(pass)...), '@')
		}
		return append(append(append([]byte{}, g[1]...), placeholder(v)...), '@')
	})
	lines := bytes.SplitAfter(content, []byte("\n"))
	var out bytes.Buffer
	for _, line := range lines {
		body, nl := bytes.CutSuffix(line, []byte("\n"))
		g := assignment.FindSubmatch(body)
		if g == nil || !credentialKey(strings.Trim(string(g[2]), `"'`)) {
			g = spacePair.FindSubmatch(body)
		}
		if g == nil || !credentialKey(strings.Trim(string(g[2]), `"'`)) {
			out.Write(line)
			continue
		}
		val := string(g[4])
		lead, secret, tail := splitValue(val)
		if secret == "" || isReference(secret) || strings.HasPrefix(secret, "[REDACTED:") {
			out.Write(line)
			continue
		}
		out.Write(g[1])
		out.Write(g[2])
		out.Write(g[3])
		out.WriteString(lead + placeholder(secret) + tail)
		if nl {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// splitValue separates a value from its quotes and a trailing comment.
func splitValue(v string) (lead, secret, tail string) {
	trimmed := strings.TrimRight(v, " \t\r")
	tail = v[len(trimmed):]
	for _, q := range []string{`"`, `'`} {
		if strings.HasPrefix(trimmed, q) {
			if end := strings.Index(trimmed[1:], q); end >= 0 {
				return q, trimmed[1 : 1+end], trimmed[1+end:] + tail
			}
		}
	}
	// An unquoted value ends at a comment that follows a space.
	if i := strings.Index(trimmed, " #"); i >= 0 {
		return "", strings.TrimSpace(trimmed[:i]), trimmed[i:] + tail
	}
	return "", strings.TrimSpace(trimmed), tail
}

// isReference reports whether a value names a secret kept elsewhere (an
// environment variable) rather than holding it.
func isReference(v string) bool {
	return strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") || strings.HasPrefix(v, "$") && !strings.ContainsAny(v[1:], " ${}") && len(v) > 1 && strings.ToUpper(v[1:]) == v[1:]
}
