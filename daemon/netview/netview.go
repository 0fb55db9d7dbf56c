// Package netview decides what a sandboxed call may reach beyond its own loopback: the egress proxy's rules and credentials for the call, where it listens inside, and the environment and trust store that point the toolchains at it.
package netview

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/registries"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/scrub"
)

// ProxyAddr is where the egress proxy listens inside every sandbox. The
// sandbox's network namespace is its own, so a fixed port collides with
// nothing on the host; a command that wants this port for itself cannot
// have it.
const ProxyAddr = "127.0.0.1:3128"

// proxyURL is ProxyAddr as the proxy variables name it.
const proxyURL = "http://" + ProxyAddr

// noProxy is the sandbox's own loopback: a test server a command starts
// inside is reached directly. Registries on the host's loopback are
// forwarded to the same address inside (Setup.forwards).
const noProxy = "localhost,127.0.0.1,::1"

// Dirs are where the setup keeps its files.
type Dirs struct {
	// CA holds the per-user CA (ca.pem, ca-key.pem). It must be a place
	// no sandbox sees: under contextd's data directory, which is on the
	// credential deny-list.
	CA string
	// Runtime holds the sandbox's trust bundle, shown read-only inside.
	Runtime string
}

// Setup is the daemon's egress state, built once at start.
type Setup struct {
	base []egress.Rule // registries (when on) and [egress] allow
	// registries are base's registry rules alone (a plugin tool's build).
	registries []egress.Rule
	found      registries.Found
	ca         *egress.CA
	roots      *x509.CertPool
	bundle     string // the sandbox's trust bundle (host path)
	caOnly     string // contextd's CA and the extra CA files alone (host path), for Node
	bundleAt   string // the system bundle's path, as the variables name it
	bundleMnt  string // where the bundle is mounted: bundleAt with its links resolved
	forwards   []forward
	notes      []string
	log        *slog.Logger
	refusals   *Refusals
	limits     egress.Limits
	cfgSafe    []string // tools.safe_bash.egress_allow as written, for Describe
	rulesFrom  string   // where the rules come from (RulesFrom)
	// rules are the configuration's, compiled once (Compile).
	rules *Rules
	// What renewing the CA needs: it lives days, a daemon may live longer.
	caMu     sync.Mutex
	caDir    string
	caScope  []string
	rtDir    string
	extraPEM []byte
	// extraNode is extraPEM without the files that are a system bundle (a
	// toolchain's setting may name it): Node's file holds what Node does not
	// already trust through SSL_CERT_FILE's bundle or its own roots.
	extraNode []byte
}

// forward is a registry on the host's loopback, reached inside at the same
// address.
type forward struct {
	listen []string // addresses inside: 127.0.0.1:PORT, and [::1]:PORT for "localhost"
	target string   // host:port on the host, as the rule names it
}

// systemBundles are where distributions keep the system trust store as one
// file (Go's crypto/x509 looks in the same places); the first that exists
// is the one the sandbox sees replaced by its bundle.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Arch, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
	"/etc/pki/tls/cacert.pem",            // OpenELEC
	"/etc/ssl/cert.pem",                  // Alpine, macOS-like layouts
}

