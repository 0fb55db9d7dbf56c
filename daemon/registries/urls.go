package registries

import (
	"strconv"
	"strings"
)

// hostURL is an http(s) URL from a configuration file, cut the way the
// scrubber's URL rule cuts it, so that the password found here is the one
// the scrubbed copy replaced.
type hostURL struct {
	scheme   string
	host     string
	port     int
	userinfo string // as written, before the last '@' of the authority
}

// parseURL parses an http or https URL as written. why says, without
// quoting any of it, what is wrong with one that does not parse.
func parseURL(raw string) (u hostURL, why string) {
	raw = strings.TrimSpace(raw)
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return u, "not a URL"
	}
	u.scheme = strings.ToLower(scheme)
	if u.scheme != "http" && u.scheme != "https" {
		if isToken(u.scheme) {
			return u, "a " + u.scheme + " URL, not http(s)"
		}
		return u, "not an http(s) URL"
	}
	// The authority runs to a path, a blank or a quote, and its userinfo to
	// the last '@' (scrub/own_rules.go, urlCredential): passwords are often
	// written with '?', '#' and '@' unescaped.
	end := strings.IndexFunc(rest, func(r rune) bool {
		return r <= ' ' || strings.ContainsRune("/\"'`<>\\\x7f", r)
	})
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	hostport := auth
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		u.userinfo, hostport = auth[:at], auth[at+1:]
	}
	if i := strings.IndexAny(hostport, "?#"); i >= 0 {
		hostport = hostport[:i]
	}
	u.port = 443
	if u.scheme == "http" {
		u.port = 80
	}
	host := hostport
	if strings.HasPrefix(hostport, "[") {
		i := strings.IndexByte(hostport, ']')
		if i < 0 {
			return u, "a URL with a malformed host"
		}
		host = hostport[1:i]
		hostport = hostport[i+1:]
		if hostport != "" && hostport[0] != ':' {
			return u, "a URL with a malformed host"
		}
		if !strings.Contains(host, ":") {
			return u, "a URL with a malformed host"
		}
	} else if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		host = hostport[:i]
		hostport = hostport[i:]
	} else {
		hostport = ""
	}
	if p, ok := strings.CutPrefix(hostport, ":"); ok && p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return u, "a URL with a malformed port"
		}
		u.port = n
	}
	host = strings.ToLower(host)
	if !validHost(host) {
		return u, "a URL with a malformed host"
	}
	u.host = host
	return u, ""
}

// validHost accepts DNS names (with '_', which private registries use) and
// IP literals.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == ':') {
			return false
		}
	}
	return true
}

// isToken reports a short word safe to quote in a note.
func isToken(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// password returns the credential of a URL's userinfo as the scrubber's URL
// rule yields it: what follows the first ':', as written (percent escapes
// and all); or, with no ':', a user part long enough to be a token
// (https://<token>@host). The scrubber leaves out stand-ins ("${PW}",
// "pass"); those are left out here too, so that no rule waits for a
// placeholder the sandbox never sees.
func (u hostURL) password() (string, bool) {
	if u.userinfo == "" {
		return "", false
	}
	user, pw, ok := strings.Cut(u.userinfo, ":")
	if !ok {
		if len(user) >= 20 && !standIn(user) {
			return user, true
		}
		return "", false
	}
	if pw == "" || standIn(pw) {
		return "", false
	}
	return pw, true
}

// standIn reports a password that stands for one kept elsewhere: a
// template or a variable. (The scrubber's judgement of weak passwords is
// its own; a rule for a password it left in place is never used, and
// harmless.)
func standIn(pw string) bool {
	return pw[0] == '{' || pw[0] == '<' || pw[0] == '$' || pw[0] == '%' && strings.HasSuffix(pw, "%")
}

func (u hostURL) hostPort() string {
	h := u.host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(u.port)
}
