package egress

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxRewriteBody is the largest body read to substitute placeholders in;
// larger and chunked bodies are streamed untouched, so an upload never sits
// in the daemon's memory. Lockfiles and publish manifests that carry tokens
// are far smaller.
const maxRewriteBody = 1 << 20

// credPort is the port a credential may be sent to: the one it names, else
// the default of its scheme (https unless it names an http:// origin).
func credPort(c *Credential) int {
	switch {
	case c.Port != 0:
		return c.Port
	case c.Cleartext:
		return 80
	default:
		return 443
	}
}

// credFor reports whether c belongs to host:port.
func credFor(c *Credential, host string, port int) bool {
	return c.Placeholder != "" && normalizeHost(c.Host) == host && credPort(c) == port
}

// intercepts reports whether connections to host:port are terminated to
// inject credentials: only hosts that own one, and only with a CA.
func (s *Server) intercepts(host string, port int) bool {
	if s.o.CA == nil {
		return false
	}
	return len(s.ownCreds(host, port)) > 0
}

// ownCreds are the credentials of host:port, whatever the transport: those
// whose secrets a response from there is scrubbed of.
func (s *Server) ownCreds(host string, port int) []*Credential {
	var out []*Credential
	for i := range s.o.Credentials {
		if c := &s.o.Credentials[i]; credFor(c, host, port) {
			out = append(out, c)
		}
	}
	return out
}

// rewriter substitutes the placeholders of the credentials that belong to
// one host:port and spots those of credentials that do not.
type rewriter struct {
	own     []*Credential // may be sent in this request
	clear   []*Credential // belong here but not over cleartext
	foreign []*Credential
	n       int
}

// newRewriter sorts the credentials for a request to host:port; overTLS
// says whether the proxy sends it encrypted.
func (s *Server) newRewriter(host string, port int, overTLS bool) *rewriter {
	rw := &rewriter{}
	mine := map[string]bool{}
	for i := range s.o.Credentials {
		c := &s.o.Credentials[i]
		if !credFor(c, host, port) {
			continue
		}
		mine[c.Placeholder] = true
		if overTLS || c.Cleartext {
			rw.own = append(rw.own, c)
		} else {
			rw.clear = append(rw.clear, c)
		}
	}
	for i := range s.o.Credentials {
		c := &s.o.Credentials[i]
		if c.Placeholder != "" && !mine[c.Placeholder] {
			rw.foreign = append(rw.foreign, c)
		}
	}
	return rw
}

// find returns the credential of list whose placeholder text holds, in
// clear or percent-encoded.
func find(list []*Credential, text string) *Credential {
	if text == "" || len(list) == 0 {
		return nil
	}
	forms := []string{text}
	if u, err := url.QueryUnescape(text); err == nil && u != text {
		forms = append(forms, u)
	}
	if u, err := url.PathUnescape(text); err == nil && u != text {
		forms = append(forms, u)
	}
	for _, c := range list {
		for _, f := range forms {
			if strings.Contains(f, c.Placeholder) {
				return c
			}
		}
	}
	return nil
}

// Where a placeholder is replaced decides how the secret is encoded.
type place int

const (
	inHeader place = iota // as is
	inTarget              // percent-encoded, whatever form the placeholder had
	inBody                // as is for a clear placeholder, form-encoded for an encoded one
)

// replace substitutes c's placeholder in text. Percent-encoded placeholders
// are replaced too in a target or body, since clients encode the brackets.
func (rw *rewriter) replace(c *Credential, text string, where place) string {
	type sub struct{ from, to string }
	subs := []sub{{c.Placeholder, c.Secret}}
	switch where {
	case inTarget:
		e := escapeAll(c.Secret)
		subs = []sub{{c.Placeholder, e}, {url.PathEscape(c.Placeholder), e}, {url.QueryEscape(c.Placeholder), e}}
	case inBody:
		e := url.QueryEscape(c.Secret)
		subs = append(subs, sub{url.PathEscape(c.Placeholder), e}, sub{url.QueryEscape(c.Placeholder), e})
	}
	for _, sb := range subs {
		if k := strings.Count(text, sb.from); k > 0 {
			text = strings.ReplaceAll(text, sb.from, sb.to)
			rw.n += k
		}
	}
	return text
}

// credHeader is the header a credential travels in.
func credHeader(c *Credential) string {
	if c.Header == "" {
		return "Authorization"
	}
	return http.CanonicalHeaderKey(c.Header)
}