// NewSetup compiles cfg's egress rules (Compile), reads the user's
// toolchain configuration (the default rules and the credentials), loads or
// makes the per-user CA and writes the sandbox's trust bundle. h is the
// daemon user's home and environment.
func NewSetup(cfg *config.Config, h *homeview.Host, dirs Dirs, log *slog.Logger) (*Setup, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rules, err := Compile(cfg)
	if err != nil {
		return nil, err
	}
	s := &Setup{log: log, refusals: &Refusals{}, rules: rules, cfgSafe: cfg.Tools.SafeBash.EgressAllow,
		limits: egress.Limits{MaxConns: cfg.Egress.MaxConnections}, rulesFrom: rulesFrom(cfg)}
	s.found = registries.Discover(h)
	s.notes = append(s.notes, s.found.Notes...)
	if cfg.Egress.Registries {
		for _, r := range s.found.Registries {
			s.registries = append(s.registries, egress.Rule{Host: r.Host, Port: r.Port, Methods: []string{"GET", "HEAD"}, Source: r.Source})
		}
	}
	s.base = append(append(s.base, s.registries...), rules.Allow...)
	if s.roots, err = x509.SystemCertPool(); err != nil || s.roots == nil {
		s.roots = x509.NewCertPool()
	}
	extra := append(append([]string{}, cfg.Egress.CAFiles...), s.found.CAFiles...)
	var extraPEM, extraNode []byte
	for _, f := range extra {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && !contains(cfg.Egress.CAFiles, f) {
				continue // a toolchain's setting pointing nowhere: that tool fails the same way
			}
			return nil, fmt.Errorf("egress: CA file %s: %v: %w", f, err, catalog.ErrConfig)
		}
		if !s.roots.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("egress: CA file %s holds no PEM certificate: %w", f, catalog.ErrConfig)
		}
		extraPEM = append(append(extraPEM, '\n'), b...)
		if !isSystemBundle(f) {
			extraNode = append(append(extraNode, '\n'), b...)
		}
	}
	s.caDir, s.rtDir, s.extraPEM, s.extraNode = dirs.CA, dirs.Runtime, extraPEM, extraNode
	s.caScope = s.interceptScope()
	if s.ca, err = egress.LoadOrCreateCA(dirs.CA, s.caScope...); err != nil {
		return nil, fmt.Errorf("egress: the CA in %s: %v: %w", dirs.CA, err, catalog.ErrSandbox)
	}
	if err := s.writeBundle(); err != nil {
		return nil, err
	}
	s.forwards = forwardsOf(append(append([]egress.Rule{}, s.base...), s.allRules()...))
	return s, nil
}

// DefaultsOnly is RulesFrom when no configuration file was read.
const DefaultsOnly = "defaults (no configuration file)"

// rulesFrom names where a setup's rules come from: the configuration file
// read (whose egress settings, and whether the registries are allowed, are
// the rules), or the defaults. Each rule's own source, a registry's file
// among them, is in the connections it allowed.
func rulesFrom(cfg *config.Config) string {
	if cfg.Source == "" {
		return DefaultsOnly
	}
	return cfg.Source
}

// RulesFrom says where the calls' rules come from, for the audit record
// (audit.Sandbox.EgressRules): the configuration file, or DefaultsOnly.
func (s *Setup) RulesFrom() string { return s.rulesFrom }

// interceptScope are the hosts the proxy may terminate TLS for, which the
// CA's name constraints are limited to: those a credential belongs to and
// those whose rules name methods (the read-only registries), since a
// method is enforced by seeing the request.
func (s *Setup) interceptScope() []string {
	var out []string
	for _, r := range append(append([]egress.Rule{}, s.base...), s.allRules()...) {
		if len(r.Methods) > 0 {
			out = append(out, r.Host)
		}
	}
	for _, sec := range s.found.Secrets {
		if sec.Host != "" {
			out = append(out, sec.Host)
		}
	}
	for _, ce := range s.rules.Credentials {
		// The credential's own syntax (https://, header=, url, body), as
		// Compile read it: a rule's parser refuses those forms.
		for _, t := range ce.Targets {
			out = append(out, t.Host)
		}
	}
	return out
}

// currentCA returns the CA for a new call, replacing it first (and the
// trust bundle with it) when it nears its end.
func (s *Setup) currentCA() (ca *egress.CA, bundle, mnt, caOnly string, err error) {
	s.caMu.Lock()
	defer s.caMu.Unlock()
	if !s.ca.Stale() {
		if present(s.bundle) && present(s.caOnly) {
			return s.ca, s.bundle, s.bundleMnt, s.caOnly, nil
		}
		// Removed under it (another process's cleanup of a bundle it
		// took for an old one, the user): written again, so that the
		// call's bind finds it.
		if err := s.writeBundle(); err != nil {
			return nil, "", "", "", err
		}
		return s.ca, s.bundle, s.bundleMnt, s.caOnly, nil
	}
	if ca, err = egress.LoadOrCreateCA(s.caDir, s.caScope...); err != nil {
		return nil, "", "", "", fmt.Errorf("egress: renewing the CA in %s: %v: %w", s.caDir, err, catalog.ErrSandbox)
	}
	old := s.ca
	s.ca = ca
	if err := s.writeBundle(); err != nil {
		s.ca = old
		return nil, "", "", "", err
	}
	return ca, s.bundle, s.bundleMnt, s.caOnly, nil
}

