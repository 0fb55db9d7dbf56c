package egress

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// FuzzScanHead: whatever a client sends, scanHead never lets the parser
// see a head over the limits: when it passes a head that parses, the head
// fits in maxHeadBytes and has at most maxHeaderFields fields; when it
// refuses one for size, no head end lies within maxHeadBytes. Nor do the
// names its Trailer fields announce pass maxHeaderFields.
func FuzzScanHead(f *testing.F) {
	for _, s := range []string{
		"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\n",
		"GET / HTTP/1.1\r\nX: a\r\n continued\r\n\r\nbody",
		"\r\n\r\n",
		"",
		"GET / HTTP/1.1\r\n" + strings.Repeat("A: 1\r\n", maxHeaderFields+1) + "\r\n",
		"GET / HTTP/1.1\r\n" + strings.Repeat("A: 1\r\n", maxHeaderFields-1) + "\r\n",
		"GET /" + strings.Repeat("a", maxHeadBytes) + " HTTP/1.1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTrailer: a,b\r\n\tc\r\ntrailer: d\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTrailer: " + strings.Repeat("a,", maxHeaderFields) + "\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := bytes.NewReader(data)
		br := newHeadReader(src)
		err := scanHead(br, "request", true)
		var he *headError
		if errors.As(err, &he) {
			if strings.Contains(he.reason, "bytes") {
				if end := headEnd(data); end >= 0 && end <= maxHeadBytes-1 {
					t.Fatalf("refused for size a head that ends at %d", end)
				}
			}
			return
		}
		if err != nil {
			return
		}
		req, perr := http.ReadRequest(br)
		if perr != nil {
			return
		}
		// ReadRequest reads no body: what it took from br is the head.
		if n := len(data) - src.Len() - br.Buffered(); n > maxHeadBytes {
			t.Fatalf("parsed a head of %d bytes", n)
		}
		fields := 0
		for _, v := range req.Header {
			fields += len(v)
		}
		if fields > maxHeaderFields {
			t.Fatalf("parsed %d header fields", fields)
		}
		if len(req.Trailer) > maxHeaderFields {
			t.Fatalf("parsed %d announced trailer fields", len(req.Trailer))
		}
	})
}

// headEnd is the index of the last byte of the first head's empty line, or
// -1: the first line that is empty after stripping a trailing CR.
func headEnd(b []byte) int {
	start := 0
	for i, c := range b {
		if c != '\n' {
			continue
		}
		line := b[start:i]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			return i
		}
		start = i + 1
	}
	return -1
}
