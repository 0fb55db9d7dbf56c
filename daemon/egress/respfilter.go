package egress

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// A server that echoes what it was sent (an error message quoting the
// token, a redirect keeping the query, a CORS header listing the request's
// headers) would hand the secret the proxy put into a request back to the
// sandbox. Every response from a host that owns credentials therefore goes
// through a scrubber that turns each of their secrets back into its
// placeholder: in the status line, in every header and trailer, and in the
// body, streamed with bounded memory whatever its size or framing.

// swap is one byte string the scrubber replaces, and what with; rare is
// the index in from of the byte the search looks for first.
type swap struct {
	from, to []byte
	rare     int
}

// byteRank orders bytes by how often they occur in the text a registry
// sends (JSON, HTML): lower-case letters and spacing most, then upper case
// and digits, then punctuation, then anything else. A search for a secret
// starts at its least common byte, so that it runs at IndexByte's speed
// instead of stopping at every occurrence of its first letter.
func byteRank(c byte) int {
	switch {
	case c >= 'a' && c <= 'z', c == ' ', c == '\n', c == '"', c == ',', c == ':':
		return 3
	case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return 2
	case c > ' ' && c < 0x7f:
		return 1
	default:
		return 0
	}
}

func rarest(b []byte) int {
	k := 0
	for i, c := range b {
		if byteRank(c) < byteRank(b[k]) {
			k = i
		}
	}
	return k
}

// index is where s.from first occurs in b, or -1.
func (s *swap) index(b []byte) int {
	k, c := s.rare, s.from[s.rare]
	for start := 0; start+len(s.from) <= len(b); start++ {
		j := bytes.IndexByte(b[start+k:], c)
		if j < 0 {
			return -1
		}
		start += j
		if start+len(s.from) > len(b) {
			return -1
		}
		if bytes.Equal(b[start:start+len(s.from)], s.from) {
			return start
		}
	}
	return -1
}

// scrubber replaces secrets in a stream. It keeps back the last len(longest
// secret)-1 bytes of what it was given, which may be the start of a secret
// that the next read completes, so the result does not depend on where the
// reads end. Matches are leftmost, and the longest at one position wins.
type scrubber struct {
	swaps  []swap
	maxLen int
	w      io.Writer
	buf    []byte // held back bytes, then the new ones, while processing
	next   []int  // per swap: where it next occurs in buf, -1 none, -2 unknown
}

// secretForms are the spellings of a secret a server may echo: as is, and
// percent-encoded as a query, a path or everything-but-unreserved would
// have it. Each is replaced by the placeholder spelled the same way.
func secretForms(c *Credential) []swap { return encodedForms(c.Secret, c.Placeholder) }

// encodedForms is the swap of secret for its replacement, as is and in each
// way a URL encodes them.
func encodedForms(secret, replacement string) []swap {
	out := []swap{{from: []byte(secret), to: []byte(replacement)}}
	for _, enc := range []func(string) string{escapeAll, url.QueryEscape, url.PathEscape} {
		f := enc(secret)
		if f == secret || slices.ContainsFunc(out, func(s swap) bool { return string(s.from) == f }) {
			continue
		}
		out = append(out, swap{from: []byte(f), to: []byte(enc(replacement))})
	}
	return out
}

// newScrubber returns a scrubber of creds' secrets, and of the request's
// own extra forms of them (rewrite's re-encoded Basic values), writing to
// w, or nil when there is nothing to replace.
func newScrubber(creds []*Credential, w io.Writer, extra ...swap) *scrubber {
	sc := &scrubber{w: w}
	var forms []swap
	for _, c := range creds {
		if c.Secret != "" {
			forms = append(forms, secretForms(c)...)
		}
	}
	for _, f := range append(forms, extra...) {
		if !slices.ContainsFunc(sc.swaps, func(s swap) bool { return bytes.Equal(s.from, f.from) }) {
			f.rare = rarest(f.from)
			sc.swaps = append(sc.swaps, f)
			sc.maxLen = max(sc.maxLen, len(f.from))
		}
	}
	if len(sc.swaps) == 0 {
		return nil
	}
	sc.next = make([]int, len(sc.swaps))
	return sc
}