// NodeCAAt is where the sandbox sees contextd's CA and the extra CA files
// alone, the file NODE_EXTRA_CA_CERTS names: Node adds it to roots of its
// own, and parses every certificate of it at each start (the whole system
// bundle cost 45 ms per `node` on the development VM; this, one or a few
// certificates, nothing to measure). On the call's fresh /tmp, read-only.
const NodeCAAt = "/tmp/.contextd-ca.pem"

// allRules are the tool and server rules from the configuration, for the
// forwards (a registry on the host's loopback named only there).
func (s *Setup) allRules() []egress.Rule {
	out := append([]egress.Rule{}, s.rules.SafeBash...)
	for _, l := range s.rules.Servers {
		out = append(out, l...)
	}
	return out
}

// writeBundle writes, under s.rtDir, the trust bundle the sandbox sees in
// place of the system's: the system's own certificates, the extra CA files
// (s.extraPEM), and the per-user CA (whose certificate alone, never its key,
// is shown); and Node's file (NodeCAAt): the extra CA files that are not a
// system bundle (s.extraNode) and the CA.
func (s *Setup) writeBundle() error {
	dir := s.rtDir
	var sys []byte
	for _, p := range systemBundles {
		if b, err := os.ReadFile(p); err == nil {
			sys, s.bundleAt = b, p
			break
		}
	}
	if s.bundleAt == "" {
		// Nothing to show the bundle in place of: the variables still
		// name it, at a path of its own inside.
		s.bundleAt = "/etc/ssl/certs/ca-certificates.crt"
		s.notes = append(s.notes, "no system trust bundle found; the sandbox's holds only contextd's CA and the configured CA files")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("egress: %v: %w", err, catalog.ErrSandbox)
	}
	b := append(append(append(append(append([]byte{}, sys...), '\n'), s.extraPEM...), '\n'), s.ca.CertPEM()...)
	own := append(append(append([]byte{}, s.extraNode...), '\n'), s.ca.CertPEM()...)
	// One bundle per CA: a process with another view of the user's
	// configuration (`contextd doctor` from another shell) has a CA of its
	// own, and must not replace the bundle the daemon's sandboxes mount.
	final, err := writeReadOnly(dir, "bundle-"+s.ca.ID()+".pem", b)
	if err != nil {
		return err
	}
	caOnly, err := writeReadOnly(dir, "ca-"+s.ca.ID()+".pem", own)
	if err != nil {
		return err
	}
	s.bundle, s.caOnly = final, caOnly
	removeOldBundles(dir, s.ca.ID(), time.Now())
	// A bind never goes over a symbolic link: mount at the file the path
	// leads to, which the sandbox's tree has at the same canonical path.
	s.bundleMnt = s.bundleAt
	if p, err := filepath.EvalSymlinks(s.bundleAt); err == nil {
		s.bundleMnt = p
	}
	return nil
}

// bundleKeep is how long the bundles of another CA are kept: a process
// that rotated or scoped its CA differently (a daemon of an earlier
// configuration, `contextd doctor` from another shell) may still mount its
// own, and writes it again if it finds it gone (currentCA).
const bundleKeep = 24 * time.Hour

