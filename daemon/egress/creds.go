package egress

import (
	"bytes"
	"encoding/base64"
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

// credMatches reports whether c may be sent to host:port.
func credMatches(c *Credential, host string, port int) bool {
	return c.Placeholder != "" && normalizeHost(c.Host) == host && (c.Port == 0 || c.Port == port)
}

// intercepts reports whether connections to host:port are terminated to
// inject credentials: only hosts that own one, and only with a CA.
func (s *Server) intercepts(host string, port int) bool {
	if s.o.CA == nil {
		return false
	}
	for i := range s.o.Credentials {
		if credMatches(&s.o.Credentials[i], host, port) {
			return true
		}
	}
	return false
}

// rewriter substitutes the placeholders of the credentials that belong to
// one host:port and spots those of credentials that do not.
type rewriter struct {
	own     []*Credential
	foreign []*Credential
	n       int
}

func (s *Server) newRewriter(host string, port int) *rewriter {
	rw := &rewriter{}
	owned := map[string]bool{}
	for i := range s.o.Credentials {
		c := &s.o.Credentials[i]
		if c.Placeholder == "" {
			continue
		}
		if credMatches(c, host, port) {
			rw.own = append(rw.own, c)
			owned[c.Placeholder] = true
		}
	}
	for i := range s.o.Credentials {
		c := &s.o.Credentials[i]
		if c.Placeholder != "" && !owned[c.Placeholder] && !credMatches(c, host, port) {
			rw.foreign = append(rw.foreign, c)
		}
	}
	return rw
}

// leak returns the foreign credential whose placeholder text holds, in
// clear or percent-encoded.
func (rw *rewriter) leak(text string) *Credential {
	if text == "" {
		return nil
	}
	forms := []string{text}
	if u, err := url.QueryUnescape(text); err == nil && u != text {
		forms = append(forms, u)
	}
	if u, err := url.PathUnescape(text); err == nil && u != text {
		forms = append(forms, u)
	}
	for _, c := range rw.foreign {
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

// replace substitutes own placeholders in text. Percent-encoded placeholders
// are replaced too in a target or body, since clients encode the brackets.
func (rw *rewriter) replace(text string, where place) string {
	for _, c := range rw.own {
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
	}
	return text
}

// rewrite checks req for placeholders of credentials that do not belong to
// host:port (returning a leak reason) and puts the secrets of those that do
// into the request target, header values (also inside Authorization: Basic)
// and a small body. It returns how many placeholders it replaced.
func (s *Server) rewrite(req *http.Request, host string, port int) (int, string, error) {
	if len(s.o.Credentials) == 0 {
		return 0, "", nil
	}
	rw := s.newRewriter(host, port)
	var body []byte
	if req.ContentLength > 0 && req.ContentLength <= maxRewriteBody && len(req.TransferEncoding) == 0 {
		body = make([]byte, req.ContentLength)
		if _, err := io.ReadFull(req.Body, body); err != nil {
			return 0, "", fmt.Errorf("read body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	leakOf := func(c *Credential) string {
		return fmt.Sprintf("credential placeholder for %s sent to %s", normalizeHost(c.Host), host)
	}
	if c := rw.leak(req.RequestURI); c != nil {
		return 0, leakOf(c), nil
	}
	for _, vs := range req.Header {
		for _, v := range vs {
			if c := rw.leak(v); c != nil {
				return 0, leakOf(c), nil
			}
			if dec, ok := decodeBasic(v); ok {
				if c := rw.leak(dec); c != nil {
					return 0, leakOf(c), nil
				}
			}
		}
	}
	if c := rw.leak(string(body)); c != nil {
		return 0, leakOf(c), nil
	}
	if len(rw.own) == 0 {
		return 0, "", nil
	}

	if uri := rw.replace(req.RequestURI, inTarget); uri != req.RequestURI {
		u, err := url.ParseRequestURI(uri)
		if err != nil {
			return 0, "", fmt.Errorf("target after substitution: %w", err)
		}
		req.RequestURI, req.URL = uri, u
	}
	for k, vs := range req.Header {
		for i, v := range vs {
			if dec, ok := decodeBasic(v); ok {
				if nd := rw.replace(dec, inHeader); nd != dec {
					v = "Basic " + base64.StdEncoding.EncodeToString([]byte(nd))
				}
			}
			req.Header[k][i] = rw.replace(v, inHeader)
		}
	}
	if body != nil {
		if nb := rw.replace(string(body), inBody); nb != string(body) {
			req.Body = io.NopCloser(strings.NewReader(nb))
			req.ContentLength = int64(len(nb))
		}
	}
	return rw.n, "", nil
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
