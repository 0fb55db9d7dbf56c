//go:build e2e

package e2e

// The egress proxy (issue 17, "Done when"), as the unprivileged test user
// with the real user manager: a real `npm install` from the npm registry
// through safe_bash with no egress configuration at all; a registry on the
// host's loopback, named in the user's ~/.npmrc with a token, that receives
// the real token over HTTP and over HTTPS (a certificate the test makes)
// while the sandbox sees only the placeholder; a host outside the policy
// refused, named in the call's result and in its audit record; no resolver
// and no direct connection from inside; a placeholder sent to the wrong host
// blocked; and `mcp wrap -- npx -y @modelcontextprotocol/server-everything`
// fetched through the proxy and driven by the TypeScript SDK client.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// egressPkg is the package the test's registry serves.
const egressPkg = "contextd-egress-probe"

// fakeRegistry is a small npm registry on the host's loopback: one package,
// and a record of the Authorization header of every request. It answers 401
// to a request without the token, as a private registry does.
type fakeRegistry struct {
	url   string
	port  int
	token string
	tgz   []byte

	mu    sync.Mutex
	auths []string
}

func (f *fakeRegistry) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auths...)
}

// startRegistry serves on 127.0.0.1:0, over TLS when cert is set.
func startRegistry(t *testing.T, token string, cert *tls.Certificate) *fakeRegistry {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRegistry{token: token, port: ln.Addr().(*net.TCPAddr).Port}
	scheme := "http"
	if cert != nil {
		scheme = "https"
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}})
	}
	f.url = fmt.Sprintf("%s://127.0.0.1:%d/", scheme, f.port)
	f.tgz = npmTarball(t, egressPkg, "1.0.0")
	sha1sum := sha1.Sum(f.tgz)
	sha512sum := sha512.Sum512(f.tgz)
	tarball := f.url + egressPkg + "/-/" + egressPkg + "-1.0.0.tgz"
	packument, _ := json.Marshal(map[string]any{
		"name": egressPkg, "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": egressPkg, "version": "1.0.0",
			"dist": map[string]string{"tarball": tarball, "shasum": hex.EncodeToString(sha1sum[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:])}}},
	})
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.auths = append(f.auths, r.Header.Get("Authorization"))
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/" + egressPkg:
			w.Header().Set("Content-Type", "application/json")
			w.Write(packument)
		case "/" + egressPkg + "/-/" + egressPkg + "-1.0.0.tgz":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(f.tgz)
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return f
}

// npmTarball is a package tarball as npm packs one: package/package.json
// and package/index.js.
func npmTarball(t *testing.T, name, version string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	files := map[string]string{
		"package/package.json": fmt.Sprintf(`{"name":%q,"version":%q,"main":"index.js"}`, name, version),
		"package/index.js":     "module.exports = 'egress-probe-ok';\n",
	}
	for _, n := range []string{"package/package.json", "package/index.js"} {
		b := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), ModTime: time.Unix(499162500, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(b))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// testCA makes a CA and a server certificate for 127.0.0.1 signed by it,
// and writes the CA to a file the test user (the daemon) can read.
func testCA(t *testing.T) (caFile string, cert *tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "contextd e2e registry CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(env.home, "egress-ca-"+devTag(6)+".pem")
	devPlant(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})), 0o644)
	return caFile, &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// egressWorkspace makes a node project of the test user's: a workspace
// whose package.json turns the node preset (and so ~/.npmrc's scrubbed copy)
// on.
func egressWorkspace(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(env.home, "egress-"+devTag(8))
	top, err := devMkdirAll(filepath.Join(dir, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	devPlant(t, filepath.Join(dir, "package.json"), `{"name":"egress-ws","version":"1.0.0","private":true}`+"\n", 0o644)
	return dir
}

// bashIn runs safe_bash through the project's symlink, in dir.
func bashIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	link := filepath.Join(env.project, ".claude", "tools", "safe_bash", "safe_bash")
	return runAs(t, dir, nil, "", append([]string{"timeout", "300", link}, args...)...)
}

// egressConn is one connection of an audit record.
type egressConn struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Method   string `json:"method"`
	Allowed  bool   `json:"allowed"`
	Rule     string `json:"rule"`
	Reason   string `json:"reason"`
	Leak     bool   `json:"leak"`
	Injected int    `json:"injected"`
	BytesIn  int64  `json:"bytes_in"`
}