// removeOldBundles removes from dir the trust bundles of CAs other than
// the one named id that have not been written for bundleKeep, and the
// leftovers of writes that never finished: each rotation of the CA left
// one of each kind behind, ~200 kB apiece, in the user's runtime
// directory until logout.
func removeOldBundles(dir, id string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		kind, rest, ok := strings.Cut(name, "-")
		if !ok || (kind != "bundle" && kind != "ca") || !strings.Contains(rest, ".pem") || rest == id+".pem" {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && now.Sub(fi.ModTime()) > bundleKeep {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// present says whether p names a file that is there.
func present(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// isSystemBundle says whether the CA file f is one of the system's trust
// bundles (systemBundles), by where it leads.
func isSystemBundle(f string) bool {
	real, err := filepath.EvalSymlinks(f)
	if err != nil {
		return false
	}
	for _, p := range systemBundles {
		if r, err := filepath.EvalSymlinks(p); err == nil && r == real {
			return true
		}
	}
	return false
}

// writeReadOnly writes b as dir/name, mode 0444, replacing it atomically.
func writeReadOnly(dir, name string, b []byte) (string, error) {
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return "", fmt.Errorf("egress: trust bundle: %v: %w", err, catalog.ErrSandbox)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("egress: trust bundle: %v: %w", errors.Join(werr, cerr), catalog.ErrSandbox)
	}
	os.Chmod(tmp.Name(), 0o444)
	final := filepath.Join(dir, name)
	if err := os.Rename(tmp.Name(), final); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("egress: trust bundle: %v: %w", err, catalog.ErrSandbox)
	}
	return final, nil
}

// forwardsOf lists the rules naming a host on the host's own loopback with
// a port: a registry there (Verdaccio on localhost:4873) is named by the
// user's configuration as a loopback URL, which inside would mean the
// sandbox's own loopback.
func forwardsOf(rules []egress.Rule) []forward {
	seen := map[string]bool{}
	var out []forward
	for _, r := range rules {
		if r.Port == 0 || strings.HasPrefix(r.Host, "*") {
			continue
		}
		var listen []string
		switch {
		case strings.EqualFold(r.Host, "localhost"):
			listen = []string{"127.0.0.1:" + strconv.Itoa(r.Port), "[::1]:" + strconv.Itoa(r.Port)}
		default:
			a, err := netip.ParseAddr(r.Host)
			if err != nil || !a.IsLoopback() {
				continue
			}
			listen = []string{netip.AddrPortFrom(a, uint16(r.Port)).String()}
		}
		target := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
		if seen[target] || listen[0] == ProxyAddr {
			continue
		}
		seen[target] = true
		out = append(out, forward{listen: listen, target: target})
	}
	return out
}

// Notes are what the setup saw but did not turn into rules, for the log
// and `contextd sandbox show`.
func (s *Setup) Notes() []string { return s.notes }

// Refusals are the refusals recorded since the daemon started.
func (s *Setup) Refusals() *Refusals { return s.refusals }

// Call is one sandboxed call's part in the policy.
type Call struct {
	// Tool names the caller for the refusal lines: "safe_bash", or
	// "mcp:NAME" for a wrapped server.
	Tool string
	// Server is the wrapped server's name (its [mcp.servers.NAME] rules);
	// "" for safe_bash.
	Server string
	// Vault is the session's: the credentials' placeholders are the ones
	// the scrubbed configuration copies show.
	Vault *scrub.Vault
	// Extra are rules of the call's own, after the configured ones
	// (`contextd doctor` allows its own test server so).
	Extra []egress.Rule
	// Only, when set, gives the sandbox Extra alone: none of egress.allow,
	// the registries or safe_bash's rules, and of the credentials only
	// those Credentials names. A plugin tool gets its manifest's rules so,
	// an install's fetch its source's host.
	Only bool
	// Credentials are the credential_env names an Only call gets.
	Credentials []string
	// AllowHint, when set, is what a refusal line says to change instead
	// of the configuration ("permissions.egress in the tool's
	// contextd-tool.toml, within [plugins] allow_egress").
	AllowHint string
}

// Net is what a call's sandbox gets.
type Net struct {
	Listen []string
	Env    []string // replaces variables of the same name
	Binds  []runner.Bind
	// Serve is runner.Spec.Serve.
	Serve func([]net.Listener)
	// Finish stops the proxy (after the run) and sums up what went
	// through it.
	Finish func() Summary
	// Sofar sums up what went through so far, the proxy still serving (a
	// wrapped server that failed to start: what was refused).
	Sofar func() Summary
	// Rules are the call's rules, in the order they are tried.
	Rules []egress.Rule
}

// Apply gives spec the proxy as its way out: the listeners inside, served
// by the proxy, the CA bundle's bind, and returns env with the proxy's
// variables merged in. The one place a sandbox is wired to its proxy, for
// every kind of sandbox (a tool call, a wrapped MCP server).
func (n *Net) Apply(spec *runner.Spec, env []string) []string {
	spec.Listen, spec.Serve = n.Listen, n.Serve
	spec.Binds = append(spec.Binds, n.Binds...)
	return MergeEnv(env, n.Env)
}

// Summary is what a call's connections come to. It is sandboxinfo's type,
// so that a tool's outcome carries it without linking the proxy.
type Summary = sandboxinfo.Egress

// ruleKey is where a rule for the call goes in the configuration.
func (c Call) ruleKey() (section, key string) {
	if c.Server != "" {
		return "[mcp.servers." + c.Server + "]", "egress_allow"
	}
	return "[tools.safe_bash]", "egress_allow"
}

// Registries are the package registries the user's toolchain
// configuration names (and their defaults), read-only: what a plugin
// tool's build may reach. None when egress.registries is off.
func (s *Setup) Registries() []egress.Rule { return slices.Clone(s.registries) }

// Plan is what Prepare gives the call's sandbox, without a proxy to serve
// it (contextd sandbox show): Serve, Finish and Sofar are nil. Without a
// Vault, no credential is put in.
func (s *Setup) Plan(c Call) (*Net, error) {
	n, _, _, err := s.plan(c)
	return n, err
}

// plan is the part of Prepare that Plan shares: the call's rules and
// credentials, the listeners inside, the environment and the binds of the
// trust bundles.
func (s *Setup) plan(c Call) (n *Net, creds []egress.Credential, ca *egress.CA, err error) {
	var rules []egress.Rule
	switch {
	case c.Only:
	case c.Server != "":
		rules = append(append(rules, s.base...), s.rules.Servers[c.Server]...)
	default:
		rules = append(append(rules, s.base...), s.rules.SafeBash...)
	}
	rules = append(rules, c.Extra...)
	for _, sec := range s.found.Secrets {
		if sec.Host == "" || c.Vault == nil || c.Only {
			continue
		}
		ph := c.Vault.Placeholder(homeview.RuleConfigCredential, sec.Value, sec.File)
		port, clear := s.registryOrigin(sec.Host, sec.Port)
		creds = append(creds, egress.Credential{Placeholder: ph, Secret: sec.Value, Host: sec.Host, Port: port,
			Cleartext: clear, Source: sec.File})
	}
	var env []string
	for _, ce := range s.rules.Credentials {
		v := os.Getenv(ce.Name)
		if v == "" || c.Vault == nil || (c.Only && !slices.Contains(c.Credentials, ce.Name)) {
			continue
		}
		ph := c.Vault.Placeholder(homeview.RuleConfigCredential, v, "env "+ce.Name)
		for _, cr := range ce.Targets {
			cr.Placeholder, cr.Secret, cr.Source = ph, v, "env "+ce.Name
			creds = append(creds, cr)
		}
		env = append(env, ce.Name+"="+ph)
	}
	listen := []string{ProxyAddr}
	for _, f := range s.forwards {
		listen = append(listen, f.listen...)
	}
	env = append(env, proxyEnv(s.bundleAt)...)

	ca, bundle, bundleMnt, caOnly, err := s.currentCA()
	if err != nil {
		return nil, nil, nil, err
	}
	n = &Net{Listen: listen, Env: env, Rules: rules,
		Binds: []runner.Bind{{Source: bundle, Target: bundleMnt}, {Source: caOnly, Target: NodeCAAt}}}
	return n, creds, ca, nil
}

// Prepare builds the call's proxy: its rules, its credentials with this
// session's placeholders, the listeners inside and the environment.
func (s *Setup) Prepare(c Call) (*Net, error) {
	n, creds, ca, err := s.plan(c)
	if err != nil {
		return nil, err
	}
	rules := n.Rules
	col := &collector{setup: s, call: c, rules: rules}
	srv := egress.NewServer(egress.Options{Policy: egress.Policy{Rules: rules}, Credentials: creds, CA: ca,
		RootCAs: s.roots, OnEvent: col.add, Log: s.log, Limits: s.limits})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	serve := func(ls []net.Listener) {
		for _, l := range ls {
			addr := l.Addr().String()
			target := ""
			for _, f := range s.forwards {
				if contains(f.listen, addr) {
					target = f.target
				}
			}
			wg.Add(1)
			go func(l net.Listener, target string) {
				defer wg.Done()
				if target == "" {
					srv.Serve(ctx, l)
				} else {
					srv.ServeForward(ctx, l, target)
				}
			}(l, target)
		}
	}
	finish := func() Summary {
		cancel()
		wg.Wait()
		return col.summary()
	}
	n.Serve, n.Finish, n.Sofar = serve, finish, col.summary
	return n, nil
}

// proxyEnv points the toolchains at the proxy and at the sandbox's trust
// bundle. Each tool reads its own names: curl, git, Go, pip and cargo the
// proxy variables (either case); npm its npm_config_* ones, which also
// override a proxy or cafile of the user's .npmrc (which would bypass the
// proxy or leave out contextd's CA). SSL_CERT_FILE is OpenSSL's and Go's,
// NODE_EXTRA_CA_CERTS Node's (added to its own roots: NodeCAAt, not the
// whole bundle, which Node would parse at every start), REQUESTS_CA_BUNDLE
// and PIP_CERT pip's, GIT_SSL_CAINFO git's, CARGO_HTTP_CAINFO cargo's,
// CURL_CA_BUNDLE curl's.
func proxyEnv(bundle string) []string {
	out := []string{}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
		"npm_config_proxy", "npm_config_https_proxy"} {
		out = append(out, k+"="+proxyURL)
	}
	for _, k := range []string{"ALL_PROXY", "all_proxy"} {
		out = append(out, k+"=socks5h://"+ProxyAddr)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy", "npm_config_noproxy"} {
		out = append(out, k+"="+noProxy)
	}
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT",
		"GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO", "CURL_CA_BUNDLE", "npm_config_cafile"} {
		out = append(out, k+"="+bundle)
	}
	return append(out, "NODE_EXTRA_CA_CERTS="+NodeCAAt)
}

