// Package httpguard is the HTTP API's front door: who may ask, from where. On the
// loopback TCP listener a request needs the per-install bearer token, a loopback
// Host (against DNS rebinding) and no browser Origin but those configured; on the
// Unix socket, whose peer the kernel already vouches for, it refuses browser
// Origins and requests a reverse proxy forwarded, except webhook deliveries.
package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// The classes of the guard's refusals, named once here.
var (
	// classToken: no bearer token, or a wrong one.
	classToken = catalog.ErrToken
	// classOrigin: a Host that is not a loopback name, a browser Origin not
	// configured, or a forwarded request on the Unix socket.
	classOrigin = catalog.ErrHostRefused
)

// HooksPrefix is where webhook deliveries arrive. They carry their own
// signature, so they need no token, may come through the user's tunnel with
// its Host and forwarding headers, and are the only requests a reverse proxy
// may forward to the Unix socket.
const HooksPrefix = "/v1/hooks/"

// Guard checks requests before the API sees them. Make one with TCP or Unix.
type Guard struct {
	tokenSum [sha256.Size]byte // of the bearer token; TCP only
	tcp      bool
	origins  map[string]bool
}

// TCP guards the loopback TCP listener: every request but a webhook delivery
// needs token as "Authorization: Bearer <token>" and a loopback Host; browser
// Origins are refused unless listed in allowedOrigins (exact
// "scheme://host[:port]").
func TCP(token string, allowedOrigins []string) (*Guard, error) {
	if len(token) < 32 {
		return nil, fmt.Errorf("the HTTP API token is %d bytes; it needs at least 32 (LoadToken makes one): %w", len(token), catalog.ErrConfig)
	}
	g, err := newGuard(allowedOrigins)
	if err != nil {
		return nil, err
	}
	g.tcp = true
	g.tokenSum = sha256.Sum256([]byte(token))
	return g, nil
}

// Unix guards the Unix socket, whose peer is the user (SO_PEERCRED): no token
// and no Host rule, but the Origin rule, and requests carrying Forwarded,
// X-Forwarded-For or X-Real-IP are refused outside HooksPrefix, so that a
// reverse proxy pointed at the socket does not hand out the user's API.
func Unix(allowedOrigins []string) (*Guard, error) {
	return newGuard(allowedOrigins)
}

func newGuard(allowedOrigins []string) (*Guard, error) {
	g := &Guard{origins: map[string]bool{}}
	for _, o := range allowedOrigins {
		if err := CheckOrigin(o); err != nil {
			return nil, err
		}
		g.origins[o] = true
	}
	return g, nil
}

// CheckOrigin accepts o as an allowed origin when it is what a browser sends:
// "scheme://host[:port]" in lower case, http or https, nothing after. "*" and
// "null" are never allowed: either would let any page in.
func CheckOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Contains(u.Host, "*") || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || o != strings.ToLower(o) || strings.HasSuffix(o, "/") {
		return fmt.Errorf("allowed origin %q is not an exact origin like \"https://editor.example:8443\" (no wildcard, path or trailing slash): %w", o, catalog.ErrConfig)
	}
	return nil
}

// CheckLoopback accepts addr ("host:port") for the TCP listener only when host
// is a loopback IP (127.0.0.0/8 or ::1): the API never listens beyond this
// machine; exposing it is a reverse proxy's job.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("[http] tcp %q is not host:port: %v: %w", addr, err, catalog.ErrConfig)
	}
	ip := net.ParseIP(host)
	loopback := ip != nil && ip.IsLoopback()
	if strings.Contains(host, ":") {
		// IPv6: ::1 only, not an IPv4-mapped address (::ffff:127.0.0.1).
		loopback = ip != nil && ip.Equal(net.IPv6loopback)
	}
	if !loopback {
		return fmt.Errorf("[http] tcp %q: the HTTP API listens only on a loopback address (127.0.0.1 or [::1]); put a reverse proxy in front to expose it: %w", addr, catalog.ErrConfig)
	}
	return nil
}

// Wrap returns next behind the guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hook := isHook(r.URL.Path)
		if g.tcp && !hook && !loopbackHost(r.Host) {
			refuse(w, fmt.Errorf("Host %q is not a loopback name (localhost, 127.0.0.1, [::1]): %w", r.Host, classOrigin))
			return
		}
		if !g.tcp && !hook {
			for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
				if r.Header.Get(h) != "" {
					refuse(w, fmt.Errorf("a forwarded request (%s) on the Unix socket: only webhooks (%s…) may come through a proxy; point tunnels at the token-guarded TCP listener: %w", h, HooksPrefix, classOrigin))
					return
				}
			}
		}
		origin, browser := r.Header["Origin"]
		if browser {
			w.Header().Add("Vary", "Origin")
			if len(origin) != 1 || !g.origins[origin[0]] {
				refuse(w, fmt.Errorf("Origin %q is not in [http] allowed_origins: %w", strings.Join(origin, ", "), classOrigin))
				return
			}
			w.Header().Set("Access-Control-Allow-Origin", origin[0])
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				preflight(w)
				return
			}
		}
		if g.tcp && !hook && !g.tokenOK(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="contextd"`)
			refuse(w, fmt.Errorf("the HTTP API over TCP needs \"Authorization: Bearer <token>\" with the token in $XDG_STATE_HOME/contextd/http-token: %w", classToken))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers a browser's CORS preflight for an allowed origin. It carries
// no credentials, so it needs no token; the request that follows does.
func preflight(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// tokenOK compares the bearer token in constant time; hashing both sides first
// keeps the comparison's length fixed too.
func (g *Guard) tokenOK(authorization string) bool {
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], g.tokenSum[:]) == 1
}

// loopbackHost reports whether host (a Host header, with or without a port)
// names this machine: a page on a rebound DNS name carries that name here.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// isHook reports whether p is a webhook delivery's path. A path that cleans to
// something else ("/v1/hooks/../calls") is not.
func isHook(p string) bool {
	return strings.HasPrefix(p, HooksPrefix) && len(p) > len(HooksPrefix) && path.Clean(p) == p
}

// refuse answers err as problem details.
func refuse(w http.ResponseWriter, err error) {
	p := catalog.ToProblem(err)
	w.Header().Set("Content-Type", catalog.ProblemType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}
