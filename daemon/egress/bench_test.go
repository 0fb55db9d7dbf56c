package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const downloadSize = 100 << 20

// benchProxy is a proxy allowing the loopback upstream at port, with
// events discarded.
func benchProxy(b *testing.B, port int) *testProxy {
	return startProxy(b, Options{
		Policy:  Policy{Rules: []Rule{mustRule(b, fmt.Sprintf("127.0.0.1:%d", port))}},
		OnEvent: func(Event) {},
	})
}

// connectTransport reaches every address through a CONNECT tunnel of the
// proxy, as a client of HTTPS_PROXY would, but speaks plain HTTP inside so
// that only the tunnel is measured.
func connectTransport(proxyAddr string) *http.Transport {
	return &http.Transport{
		DisableCompression: true,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", proxyAddr)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 || br.Buffered() != 0 {
				c.Close()
				return nil, fmt.Errorf("CONNECT %s: %v %v", addr, resp, err)
			}
			return c, nil
		},
	}
}

func proxyTransport(proxyAddr string) *http.Transport {
	return &http.Transport{DisableCompression: true, Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr})}
}

// drain fetches u with c and returns how many bytes its body had (read, not
// kept: get of proxy_test.go keeps them).
func drain(b *testing.B, c *http.Client, u string) int64 {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatalf("read %d bytes: %v", n, err)
	}
	return n
}

func BenchmarkDownload(b *testing.B) {
	chunk := make([]byte, 1<<20)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		for range downloadSize / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer up.Close()
	p := benchProxy(b, portOf(b, up.URL))
	for _, bc := range []struct {
		name string
		tr   *http.Transport
	}{
		{"direct", &http.Transport{DisableCompression: true}},
		{"proxy-connect", connectTransport(p.addr)},
		{"proxy-http", proxyTransport(p.addr)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := &http.Client{Transport: bc.tr}
			defer bc.tr.CloseIdleConnections()
			start := time.Now()
			for b.Loop() {
				if n := drain(b, c, up.URL); n != downloadSize {
					b.Fatalf("read %d bytes", n)
				}
			}
			mb := float64(downloadSize) * float64(b.N) / (1 << 20)
			b.ReportMetric(mb/time.Since(start).Seconds(), "MB/s")
		})
	}
}

// BenchmarkDownloadTLS compares a registry download over TLS straight from
// the upstream with the same download through the proxy intercepting it:
// a credential for the host, so TLS terminated with the per-user CA, the
// token put into Authorization, and the response scrubbed of the secret.
//
// Two upstreams, each side by side in one run:
//   - cpu-bound: the upstream writes as fast as it can. Client, upstream
//     and proxy share this machine's cores, and the proxy doubles the work
//     per byte (one more TLS decryption and encryption, one more loopback
//     TCP hop), so the proxied side cannot reach more than about half of
//     the direct one here; cpu-ms/MB (the process's CPU time per MB, all
//     three parties) says what the proxy adds.
//   - paced-100MBps: the upstream sends 100 MB/s, a fast registry's CDN as
//     a developer's machine sees it: what a download through the proxy
//     gets when the network, not the CPU, is the limit.
//
// The ratio of each pair is logged.
func BenchmarkDownloadTLS(b *testing.B) {
	for _, up := range []struct {
		name string
		rate float64 // bytes per second; 0: as fast as it can
	}{{"cpu-bound", 0}, {"paced-100MBps", 100 << 20}} {
		b.Run(up.name, func(b *testing.B) {
			var direct, proxied float64
			downloadTLS(b, up.rate, &direct, &proxied)
			if direct > 0 {
				b.Logf("%s: proxied %.0f MB/s, direct %.0f MB/s: %.0f%%", up.name, proxied, direct, 100*proxied/direct)
			}
		})
	}
}