// MergeEnv returns env with the variables of over in place of those of the
// same name (a program reads the first of two; there must be one).
func MergeEnv(env, over []string) []string {
	names := map[string]bool{}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	out := make([]string, 0, len(env)+len(over))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}

// collector gathers one call's events.
type collector struct {
	setup    *Setup
	call     Call
	rules    []egress.Rule
	mu       sync.Mutex
	conns    []sandboxinfo.Connection
	unlisted int // connections past maxConnections
}

func (c *collector) add(e egress.Event) {
	conn := sandboxinfo.Connection{Host: e.Host, Port: e.Port, Method: e.Method, Via: e.Via, Allowed: e.Allowed,
		Rule: e.Rule, Reason: e.Reason, Leak: e.Leak, Intercepted: e.Intercepted, Injected: e.Injected,
		BytesOut: e.BytesOut, BytesIn: e.BytesIn}
	for _, r := range c.rules {
		if e.Rule != "" && r.String() == e.Rule {
			conn.Source = r.Source
			break
		}
	}
	c.mu.Lock()
	if len(c.conns) >= maxConnections {
		c.unlisted++
	} else {
		c.conns = append(c.conns, conn)
	}
	c.mu.Unlock()
	if !e.Allowed {
		c.setup.refusals.add(Refusal{Time: e.Time, Tool: c.call.Tool, Host: e.Host, Port: e.Port, Reason: e.Reason, Leak: e.Leak})
	}
}