// Write scrubs p; some of its bytes may be held back until the next Write
// or Close.
func (sc *scrubber) Write(p []byte) (int, error) {
	sc.buf = append(sc.buf, p...)
	if err := sc.process(false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes what was held back. It does not close the writer below.
func (sc *scrubber) Close() error { return sc.process(true) }

// process writes out buf with its matches replaced, keeping back the tail
// in which a match may yet start (none when final).
func (sc *scrubber) process(final bool) error {
	b := sc.buf
	// A match decided at position i needs maxLen bytes from i, or the end.
	decided := len(b) - sc.maxLen + 1
	if final {
		decided = len(b)
	}
	for i := range sc.next {
		sc.next[i] = -2
	}
	pos := 0
	for pos < decided {
		at, which := -1, -1
		for i := range sc.swaps {
			s := &sc.swaps[i]
			if sc.next[i] == -2 || sc.next[i] >= 0 && sc.next[i] < pos {
				sc.next[i] = -1
				if k := s.index(b[pos:]); k >= 0 {
					sc.next[i] = pos + k
				}
			}
			if n := sc.next[i]; n >= 0 && (at < 0 || n < at || n == at && len(s.from) > len(sc.swaps[which].from)) {
				at, which = n, i
			}
		}
		if at < 0 || at >= decided {
			break
		}
		if _, err := sc.w.Write(b[pos:at]); err != nil {
			return err
		}
		if _, err := sc.w.Write(sc.swaps[which].to); err != nil {
			return err
		}
		pos = at + len(sc.swaps[which].from)
	}
	if pos < decided {
		if _, err := sc.w.Write(b[pos:decided]); err != nil {
			return err
		}
		pos = decided
	}
	sc.buf = append(b[:0], b[pos:]...)
	return nil
}

// scrubString is the scrubber applied to one whole string (a header value,
// the status line).
func (sc *scrubber) scrubString(s string) string {
	var out strings.Builder
	t := &scrubber{swaps: sc.swaps, maxLen: sc.maxLen, w: &out, next: make([]int, len(sc.swaps)), buf: []byte(s)}
	t.process(true) //nolint:errcheck // a strings.Builder does not fail
	return out.String()
}

// writeScrubbed writes resp to w as Response.Write would, with every secret
// of sc replaced: status text, header names and values, trailers, and the
// body. A body whose length the replacement may change is sent chunked
// when both ends speak HTTP/1.1 (chunkOK), else delimited by the close of
// the connection (the caller has set resp.Close). A gzip body is decoded to
// be scrubbed; any other content coding cannot be read and the response is
// refused, before anything is written.
func writeScrubbed(w io.Writer, resp *http.Response, sc *scrubber, head, chunkOK bool) error {
	body := resp.Body
	hasBody := !head && resp.StatusCode >= 200 && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	if hasBody {
		switch ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); ce {
		case "", "identity":
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(body)
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if zr != nil {
				body = zr
			}
			resp.Header.Del("Content-Encoding")
		default:
			return fmt.Errorf("content coding %q, which the proxy cannot decode", ce)
		}
	}
	text := strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)+" ")
	fmt.Fprintf(w, "HTTP/%d.%d %03d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.StatusCode, sc.scrubString(text))
	h := scrubHeader(resp.Header, sc)
	chunked := hasBody && chunkOK
	switch {
	case chunked:
		h.Del("Content-Length")
		h.Set("Transfer-Encoding", "chunked")
	case hasBody:
		h.Del("Content-Length") // delimited by the close
	}
	if resp.Close {
		h.Set("Connection", "close")
	}
	if len(resp.Trailer) > 0 && chunked {
		names := make([]string, 0, len(resp.Trailer))
		for k := range resp.Trailer {
			names = append(names, sc.scrubString(k))
		}
		slices.Sort(names)
		h.Set("Trailer", strings.Join(names, ", "))
	}
	if err := h.Write(w); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\r\n"); err != nil {
		return err
	}
	if !hasBody {
		return nil
	}
	dst := w
	var cw io.WriteCloser
	if chunked {
		cw = httputil.NewChunkedWriter(w)
		dst = cw
	}
	sc.w, sc.buf = dst, sc.buf[:0]
	if _, err := io.Copy(sc, body); err != nil {
		return err
	}
	if err := sc.Close(); err != nil {
		return err
	}
	if !chunked {
		return nil
	}
	if err := cw.Close(); err != nil {
		return err
	}
	if len(resp.Trailer) > 0 {
		if err := scrubHeader(resp.Trailer, sc).Write(w); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "\r\n")
	return err
}

// scrubHeader is h with every secret of sc replaced in names and values.
func scrubHeader(h http.Header, sc *scrubber) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		nk := sc.scrubString(k)
		for _, v := range vs {
			out[nk] = append(out[nk], sc.scrubString(v))
		}
	}
	return out
}
