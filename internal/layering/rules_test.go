package layering

import (
	"path"
	"strings"
)

// rule binds the packages matching from (but none matching except): none of
// them may import a package matching forbid, unless it also matches allow.
// With deep the rule holds for everything they link, not only their direct
// imports.
//
// Patterns are module-relative: "daemon/runner" is that package, "proxy/..."
// the package and every one below it, "..." every package, and "*test" a
// package whose last element ends in "test" (the test harnesses).
type rule struct {
	from   []string
	except []string
	deep   bool
	forbid []string
	allow  []string
	// span marks a rule that cuts across layers (every package, the whole
	// daemon): it does not give a package its place, so a package that only
	// span rules match counts as one without a rule.
	span bool
	// pending names the issue that will make the rule hold. A pending rule's
	// violations are logged, not failed; once it holds the test fails until
	// the field is deleted, which is what enforces it.
	pending string
	why     string
}

// harness are the test harnesses: a "…test" package beside what it tests,
// or a test-support package of internal/.
var harness = []string{"*test", "internal/victim"}

// theSandboxHost is the host's side of the sandbox: what builds, starts and
// confines it.
var theSandboxHost = []string{"daemon/sandbox", "daemon/runner/...", "daemon/scope", "ns", "seccomp", "profiles"}

// rules is the layering, one reviewable table; the README's table of import
// rules is generated from it (TestREADMERules), and every package of the
// module must be placed by one of its rules (TestImportRules).
//
// The daemon's binary is the top; the core (daemon) under it composes the
// daemon's layers, which follow a call: the socket and admission, the
// configuration, the state, the tools with the views they build of a call
// (home, network, git), the sandbox's host side, the sandbox's inside,
// respond and account. Beside the daemon sit the MCP firewall (mcp/), the
// protocols (wire/), the proxy (proxy/) and the inspector; at the bottom the
// shared leaves.
var rules = []rule{
	// Across layers.
	{
		from: []string{"..."}, except: harness, span: true,
		forbid: harness,
		why:    "code that ships never imports a test harness: a runner without a sandbox, or a daemon wired for a test, cannot be chosen in production when nothing there links it",
	},
	{
		from: []string{"..."}, except: []string{"cmd/contextd/...", "internal/daemontest"}, span: true,
		forbid: []string{"daemon"},
		why:    "the core is the top of the daemon: only its binary imports it, and internal/daemontest, the harness that starts a real daemon in a test",
	},
	{
		from: []string{"..."}, except: []string{"cmd/contextd/...", "internal/daemontest"}, span: true,
		forbid: []string{"daemon/tools/inside"},
		why:    "the tools' inside half is linked only by the binary that is re-executed as the sandbox's init, and by internal/daemontest, which re-runs a test binary as that init; the daemon reaches it through daemon/tools/toolproto alone",
	},
	{
		from: []string{"..."}, except: []string{"cmd/contextd/..."}, span: true,
		forbid: []string{"daemon/toolfetch/inside"},
		why:    "a tool source's fetch runs only in its sandbox, as the binary re-executed as the sandbox's init: the host reaches it through the operation's JSON alone",
	},
	{
		from: []string{"daemon/..."}, deep: true, span: true,
		forbid: []string{"cmd/...", "proxy/...", "inspect", "bench/...", "e2e/...", "packaging/..."},
		why:    "the daemon shares only the protocols and the leaves with its binaries, the proxy, the inspector and the drivers",
	},

	// Binaries.
	{
		from: []string{"cmd/contextd/..."}, deep: true,
		forbid: []string{"bench/...", "e2e/...", "packaging/...", "catalog/gendoc", "internal/layering"},
		why:    "the daemon's binary is the top: it may link every layer, but no driver or generator",
	},
	{
		from: []string{"cmd/contextd-proxy", "cmd/contextd-proxy-mcp"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "ns", "seccomp", "profiles", "inspect", "cmd/contextd/..."},
		why:    "the proxy starts on every tool call and runs in the agent's process tree: it links nothing of the daemon (nor its sandbox, seccomp or MCP firewall)",
	},
	{
		from: []string{"cmd/contextd-proxy", "cmd/contextd/..."}, deep: true,
		forbid: []string{"proxy/mcpserve"},
		why:    "the MCP SDK ships in contextd-proxy-mcp alone: the proxy every tool call starts and the daemon stay without it",
	},

	// The proxy, the MCP firewall, the protocols, the inspector.
	{
		from: []string{"proxy/..."}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "ns", "seccomp", "profiles", "inspect", "cmd/..."},
		why:    "the proxy speaks to the daemon over the socket only; what both need lives in a shared leaf",
	},
	{
		from: []string{"proxy/hook"}, deep: true,
		forbid: []string{"proxy/install"},
		why:    "the hook runs before every tool call of the agent and must start fast: it reads what install left through proxy/agentfiles, never linking the installer (its parsers, its regular expressions)",
	},
	{
		from: []string{"mcp/..."}, deep: true,
		forbid: []string{"daemon/...", "proxy/...", "cmd/..."},
		why:    "the MCP firewall is a library the daemon uses; it must not reach back into the daemon (daemon -> mcp, never both ways)",
	},
	{
		from: []string{"wire/..."}, deep: true,
		forbid: []string{"daemon/...", "proxy/...", "mcp/...", "cmd/..."},
		why:    "the protocols are the edge; clients of the public API link them without the daemon or the proxy",
	},
	{
		from: []string{"inspect"}, deep: true,
		forbid: []string{"daemon/...", "proxy/...", "mcp/...", "cmd/...", "ns"},
		why:    "the inspector reads the daemon's light protocol from outside: it links the protocol and the leaves, never the daemon",
	},

	{
		from: []string{"pluginsdk/...", "examples/tools/..."}, deep: true,
		forbid: []string{"daemon/...", "proxy/...", "mcp/...", "cmd/...", "ns", "seccomp", "profiles", "inspect"},
		why:    "a tool plugin is built by its author from the SDK and the plugin protocol alone: it runs in the tool's sandbox and links nothing of the daemon, the proxy or the sandbox's host",
	},

	// The daemon's layers, in the order a call meets them.
	{
		from: []string{"daemon"}, deep: true,
		forbid: []string{"daemon/listen", "daemon/logging"},
		why:    "the core is handed its listener and its logger by the binary: a test starts it on a socket and a log of its own, without systemd's socket or the journal",
	},
	{
		from: []string{"daemon/httpapi"}, deep: true,
		forbid: []string{"daemon/tools/...", "daemon/state", "daemon/store/...", "daemon/sandbox", "daemon/sandboxenv", "daemon/runner/...", "daemon/scope", "daemon/plugins/...", "daemon/mcpwrap", "ns", "seccomp", "profiles"},
		why:    "the HTTP edge converts requests for the core and answers; it runs nothing: what runs a call is reached only through the Core the daemon implements",
	},
	{
		from: []string{"daemon/callrec"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "ns", "seccomp", "profiles", "wire/..."},
		allow:  []string{"daemon/config"},
		why:    "the HTTP API's call records are a leaf below the edge: files of answers already scrubbed, linking nothing that runs or answers a call",
	},
	{
		from: []string{"daemon/listen", "daemon/peer", "daemon/session"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "ns", "seccomp", "profiles", "salience", "outline"},
		why:    "the socket and a call's admission (its peer, its session) link only the protocol and the leaves: a connection is checked before anything of the daemon can be reached",
	},
	{
		from: []string{"daemon/httpguard"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "ns", "seccomp", "profiles", "wire/..."},
		why:    "the HTTP API's front door (token, Host, Origin, forwarding) links only the catalog and the leaves: a request is checked before anything of the daemon can be reached",
	},
	{
		from: []string{"daemon/config"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "salience", "budget", "scrub", "outline", "ns", "seccomp", "profiles", "wire/...", "inspect"},
		allow:  []string{"daemon/config", "mcp/interceptspec"},
		why:    "the configuration is a leaf: plain data, decoded and checked for types, ranges and keys; each feature checks and compiles its own section (daemon/configcheck at load), so config links none of them",
	},
	{
		from: []string{"daemon/configcheck"}, deep: true,
		forbid: []string{"daemon/tools/...", "daemon/state", "daemon/store/...", "daemon/embedding/...", "daemon/mcpwrap", "daemon/sandboxenv", "daemon/respond", "daemon/pages", "daemon/audit", "daemon/session", "daemon/sandbox", "daemon/scope", "seccomp", "profiles"},
		why:    "the load check asks each feature to check its section: it links the features' compilers, never what runs a call",
	},
	{
		from: []string{"daemon/store/...", "daemon/embedding/..."}, deep: true,
		forbid: append([]string{"daemon/state", "daemon/tools/...", "daemon/homemount", "daemon/netview", "daemon/mcpwrap"}, theSandboxHost...),
		why:    "the state side (the store, its backends, the embedding client) holds and ranks data: it links neither the sandbox's host nor the tools, so nothing read from a record can start a process",
	},
	{
		from: []string{"daemon/state"}, deep: true,
		forbid: []string{"daemon/store/sqlite", "daemon/store/qdrant", "daemon/embedding/...", "daemon/sandbox", "daemon/scope", "daemon/mcpwrap", "mcp/store"},
		why:    "branches and checkpoints work on the store's interface: which backend holds them is the core's choice",
	},
	{
		from: []string{"daemon/toolcall"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "ns", "seccomp", "profiles", "inspect"},
		why:    "the contract every tool keeps with the stages (decode, run, say how it ended) links only leaves: a tool of any kind, sandboxed or on the store, can keep it without linking another kind's host",
	},
	{
		from: []string{"daemon/state"}, deep: true,
		forbid: append([]string{"daemon/tools/..."}, theSandboxHost...),
		why:    "the state side links neither the tools' host nor the sandbox's: nothing read from a branch or a checkpoint can start a process",
	},
	{
		from: []string{"daemon/tools"}, deep: true,
		forbid: []string{"daemon/state", "daemon/store/sqlite", "daemon/store/qdrant", "daemon/embedding/...", "daemon/sandbox", "daemon/scope", "daemon/mcpwrap", "daemon/session", "daemon/audit", "daemon/logging", "daemon/listen", "mcp/store", "mcp/record"},
		why:    "the tools plan a call's process on the runner's and the store's interfaces: they link no backend, no sandbox implementation, and none of the core's bookkeeping (sessions, audit, logs), which the core does around them",
	},
	{
		from: []string{"daemon/tools/toolproto"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "ns", "inspect", "salience"},
		why:    "the protocol between a tool's two halves belongs to neither side: its types are its own (a salience rule or block is converted at each end)",
	},
	{
		from: []string{"daemon/homeview", "daemon/homemount", "daemon/cachelayer", "daemon/netview", "daemon/registries", "daemon/egress", "daemon/gitguard", "daemon/shield"}, deep: true,
		forbid: []string{"daemon/...", "mcp/store", "mcp/record"},
		allow:  []string{"daemon/homeview", "daemon/homemount", "daemon/cachelayer", "daemon/netview", "daemon/registries", "daemon/egress", "daemon/gitguard", "daemon/shield", "daemon/config", "daemon/runner"},
		why:    "what a call sees (its home, its network, git's own paths, the workspace's shield) is built as data for the runner: these link the configuration and the runner's interface, never the tools that ask for it, the sandbox's implementation that applies it, or the state",
	},
	{
		from: []string{"daemon/sandboxenv"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "inspect"},
		allow:  []string{"daemon/sandboxenv", "daemon/homeview", "daemon/homemount", "daemon/cachelayer", "daemon/netview", "daemon/registries", "daemon/egress", "daemon/gitguard", "daemon/shield", "daemon/config", "daemon/runner", "mcp/interceptspec"},
		why:    "the one builder of a sandbox's surroundings composes the views into the runner's spec from the configuration: the tools, the wrapped servers and sandbox show ask it, so it links none of them, nor the sandbox's implementation, nor the state",
	},
	{
		from: []string{"daemon/egress"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "ns", "inspect", "scrub"},
		why:    "the egress proxy faces the sandbox's traffic: it works on the plain rules and credentials it is handed, and can reach nothing of the daemon's state (its vaults, config, store)",
	},
	{
		from: []string{"daemon/registries"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "ns", "inspect"},
		allow:  []string{"daemon/homeview"},
		why:    "reading the user's toolchain configuration needs the home view's host and its redaction, nothing else of the daemon",
	},
	{
		from: []string{"daemon/mcpwrap"}, deep: true,
		forbid: []string{"daemon/tools/...", "daemon/state", "daemon/store/...", "daemon/embedding/...", "daemon/sandbox", "daemon/scope", "daemon/respond"},
		why:    "the daemon's side of mcp wrap launches a server through the runner's interface with the call's views and filters it with mcp/: it links neither the tools, the state, nor the sandbox's implementation",
	},
	{
		from: []string{"daemon/toolfetch"}, deep: true,
		forbid: []string{"daemon/tools/...", "daemon/state", "daemon/store/...", "daemon/embedding/...", "daemon/sandbox", "daemon/scope", "daemon/respond", "daemon/plugins", "daemon/plugins/pluginrun", "ns"},
		why:    "installing a tool fetches and builds it through the runner's interface with views of its own, then checks and commits what came out against the plugins' policy: it links neither the tools, the state, the plugin runtime nor the sandbox's implementation",
	},
	{
		from: []string{"daemon/plugins/..."}, deep: true,
		forbid: []string{"daemon/tools/...", "daemon/state", "daemon/store/...", "daemon/embedding/...", "daemon/sandbox", "daemon/scope", "daemon/respond"},
		why:    "tool plugins are started through the runner's interface with the spec their caller built: the plugin side links neither the built-in tools, the state, nor the sandbox's implementation",
	},
	{
		from: []string{"daemon/sandbox", "daemon/runner/...", "daemon/scope"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "outline", "salience", "budget"},
		allow:  []string{"daemon/runner/...", "daemon/scope"},
		why:    "the sandbox's host side builds and runs the sandbox from the spec it is handed: it links nothing else of the daemon (tools, state, config) and nothing that runs inside, so what a call may do is decided before the spec reaches it",
	},
	{
		from: []string{"ns", "seccomp", "profiles"}, deep: true,
		forbid: []string{"daemon/...", "proxy/...", "mcp/...", "wire/...", "cmd/...", "inspect"},
		why:    "the sandbox's init and its seccomp programs run before and under the profile: they link nothing of the daemon, the proxy or the protocols",
	},
	{
		from: []string{"daemon/toolfetch/inside", "daemon/toolfetch/toolsrc"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "ns", "inspect"},
		allow:  []string{"daemon/toolfetch/toolsrc"},
		why:    "the fetch of a tool's source runs in its sandbox with go-getter and the safe unpacker: it links nothing of the daemon's, and reads the source as the host does",
	},
	{
		from: []string{"daemon/tools/inside"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "ns", "inspect"},
		allow:  []string{"daemon/tools/toolproto"},
		why:    "the code that runs in a tool's sandbox links only the protocol and the leaves: nothing of the daemon's (its store, config, runner) can be reached from under the seccomp profile",
	},
	{
		from: []string{"daemon/respond", "daemon/pages"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "ns", "seccomp", "profiles", "outline"},
		allow:  []string{"daemon/pages"},
		why:    "respond works on the output it is handed (the second scrub, the budget, the salience pass, the pages kept); a file's outline comes from the sandbox, never from a file the daemon would open",
	},
	{
		from: []string{"daemon/audit", "daemon/logging"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "ns", "seccomp", "profiles"},
		why:    "accounting records what the core hands it: it links nothing of the daemon, so writing a record cannot reach back into a call",
	},

	{
		from: []string{"daemon/webhook"}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "ns", "seccomp", "profiles", "inspect"},
		allow:  []string{"daemon/webhook"},
		why:    "a webhook's signature is checked on the bytes and headers the edge hands over, with the catalog's errors: nothing a sender controls reaches more of the daemon before it verifies",
	},

	{
		from: []string{"daemon/automation/..."}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "wire/...", "proxy/...", "cmd/...", "ns", "seccomp", "profiles", "inspect"},
		allow:  []string{"daemon/automation/...", "daemon/webhook", "daemon/config", "mcp/interceptspec"},
		why:    "an automation's templates and its delivery record sit below the HTTP edge and link only the configuration, the webhook schemes and each other: a payload reaches the runner only as a call the core makes",
	},

	// The shared leaves.
	{
		from: []string{"catalog", "scrub", "budget", "workspace", "peercred", "internal/ids", "internal/sqlitefile", "internal/drain", "internal/nanotime", "internal/syncbuf", "envallow", "toolspec", "sandboxinfo",
			"salience", "outline", "systemd", "toolmanifest", "toolstore", "internal/safeunpack", "internal/bytesize", "toolsearch", "toolsearch/toolbench"}, deep: true,
		forbid: []string{"daemon/...", "proxy/...", "mcp/...", "wire/...", "cmd/...", "ns", "seccomp", "profiles", "inspect"},
		why:    "the shared leaves sit below every layer that uses them",
	},

	// Test harnesses, drivers, generators.
	{
		from: harness, deep: true,
		forbid: []string{"cmd/...", "bench/...", "e2e/...", "packaging/..."},
		why:    "a harness may import what it harnesses (internal/daemontest starts a real daemon with a runner without a sandbox, and holds the inside half for a test binary re-run as the init), but never a binary or a driver",
	},
	{
		from:   []string{"internal/layering"},
		forbid: []string{"..."},
		why:    "this package is its test: its code imports nothing of the module",
	},
	{
		from: []string{"bench/..."}, deep: true,
		forbid: []string{"daemon/...", "mcp/...", "ns", "seccomp", "profiles"},
		why:    "a benchmark measures what a user runs (the binaries, the socket, the protocols), never the daemon's packages in process",
	},
	{
		from: []string{"e2e/..."}, deep: true,
		forbid: []string{"..."},
		allow:  []string{"e2e/..."},
		why:    "the end-to-end suite drives the built binaries as the test user would; its helpers (the probe run in a sandbox, the corpus generator) link nothing of contextd",
	},
	{
		from: []string{"packaging/...", "catalog/gendoc"}, deep: true,
		forbid: []string{"bench/...", "e2e/..."},
		why:    "the generators derive what ships (units, man pages, completions, docs/errors.md) from the shipped code, with no benchmark or test driver linked",
	},
}

// matches reports whether the module-relative package rel matches pattern.
func matches(pattern, rel string) bool {
	switch {
	case pattern == "...":
		return true
	case strings.HasPrefix(pattern, "*"):
		return strings.HasSuffix(path.Base(rel), pattern[1:])
	case strings.HasSuffix(pattern, "/..."):
		dir := strings.TrimSuffix(pattern, "/...")
		return rel == dir || strings.HasPrefix(rel, dir+"/")
	}
	return rel == pattern
}

func matchesAny(patterns []string, rel string) bool {
	for _, p := range patterns {
		if matches(p, rel) {
			return true
		}
	}
	return false
}

// binds reports whether r applies to the package rel.
func (r rule) binds(rel string) bool {
	return matchesAny(r.from, rel) && !matchesAny(r.except, rel)
}

// forbids reports whether r forbids an edge to the package dep.
func (r rule) forbids(dep string) bool {
	return matchesAny(r.forbid, dep) && !matchesAny(r.allow, dep)
}