// maxConnections bounds what one call's audit record lists (a crawler
// could make thousands); the rest are not listed, and the call's result
// says how many.
const maxConnections = 1000

func (c *collector) summary() Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := Summary{RulesFrom: c.setup.rulesFrom, Connections: append([]sandboxinfo.Connection(nil), c.conns...)}
	if len(c.call.Extra) > 0 {
		sum.RulesFrom += ", and the call's own"
	}
	section, key := c.call.ruleKey()
	seen := map[string]bool{}
	for _, conn := range c.conns {
		if conn.Allowed {
			continue
		}
		hp := net.JoinHostPort(conn.Host, strconv.Itoa(conn.Port))
		if seen[hp] {
			continue
		}
		seen[hp] = true
		if conn.Leak {
			sum.Lines = append(sum.Lines, fmt.Sprintf("egress blocked %s: %s (a credential goes only to its own host)", hp, conn.Reason))
			continue
		}
		if egress.IsLimitReason(conn.Reason) {
			// No rule helps: the proxy's own bound was hit.
			if conn.Host == "" {
				hp = "a request"
			}
			sum.Lines = append(sum.Lines, fmt.Sprintf("egress refused %s: %s", hp, conn.Reason))
			continue
		}
		if conn.Rule != "" {
			// A rule let it through and it failed after (the upstream's
			// response could not be read or scrubbed, a ClientHello
			// refused): another rule would change nothing.
			sum.Lines = append(sum.Lines, fmt.Sprintf("egress to %s failed: %s (the host is allowed by %s)", hp, conn.Reason, conn.Rule))
			continue
		}
		if c.call.AllowHint != "" {
			sum.Lines = append(sum.Lines, fmt.Sprintf("egress refused %s: %s; to allow it: %s", hp, conn.Reason, c.call.AllowHint))
			continue
		}
		sum.Lines = append(sum.Lines, fmt.Sprintf("egress refused %s: %s; to allow it, add to ~/.config/contextd/config.toml: %s %s = [%q]",
			hp, conn.Reason, section, key, egress.Hint(conn.Host, conn.Port)))
	}
	if c.unlisted > 0 {
		sum.Lines = append(sum.Lines, fmt.Sprintf("%d more connections went through the egress proxy than the %d the audit record lists", c.unlisted, maxConnections))
	}
	return sum
}

