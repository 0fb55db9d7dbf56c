//go:build e2e

package e2e

// Issue 25, items 7 and 10, as an attacker inside safe_bash would try them
// with the default configuration: a registry the user's ~/.npmrc names is
// read-only on every way out of the sandbox (the plain-HTTP proxy, a
// CONNECT tunnel with TLS or plain HTTP inside, SOCKS5, the host-loopback
// forwards, and `npm publish` itself), as the registry's own log of the
// requests it received shows; and a 300 MB request line or header through
// every listener, or more connections than a call may hold, is refused
// with a reason the agent reads while the daemon keeps answering and its
// peak RSS (VmHWM, read on the host) stays under 200 MB.

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// methodRegistry is a registry on the host's loopback that logs the method
// and path of every request it receives and answers 200 to all of them.
type methodRegistry struct {
	port int
	mu   sync.Mutex
	log  []string
}

func startMethodRegistry(t *testing.T, cert *tls.Certificate) *methodRegistry {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &methodRegistry{port: ln.Addr().(*net.TCPAddr).Port}
	if cert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}})
	}
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		m.mu.Lock()
		m.log = append(m.log, r.Method+" "+r.URL.Path)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

// requests returns what the registry received, and those that would have
// changed it.
func (m *methodRegistry) requests() (all, writes []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.log {
		if !strings.HasPrefix(s, "GET ") && !strings.HasPrefix(s, "HEAD ") {
			writes = append(writes, s)
		}
	}
	return append([]string(nil), m.log...), writes
}

// readOnlyRegistries starts a plain and a TLS registry and names both in
// the test user's ~/.npmrc as scoped registries (with the TLS one's CA as
// npm's cafile): the default configuration makes them GET,HEAD rules and
// forwards them into the sandbox at the same address.
func readOnlyRegistries(t *testing.T) (plain, secure *methodRegistry) {
	t.Helper()
	caFile, cert := testCA(t)
	plain, secure = startMethodRegistry(t, nil), startMethodRegistry(t, cert)
	npmrc := fmt.Sprintf("@probe:registry=http://127.0.0.1:%d/\n@probetls:registry=https://127.0.0.1:%d/\ncafile=%s\n",
		plain.port, secure.port, caFile)
	devPlant(t, filepath.Join(env.home, ".npmrc"), npmrc, 0o600)
	withConfig(t, "")
	return plain, secure
}

// TestAttackReadOnlyEveryPath: PUT, POST and DELETE to a read-only
// registry are refused on every path out, GET on the same paths works, and
// the registries' logs hold no write.
func TestAttackReadOnlyEveryPath(t *testing.T) {
	plain, secure := readOnlyRegistries(t)
	ws := egressWorkspace(t)
	// Packages of the attacker's to publish (the workspace's own is
	// private): one under the loopback registry's scope, one unscoped for
	// registry.npmjs.org (a scope's registry wins over --registry).
	devPlant(t, filepath.Join(ws, "pub", "package.json"), `{"name":"@probetls/evil","version":"6.6.6"}`+"\n", 0o644)
	devPlant(t, filepath.Join(ws, "pub2", "package.json"), `{"name":"contextd-e2e-evil-`+devTag(8)+`","version":"6.6.6"}`+"\n", 0o644)
	P, T := fmt.Sprintf("127.0.0.1:%d", plain.port), fmt.Sprintf("127.0.0.1:%d", secure.port)
	marker := "attack-readonly-" + devTag(6)
	script := fmt.Sprintf(`P=%s; T=%s
c() { tag=$1; shift; printf '%%s=' "$tag"; curl -sS -o /dev/null -w '%%{http_code}\n' "$@" 2>/dev/null || echo; }
# --noproxy names a host no request goes to, so that the sandbox's NO_PROXY
# (which lists 127.0.0.1) does not send these past the proxy; D goes
# straight to the forwarded port.
X='--noproxy none.invalid -x http://127.0.0.1:3128'; S='--noproxy none.invalid --socks5-hostname 127.0.0.1:3128'; D='--noproxy 127.0.0.1'
for m in PUT POST DELETE; do
  c proxy-$m $X -X $m --data owned http://$P/evil-pkg
  c tunnel-$m $X -p -X $m --data owned http://$P/evil-pkg
  c connect-$m $X -X $m --data owned https://$T/evil-pkg
  c socks-$m $S -X $m --data owned https://$T/evil-pkg
  c socksplain-$m $S -X $m --data owned http://$P/evil-pkg
  c forward-$m $D -X $m --data owned http://$P/evil-pkg
  c forwardtls-$m $D -X $m --data owned https://$T/evil-pkg
done
c proxy-GET $X http://$P/ok; c tunnel-GET $X -p http://$P/ok; c connect-GET $X https://$T/ok
c socks-GET $S https://$T/ok; c socksplain-GET $S http://$P/ok; c forward-GET $D http://$P/ok; c forwardtls-GET $D https://$T/ok
cd pub && npm publish --registry https://$T/ --//$T/:_authToken=npm_attacker >/dev/null 2>&1; echo npm-publish-loopback=$?
cd ../pub2 && npm publish --registry https://registry.npmjs.org/ --//registry.npmjs.org/:_authToken=npm_attacker >/dev/null 2>&1; echo npm-publish-npmjs=$?
# %s`, P, T, marker)
	r := bashIn(t, ws, script)
	t.Logf("%s", r.stdout)
	for _, line := range strings.Split(r.stdout, "\n") {
		tag, code, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(tag, "npm-publish") {
			continue
		}
		switch {
		case strings.HasSuffix(tag, "-GET"):
			if code != "200" {
				t.Errorf("%s: %q, want 200 (the path must work for reads, or the test proves nothing)", tag, code)
			}
		case code != "403":
			t.Errorf("%s: %q, want the proxy's 403", tag, code)
		}
	}
	for _, want := range []string{"npm-publish-loopback=", "npm-publish-npmjs="} {
		if !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, want+"0") {
			t.Errorf("%s: npm publish did not fail: %s", want, r)
		}
	}
	for name, reg := range map[string]*methodRegistry{"plain": plain, "tls": secure} {
		all, writes := reg.requests()
		if len(writes) != 0 {
			t.Errorf("the %s read-only registry received %v", name, writes)
		}
		if len(all) == 0 {
			t.Errorf("the %s registry received no request at all: the GETs did not reach it", name)
		}
	}
	// The publish to the real registry was seen and refused by the proxy.
	publish := false
	for _, c := range auditEgress(t, marker) {
		if c.Host == "registry.npmjs.org" && c.Method == "PUT" && !c.Allowed && strings.Contains(c.Reason, "method PUT not allowed") {
			publish = true
		}
		if c.Allowed && c.Method != "" && c.Method != "GET" && c.Method != "HEAD" {
			t.Errorf("the audit record shows an allowed %s to %s:%d", c.Method, c.Host, c.Port)
		}
	}
	if !publish {
		t.Errorf("the audit record has no refused PUT to registry.npmjs.org (npm publish went through a tunnel unseen?)")
	}
}