// auditCall is what the tests read of a safe_bash call's audit record.
type auditCall struct {
	Tool    string `json:"tool"`
	Sandbox struct {
		Network     string `json:"network"`
		EgressRules string `json:"egress_rules"`
	} `json:"sandbox"`
	Warnings []string     `json:"warnings"`
	Egress   []egressConn `json:"egress"`
}

// auditRecord returns the audit record of the safe_bash call whose
// arguments hold marker.
func auditRecord(t *testing.T, marker string) auditCall {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(env.home, ".local", "state", "contextd", "audit", "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if !bytes.Contains(sc.Bytes(), []byte(marker)) {
				continue
			}
			var rec auditCall
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				continue
			}
			if rec.Tool == "safe_bash" {
				return rec
			}
		}
	}
	t.Fatalf("no safe_bash audit record holds %q", marker)
	return auditCall{}
}

// auditEgress returns the egress list of the audit record of the call whose
// arguments hold marker.
func auditEgress(t *testing.T, marker string) []egressConn {
	t.Helper()
	return auditRecord(t, marker).Egress
}

// auditSaysProxy checks that a call's record names the egress proxy as its
// network, with the suite's configuration file as where its rules come
// from, and keeps its connections out of the warnings.
func auditSaysProxy(t *testing.T, marker string) {
	t.Helper()
	rec := auditRecord(t, marker)
	cfg := filepath.Join(env.home, ".config", "contextd", "config.toml")
	if rec.Sandbox.Network != "egress proxy" || rec.Sandbox.EgressRules != cfg {
		t.Errorf("the audit record's network is %q (rules %q), want %q (rules %q)",
			rec.Sandbox.Network, rec.Sandbox.EgressRules, "egress proxy", cfg)
	}
	for _, w := range rec.Warnings {
		if strings.HasPrefix(w, "egress ") {
			t.Errorf("the audit record has a connection as a warning: %q", w)
		}
	}
}

// TestEgressNpmInstall: with no egress configuration, `npm install` of a real
// package from the npm registry works through safe_bash, and the audit
// record shows the registry allowed by the default rule.
func TestEgressNpmInstall(t *testing.T) {
	withConfig(t, "")
	ws := egressWorkspace(t)
	marker := "egress-npm-" + devTag(6)
	r := bashIn(t, ws, fmt.Sprintf("npm install is-number@7.0.0 --prefer-online --no-audit --no-fund && node -e 'console.log(require(\"is-number\")(5))' # %s", marker))
	if r.code != 0 || !strings.Contains(r.stdout, "true") {
		t.Fatalf("npm install through the egress proxy: %s", r)
	}
	conns := auditEgress(t, marker)
	reached := false
	for _, c := range conns {
		if c.Host == "registry.npmjs.org" && c.Allowed && c.BytesIn > 0 {
			reached = true
		}
		if !c.Allowed {
			t.Errorf("refused during npm install: %+v", c)
		}
	}
	if !reached {
		t.Fatalf("the audit record shows no allowed connection to registry.npmjs.org: %+v", conns)
	}
	auditSaysProxy(t, marker)
}