// Refusal is one refused connection, kept for `contextd status`.
type Refusal struct {
	Time   time.Time
	Tool   string
	Host   string
	Port   int
	Reason string
	Leak   bool
}

// Refusals are the refusals since the daemon started, the most recent
// maxRefusals of them.
type Refusals struct {
	mu   sync.Mutex
	list []Refusal
}

const maxRefusals = 500

func (r *Refusals) add(x Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if x.Time.IsZero() {
		x.Time = time.Now()
	}
	r.list = append(r.list, x)
	if len(r.list) > maxRefusals {
		r.list = append([]Refusal(nil), r.list[len(r.list)-maxRefusals:]...)
	}
}

// Since returns the refusals at or after t, oldest first.
func (r *Refusals) Since(t time.Time) []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Refusal
	for _, x := range r.list {
		if !x.Time.Before(t) {
			out = append(out, x)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// DefaultDirs are the daemon user's: the CA under contextd's data
// directory ($XDG_DATA_HOME/contextd/egress-ca, on the deny-list, so never
// in a sandbox), the bundle under $XDG_RUNTIME_DIR/contextd/egress (or the
// cache directory when there is no runtime directory).
func DefaultDirs() (Dirs, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Dirs{}, err
	}
	xdg := func(name, def string) string {
		if v := os.Getenv(name); filepath.IsAbs(v) {
			return v
		}
		return filepath.Join(home, def)
	}
	d := Dirs{CA: filepath.Join(xdg("XDG_DATA_HOME", ".local/share"), "contextd", "egress-ca")}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
		d.Runtime = filepath.Join(rt, "contextd", "egress")
	} else {
		d.Runtime = filepath.Join(xdg("XDG_CACHE_HOME", ".cache"), "contextd", "egress")
	}
	return d, nil
}

// HostOf is the daemon user's home and environment, as the user's own
// toolchains see them (the variables that move their configuration).
func HostOf() (*homeview.Host, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return &homeview.Host{Home: home, Env: env}, nil
}

// Description is what a safe_bash call may reach, for `contextd sandbox
// show`: no secret, only where each credential may go.
type Description struct {
	Proxy       string   `json:"proxy"`
	Rules       []string `json:"rules"`       // "RULE  (source)"
	Credentials []string `json:"credentials"` // "HOST[:PORT]  (source)"
	Forwards    []string `json:"forwards"`    // addresses inside forwarded to the host's loopback
	Notes       []string `json:"notes,omitempty"`
}

// registryOrigin gives the port and transport for a secret of the user's
// registry configuration: only a registry the user configured as http://
// at that host (and port, if the secret names one) gets it unencrypted.
func (s *Setup) registryOrigin(host string, port int) (int, bool) {
	for _, r := range s.found.Registries {
		if r.Scheme == "http" && r.Host == host && (port == 0 || r.Port == port) {
			return r.Port, true
		}
	}
	return port, false
}

// Describe says what a safe_bash call's proxy allows.
func (s *Setup) Describe() Description {
	d := Description{Proxy: ProxyAddr, Rules: []string{}, Credentials: []string{}, Forwards: []string{}, Notes: s.notes}
	for _, r := range s.base {
		d.Rules = append(d.Rules, r.String()+"  ("+r.Source+")")
	}
	for _, a := range s.cfgSafe {
		d.Rules = append(d.Rules, a+"  (tools.safe_bash.egress_allow)")
	}
	for _, sec := range s.found.Secrets {
		if sec.Host == "" {
			continue
		}
		hp := sec.Host
		if sec.Port != 0 {
			hp = net.JoinHostPort(sec.Host, strconv.Itoa(sec.Port))
		}
		d.Credentials = append(d.Credentials, hp+"  ("+sec.File+")")
	}
	for _, ce := range s.rules.Credentials {
		for _, h := range ce.Written {
			d.Credentials = append(d.Credentials, h+"  (env "+ce.Name+")")
		}
	}
	for _, f := range s.forwards {
		d.Forwards = append(d.Forwards, strings.Join(f.listen, ", ")+" -> "+f.target)
	}
	return d
}
