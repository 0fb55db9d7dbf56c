package egress

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// BenchmarkDownloadReadOnly measures what seeing the requests of a
// read-only registry costs: the same HTTPS download through an opaque
// CONNECT tunnel (a rule without methods) and through the intercepted
// tunnel a GET,HEAD rule now gets (TLS terminated and opened again).
func BenchmarkDownloadReadOnly(b *testing.B) {
	chunk := make([]byte, 1<<20)
	up, upRoots := tlsUpstream(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		for range downloadSize / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}), nil, "registry.test")
	port := portOf(b, up.URL)
	ca := newCA(b)
	roots := upRoots.Clone()
	roots.AddCert(ca.Certificate())
	u := fmt.Sprintf("https://registry.test:%d/pkg.tgz", port)
	for _, bc := range []struct{ name, rule string }{
		{"tunnel", fmt.Sprintf("registry.test:%d", port)},
		{"intercepted", fmt.Sprintf("registry.test:%d GET,HEAD", port)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := startProxy(b, Options{
				Policy:   Policy{Rules: []Rule{mustRule(b, bc.rule)}},
				CA:       ca,
				RootCAs:  upRoots,
				Resolver: resolver(map[string]string{"registry.test": "127.0.0.1"}),
				OnEvent:  func(Event) {},
			})
			tr := proxyTransport(p.addr)
			tr.TLSClientConfig = &tls.Config{RootCAs: roots}
			c := &http.Client{Transport: tr}
			defer tr.CloseIdleConnections()
			start := time.Now()
			for b.Loop() {
				if n := drain(b, c, u); n != downloadSize {
					b.Fatalf("read %d bytes", n)
				}
			}
			mb := float64(downloadSize) * float64(b.N) / (1 << 20)
			b.ReportMetric(mb/time.Since(start).Seconds(), "MB/s")
		})
	}
}