// TestEgressRegistryToken: a registry on the host's loopback, named in the
// user's ~/.npmrc with a token, receives the real token over plain HTTP and
// over HTTPS (the test's own CA, named in egress.ca_files); inside, ~/.npmrc
// holds only the placeholder and no variable holds the token.
func TestEgressRegistryToken(t *testing.T) {
	caFile, cert := testCA(t)
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
	}{{"http", nil}, {"https", cert}} {
		t.Run(tc.name, func(t *testing.T) {
			token := "npm_" + devTag(36)
			reg := startRegistry(t, token, tc.cert)
			npmrc := fmt.Sprintf("registry=%s\n//127.0.0.1:%d/:_authToken=%s\n", reg.url, reg.port, token)
			devPlant(t, filepath.Join(env.home, ".npmrc"), npmrc, 0o600)
			withConfig(t, fmt.Sprintf("[egress]\nca_files = [%q]\n", caFile))
			ws := egressWorkspace(t)
			marker := "egress-token-" + devTag(6)
			// What the sandbox sees goes to workspace files that the test
			// reads on the host's disk: the call's output is scrubbed, and
			// the token redacted there would pass for a token the sandbox
			// never held. The command never names the token: it counts the
			// environment's npm tokens by their shape, and the workspace
			// copies of ~/.npmrc and of the environment are searched for it
			// here.
			script := fmt.Sprintf(`cp ~/.npmrc seen.npmrc; env > seen.env
env | grep -c 'npm_[a-z0-9]\{36\}' > seen.count
npm install %s --no-audit --no-fund && node -e 'console.log(require(%q))' # %s`,
				egressPkg, egressPkg, marker)
			r := bashIn(t, ws, script)
			if r.code != 0 || !strings.Contains(r.stdout, "egress-probe-ok") {
				t.Fatalf("npm install from the loopback registry: %s\nregistry saw: %q", r, reg.seen())
			}
			read := func(name string) string {
				b, err := os.ReadFile(filepath.Join(ws, name))
				if err != nil {
					t.Fatalf("the sandboxed command left no %s: %v; the call: %s", name, err, r)
				}
				return string(b)
			}
			for _, name := range []string{"seen.npmrc", "seen.env"} {
				if strings.Contains(read(name), token) {
					t.Errorf("the token is visible inside the sandbox: %s holds it", name)
				}
			}
			if got := strings.TrimSpace(read("seen.count")); got != "0" {
				t.Errorf("env | grep -c <an npm token's shape> inside the sandbox: %q, want 0", got)
			}
			if npmrc := read("seen.npmrc"); !strings.Contains(npmrc, "_authToken=[REDACTED:") {
				t.Errorf("~/.npmrc inside does not hold a placeholder where the token is: %q", npmrc)
			}
			seen := reg.seen()
			if len(seen) == 0 {
				t.Fatal("the registry got no request")
			}
			for _, a := range seen {
				if a != "Bearer "+token {
					t.Errorf("the registry got Authorization %q, want the real token", a)
				}
			}
			injected := 0
			for _, c := range auditEgress(t, marker) {
				injected += c.Injected
			}
			if injected == 0 {
				t.Errorf("the audit record counts no credential put back on the wire")
			}
		})
	}
}