// downloadTLS runs BenchmarkDownloadTLS's pair for an upstream sending
// rate bytes per second (0: unpaced), and stores each side's MB/s.
func downloadTLS(b *testing.B, rate float64, direct, proxied *float64) {
	chunk := make([]byte, 1<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		t0 := time.Now()
		for i := range downloadSize / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if rate > 0 {
				time.Sleep(time.Until(t0.Add(time.Duration(float64((i+1)*len(chunk)) / rate * float64(time.Second)))))
			}
		}
	})
	up, upPool := tlsUpstream(b, h, nil, "registry.test")
	port := portOf(b, up.URL)
	ca := newCA(b)
	p := startProxy(b, Options{
		Policy:      Policy{Rules: []Rule{mustRule(b, fmt.Sprintf("registry.test:%d", port))}},
		Credentials: []Credential{{Placeholder: placeholder, Secret: secret, Host: "registry.test", Port: port}},
		CA:          ca,
		RootCAs:     upPool,
		Resolver:    resolver(map[string]string{"registry.test": "127.0.0.1"}),
		OnEvent:     func(Event) {},
	})
	directTr := &http.Transport{
		DisableCompression: true,
		TLSClientConfig:    &tls.Config{RootCAs: upPool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
		},
	}
	proxiedTr := proxyTransport(p.addr)
	proxiedTr.TLSClientConfig = &tls.Config{RootCAs: caPool(ca)}
	u := fmt.Sprintf("https://registry.test:%d/pkg.tgz", port)
	for _, bc := range []struct {
		name string
		tr   *http.Transport
		mbps *float64
	}{{"direct", directTr, direct}, {"proxy-intercepted", proxiedTr, proxied}} {
		b.Run(bc.name, func(b *testing.B) {
			c := &http.Client{Transport: bc.tr}
			defer bc.tr.CloseIdleConnections()
			start, cpu0 := time.Now(), cpuTime()
			for b.Loop() {
				req, _ := http.NewRequest("GET", u, nil)
				req.Header.Set("Authorization", "Bearer "+placeholder)
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != downloadSize {
					b.Fatalf("read %d bytes: %v", n, err)
				}
			}
			mb := float64(downloadSize) * float64(b.N) / (1 << 20)
			*bc.mbps = mb / time.Since(start).Seconds()
			b.ReportMetric(*bc.mbps, "MB/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/mb, "cpu-ms/MB")
		})
	}
}

// cpuTime is the CPU time (user and system) this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDownloadScrub is the response scrubber's own cost on a body of
// downloadSize: copied as the relay copies it, and copied through the
// scrubber of two credentials, side by side; for a tarball-like body
// (random bytes) and for text in which the secrets' first bytes occur every
// few bytes (the scrubber's worst case short of actual matches).
func BenchmarkDownloadScrub(b *testing.B) {
	random := make([]byte, 32<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	text := make([]byte, 32<<10)
	for i := range text {
		text[i] = byte('a' + i%26)
	}
	creds := []*Credential{
		{Secret: secret, Placeholder: placeholder},
		{Secret: "ghp_0123456789abcdefghijklmnopqrstuvwxyz", Placeholder: otherPlaceholder},
	}
	for _, bc := range []struct {
		name   string
		body   []byte
		filter bool
	}{{"random-copy", random, false}, {"random-filtered", random, true}, {"text-copy", text, false}, {"text-filtered", text, true}} {
		b.Run(bc.name, func(b *testing.B) {
			sink := &copySink{buf: make([]byte, 0, 64<<10)}
			start := time.Now()
			for b.Loop() {
				var w io.Writer = sink
				var sc *scrubber
				if bc.filter {
					sc = newScrubber(creds, sink)
					w = sc
				}
				for range downloadSize / len(bc.body) {
					if _, err := w.Write(bc.body); err != nil {
						b.Fatal(err)
					}
				}
				if sc != nil {
					sc.Close() //nolint:errcheck // copySink does not fail
				}
			}
			mb := float64(downloadSize) * float64(b.N) / (1 << 20)
			b.ReportMetric(mb/time.Since(start).Seconds(), "MB/s")
		})
	}
}

// copySink copies what it is given, as a relay's write into a buffer does.
type copySink struct{ buf []byte }

func (c *copySink) Write(p []byte) (int, error) {
	c.buf = append(c.buf[:0], p...)
	return len(p), nil
}

// BenchmarkSmallRequest measures a small GET on a kept-alive connection;
// each iteration makes 1000 requests so that a short -benchtime still
// averages over many.
func BenchmarkSmallRequest(b *testing.B) {
	const perOp = 1000
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	p := benchProxy(b, portOf(b, up.URL))
	for _, bc := range []struct {
		name string
		tr   *http.Transport
	}{
		{"direct", &http.Transport{DisableCompression: true}},
		{"proxy", proxyTransport(p.addr)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := &http.Client{Transport: bc.tr}
			defer bc.tr.CloseIdleConnections()
			drain(b, c, up.URL) // open the connection outside the measurement
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				for range perOp {
					drain(b, c, up.URL)
				}
			}
			us := float64(time.Since(start).Microseconds()) / float64(b.N*perOp)
			b.ReportMetric(us, "µs/req")
		})
	}
}