// daemonMem returns the daemon's VmRSS and VmHWM in bytes, read on the
// host.
func daemonMem(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = n << 10
		case "VmHWM:":
			hwm = n << 10
		}
	}
	return rss, hwm
}

// TestAttackHugeHeaders: a 300 MB request line or header through every
// listener (plain proxy, CONNECT line, inside TLS after CONNECT and after
// SOCKS5, plain inside SOCKS5, the forwards plain and TLS) is answered 431
// naming the limit; the call's result says so; more connections than the
// limit are answered 503 naming it; and the daemon, the same process
// throughout, still serves a request while its peak RSS stayed under
// 200 MB.
func TestAttackHugeHeaders(t *testing.T) {
	plain, secure := readOnlyRegistries(t)
	ws := egressWorkspace(t)
	probe := filepath.Join(ws, "egressprobe")
	build := exec.Command("go", "build", "-o", probe, "./e2e/egressprobe")
	build.Dir, build.Env = env.repo, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}
	if err := os.Chown(probe, env.uid, env.uid); err != nil {
		t.Fatal(err)
	}
	P, T := fmt.Sprintf("127.0.0.1:%d", plain.port), fmt.Sprintf("127.0.0.1:%d", secure.port)

	// A first call starts the daemon; its memory is measured from then on.
	warm := bashIn(t, ws, fmt.Sprintf("curl -sS -o /dev/null -w '%%{http_code}\n' https://%s/warm", T))
	if !strings.Contains(warm.stdout, "200") {
		t.Fatalf("a GET through the proxy before the attack: %s", warm)
	}
	pid := mainPID(t)
	if pid == 0 {
		t.Fatal("no daemon")
	}
	rss0, hwm0 := daemonMem(t, pid)
	t.Logf("daemon %d before: VmRSS %d MiB, VmHWM %d MiB", pid, rss0>>20, hwm0>>20)

	const size = 300_000_000
	modes := []struct{ mode, target string }{
		{"line", P}, {"header", P}, {"connect-line", T}, {"connect-tls", T},
		{"socks-tls", T}, {"socks-plain", P}, {"forward", P}, {"forward-tls", T},
	}
	for _, m := range modes {
		r := bashIn(t, ws, fmt.Sprintf("./egressprobe %s %s %d", m.mode, m.target, size))
		out := r.stdout + r.stderr
		if !strings.Contains(out, "probe: 431") || !strings.Contains(out, "over 65536 bytes") {
			t.Errorf("%s: want the proxy's 431 naming the limit: %s", m.mode, r)
		}
		if !strings.Contains(out, "egress refused") || !strings.Contains(out, "proxy limit") {
			t.Errorf("%s: the call's result does not say what the proxy refused: %s", m.mode, r)
		}
		rss, hwm := daemonMem(t, pid)
		t.Logf("after %s: VmRSS %d MiB, VmHWM %d MiB", m.mode, rss>>20, hwm>>20)
	}

	// One more connection than the default limit (256), then ten more: the
	// first 256 are held, the rest refused with the limit named.
	r := bashIn(t, ws, fmt.Sprintf("./egressprobe conns %s 266", T))
	mustContain(t, "the connection flood", r.stdout, "opened=256 refused=10", "503", "max_connections")
	mustContain(t, "the call's result", r.stdout+r.stderr, "egress refused", "too many connections")

	after := bashIn(t, ws, fmt.Sprintf("curl -sS -o /dev/null -w '%%{http_code}\n' https://%s/after", T))
	if !strings.Contains(after.stdout, "200") {
		t.Errorf("a GET through the proxy after the attack: %s", after)
	}
	if p := mainPID(t); p != pid {
		t.Errorf("the daemon is another process after the attack: %d, was %d", p, pid)
	}
	rss, hwm := daemonMem(t, pid)
	t.Logf("daemon %d after: VmRSS %d MiB, VmHWM %d MiB (before: %d, %d)", pid, rss>>20, hwm>>20, rss0>>20, hwm0>>20)
	if hwm >= 200<<20 {
		t.Errorf("the daemon's peak RSS reached %d MiB (limit 200)", hwm>>20)
	}
	for name, reg := range map[string]*methodRegistry{"plain": plain, "tls": secure} {
		if _, writes := reg.requests(); len(writes) != 0 {
			t.Errorf("the %s registry received %v", name, writes)
		}
	}
}