// TestEgressRefusals: a host outside the policy is refused, named in the
// call's result with the line that would allow it and in the audit record;
// there is no resolver inside and no direct connection out, not even to a
// port listening on the host's loopback; and a credential's placeholder
// sent to another (allowed) host is blocked.
func TestEgressRefusals(t *testing.T) {
	token := "npm_" + devTag(36)
	reg := startRegistry(t, token, nil)
	other := startRegistry(t, "unused", nil)
	devPlant(t, filepath.Join(env.home, ".npmrc"), fmt.Sprintf("registry=%s\n//127.0.0.1:%d/:_authToken=%s\n", reg.url, reg.port, token), 0o600)
	// (The suite's configuration has a [tools.safe_bash] table already.)
	withConfig(t, fmt.Sprintf("[egress]\nallow = [\"127.0.0.1:%d\"]\n", other.port))
	ws := egressWorkspace(t)

	marker := "egress-refused-" + devTag(6)
	r := bashIn(t, ws, fmt.Sprintf("curl -sS -o /dev/null https://example.com/ ; echo curl=$? # %s", marker))
	if !strings.Contains(r.stdout, "curl=56") && !strings.Contains(r.stdout, "curl=22") {
		t.Errorf("curl to a host outside the policy: %s", r)
	}
	mustContain(t, "the call's result", r.stdout+r.stderr, "egress refused example.com:443", `egress_allow = ["example.com:443"]`)
	refused := false
	for _, c := range auditEgress(t, marker) {
		if c.Host == "example.com" && c.Port == 443 && !c.Allowed && c.Reason != "" {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the audit record does not list example.com:443 as refused")
	}
	// The result tells the agent how to allow the host; the audit record
	// says which network the call had and lists the refusal as a
	// connection, and so does `contextd audit show`.
	auditSaysProxy(t, marker)
	show := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "audit", "show", "--tool", "safe_bash", "--since", "10m")
	mustContain(t, "contextd audit show", show.stdout, "network egress proxy (rules: ", "  connection  example.com:443 refused: ")

	// No resolver, no route, and the host's loopback is not the sandbox's:
	// a port listening there (and named by no rule) cannot be reached.
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLn.Close()
	r = bashIn(t, ws, fmt.Sprintf(`getent hosts registry.npmjs.org && echo resolved; (exec 3<>/dev/tcp/1.1.1.1/443) 2>/dev/null && echo direct-out; (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo host-loopback; echo done`,
		hostLn.Addr().(*net.TCPAddr).Port))
	if r.code != 0 || !strings.Contains(r.stdout, "done") {
		t.Fatalf("probe: %s", r)
	}
	for _, bad := range []string{"resolved", "direct-out", "host-loopback"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("%s from inside the sandbox: %s", bad, r)
		}
	}

	// The registry's placeholder, sent to the other allowed host (through
	// the proxy, where it is seen), is blocked and reported.
	marker = "egress-leak-" + devTag(6)
	r = bashIn(t, ws, fmt.Sprintf(`ph=$(grep -o '\[REDACTED:[^]]*\]' ~/.npmrc | head -1); test -n "$ph" || { echo no-placeholder; exit 3; }; curl -s -o /dev/null -w '%%{http_code}\n' --noproxy '' -x http://127.0.0.1:3128 -H "Authorization: Bearer $ph" http://127.0.0.1:%d/x # %s`, other.port, marker))
	if !strings.Contains(r.stdout, "403") {
		t.Errorf("a placeholder sent to another host: want 403 from the proxy: %s", r)
	}
	for _, a := range other.seen() {
		if strings.Contains(a, token) || strings.Contains(a, "REDACTED") {
			t.Errorf("the other host received %q", a)
		}
	}
	leak := false
	for _, c := range auditEgress(t, marker) {
		leak = leak || c.Leak
	}
	if !leak {
		t.Errorf("the audit record does not report the attempted leak")
	}
	mustContain(t, "the call's result", r.stdout+r.stderr, "egress blocked")

	// contextd status lists today's refusals.
	st := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "status", "--no-sandbox-check")
	mustContain(t, "contextd status", st.stdout, "egress:", "example.com:443")
}

// TestEgressWrapNpx: `mcp wrap -- npx -y @modelcontextprotocol/server-everything`
// with the default policy: npx fetches the package from the npm registry
// through the proxy (into the cache layers), and the server answers the
// TypeScript SDK client.
func TestEgressWrapNpx(t *testing.T) {
	withConfig(t, "")
	// The version e2e/mcpservers pins, so that the run does not depend on
	// what the registry publishes next.
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(env.repo, "e2e", "mcpservers", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &pkg)
	v := pkg.Dependencies["@modelcontextprotocol/server-everything"]
	if v == "" {
		t.Fatal("e2e/mcpservers/package.json pins no server-everything")
	}
	w := startWrap(t, "everything-npx", nil, "npx", "-y", "@modelcontextprotocol/server-everything@"+v)
	if w.hello.Server == nil || w.hello.Server.Name == "" {
		t.Fatalf("no server info: %+v", w.hello)
	}
	r, _ := w.callOK("call", "echo", map[string]any{"message": "through the egress proxy"})
	mustContain(t, "echo", r.Text(), "through the egress proxy")
}