// rewrite checks req for placeholders of credentials that do not belong to
// host:port, or not over cleartext when overTLS is false (returning a
// refusal reason), and puts the secrets of those that do where they belong:
// into their header (also inside Authorization: Basic), and into the
// request target and a small body only when the credential allows it. It
// returns how many placeholders it replaced, and the re-encoded Basic
// values it made (base64 of user:secret), each swapped back to what the
// client sent, for the response's scrubber: a server that echoes its
// Authorization header would otherwise hand the secret back in base64.
func (s *Server) rewrite(req *http.Request, host string, port int, overTLS bool) (int, []swap, string, error) {
	if len(s.o.Credentials) == 0 {
		return 0, nil, "", nil
	}
	rw := s.newRewriter(host, port, overTLS)
	var echoes []swap
	var body []byte
	if req.ContentLength > 0 && req.ContentLength <= maxRewriteBody && len(req.TransferEncoding) == 0 {
		body = make([]byte, req.ContentLength)
		if _, err := io.ReadFull(req.Body, body); err != nil {
			return 0, nil, "", fmt.Errorf("read body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	texts := []string{req.RequestURI, string(body)}
	for _, vs := range req.Header {
		for _, v := range vs {
			texts = append(texts, v)
			if dec, ok := decodeBasic(v); ok {
				texts = append(texts, dec)
			}
		}
	}
	for _, t := range texts {
		if c := find(rw.foreign, t); c != nil {
			if normalizeHost(c.Host) == host {
				return 0, nil, fmt.Sprintf("credential placeholder for %s sent to port %d", Hint(host, credPort(c)), port), nil
			}
			return 0, nil, fmt.Sprintf("credential placeholder for %s sent to %s", normalizeHost(c.Host), host), nil
		}
		if c := find(rw.clear, t); c != nil {
			return 0, nil, fmt.Sprintf("credential for %s is sent only over TLS; name its origin http://%s to allow cleartext",
				host, Hint(host, port)), nil
		}
	}

	for _, c := range rw.own {
		if c.InTarget {
			if uri := rw.replace(c, req.RequestURI, inTarget); uri != req.RequestURI {
				u, err := url.ParseRequestURI(uri)
				if err != nil {
					return 0, nil, "", fmt.Errorf("target after substitution: %w", err)
				}
				req.RequestURI, req.URL = uri, u
			}
		}
		vs := req.Header[credHeader(c)]
		for i, v := range vs {
			if dec, ok := decodeBasic(v); ok {
				if nd := rw.replace(c, dec, inHeader); nd != dec {
					sent := strings.TrimSpace(strings.SplitN(strings.TrimSpace(v), " ", 2)[1])
					enc := base64.StdEncoding.EncodeToString([]byte(nd))
					echoes = append(echoes, encodedForms(enc, sent)...)
					v = "Basic " + enc
				}
			}
			vs[i] = rw.replace(c, v, inHeader)
		}
		if c.InBody && body != nil {
			if nb := rw.replace(c, string(body), inBody); nb != string(body) {
				body = []byte(nb)
				req.Body = io.NopCloser(bytes.NewReader(body))
				req.ContentLength = int64(len(body))
			}
		}
	}
	return rw.n, echoes, "", nil
}

// decodeBasic decodes the credentials of an "Authorization: Basic" value.
func decodeBasic(v string) (string, bool) {
	scheme, enc, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", false
	}
	return string(dec), true
}

// escapeAll percent-encodes everything but unreserved characters, so that a
// secret is safe in a path and in a query alike.
func escapeAll(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// ErrBadCredentialTarget is a credential destination that does not parse.
var ErrBadCredentialTarget = errors.New("bad credential destination")

// ParseCredentialTarget parses where a configured credential may be sent:
// "[https://|http://]HOST[:PORT] [header=NAME] [url] [body]", for example
// "api.github.com", "http://localhost:4873" or "api.example.com
// header=X-Api-Key". HOST is one exact host (no wildcard); PORT defaults to
// the scheme's (443, or 80 for http://, the only scheme that lets the
// secret travel unencrypted); header names the request header it goes in
// (default Authorization); url and body let it also be put into the request
// target and a body. The result has no Placeholder or Secret.
func ParseCredentialTarget(s string) (Credential, error) {
	fail := func(why string) (Credential, error) {
		return Credential{}, fmt.Errorf("%w %q: %s", ErrBadCredentialTarget, s, why)
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return fail("empty")
	}
	var c Credential
	hp := fields[0]
	if rest, ok := strings.CutPrefix(hp, "http://"); ok {
		hp, c.Cleartext = rest, true
	} else if rest, ok := strings.CutPrefix(hp, "https://"); ok {
		hp = rest
	} else if strings.Contains(hp, "://") {
		return fail("only https:// or http:// origins")
	}
	hp = strings.TrimSuffix(hp, "/")
	host, port, err := splitRuleHostPort(hp)
	if err != nil {
		return fail(err.Error())
	}
	if strings.HasPrefix(host, "*") {
		return fail("a credential goes to one exact host, not a wildcard")
	}
	c.Host, c.Port = host, port
	for _, f := range fields[1:] {
		switch name, ok := strings.CutPrefix(f, "header="); {
		case ok:
			if !validHeaderName(name) {
				return fail("header=" + name + " is not a header name")
			}
			c.Header = http.CanonicalHeaderKey(name)
		case f == "url":
			c.InTarget = true
		case f == "body":
			c.InBody = true
		default:
			return fail("unknown option " + f + " (header=NAME, url, body)")
		}
	}
	return c, nil
}

// validHeaderName accepts the header names credentials travel in: letters,
// digits, '-' and '_'.
func validHeaderName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range []byte(n) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
