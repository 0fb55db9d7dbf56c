// Package config loads contextd's TOML configuration into plain structs and checks what needs no feature to check (types, ranges, absolute paths, unknown keys); each feature compiles its own section (daemon/configcheck runs them all at load). Every key has a default that works with no file at all; docs/config.md and packaging/config.example.toml document each one.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/bytesize"
	"github.com/contextd/contextd/mcp/interceptspec"
)

// Duration is a time.Duration written as a Go duration string ("90s", "10m").
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (examples: \"90s\", \"10m\", \"1h\")", b)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", b)
	}
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Size is a number of bytes, written as an integer or with a unit: "512MiB",
// "1GiB", "64M" (binary units: K/M/G/T, with or without "iB").
type Size uint64

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Size) UnmarshalText(b []byte) error {
	n, err := bytesize.Parse(string(b))
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (s Size) MarshalText() ([]byte, error) { return []byte(strconv.FormatUint(uint64(s), 10)), nil }

// Config is the whole configuration. Zero values are replaced by the defaults in
// Default; see docs/config.md.
type Config struct {
	// Socket is the path the daemon binds when not socket-activated, and the path
	// the proxy connects to. Default: $XDG_RUNTIME_DIR/contextd/contextd.sock.
	Socket string `toml:"socket"`
	// IdleTimeout: the daemon exits after this long without a call in flight, and
	// socket activation starts it again on the next call. "0s" never exits.
	IdleTimeout Duration `toml:"idle_timeout"`
	// DrainTimeout: on SIGTERM, calls in flight get this long to finish before they
	// are cancelled (their commands killed) and reported as CTXD-E014.
	DrainTimeout Duration `toml:"drain_timeout"`
	// AllowedUIDs are other users allowed through the peer check. Empty: only the
	// daemon's own uid.
	AllowedUIDs []uint32 `toml:"allowed_uids"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
	// MaxRequestBytes bounds one request (a safe_write's content travels in it).
	MaxRequestBytes int `toml:"max_request_bytes"`
	// WorkspaceMarkers: the workspace of a call is the nearest ancestor of its
	// working directory holding one of these names; without one, the working
	// directory itself.
	WorkspaceMarkers []string `toml:"workspace_markers"`

	Tools Tools `toml:"tools"`
	// Home is what a sandboxed call sees of $HOME (daemon/homeview).
	Home  Home  `toml:"home"`
	Scrub Scrub `toml:"scrub"`
	Pages Pages `toml:"pages"`
	Audit Audit `toml:"audit"`
	Store Store `toml:"store"`
	// Budgets are the response budgets (tokens) of the tools that run in the
	// daemon (memory_*, checkpoint_*, branch, return); the sandboxed tools
	// have theirs in [tools.<tool>] max_tokens.
	Budgets map[string]int `toml:"budgets"`
	Branch  Branch         `toml:"branch"`
	// Hook is read by `contextd-proxy hook` (Claude Code's PreToolUse hook);
	// the daemon only accepts the table.
	Hook Hook `toml:"hook"`
	// MCP configures the firewall in front of third-party MCP servers.
	MCP MCP `toml:"mcp"`
	// Cache configures the layers over the user's toolchain caches.
	Cache Cache `toml:"cache"`
	// Egress configures the egress proxy (what a sandboxed program may
	// reach beyond its own loopback).
	Egress Egress `toml:"egress"`
	// Salience decides what the first page of a long output shows.
	Salience Salience `toml:"salience"`
	// Plugins bounds the plugin tools (contextd tool install).
	Plugins Plugins `toml:"plugins"`
	// HTTP configures the HTTP API's listeners and request bounds.
	HTTP HTTP `toml:"http"`
	// Automations are the webhooks that start sandboxed calls
	// (POST /v1/hooks/NAME), one [[automations]] table each.
	Automations []Automation `toml:"automations"`

	// Source is the file the configuration was read from ("" for defaults only).
	Source string `toml:"-"`
}

// Home chooses what a sandboxed call sees of the user's home besides the
// workspace: the presets of daemon/homeview (git, go, node, python, rust,
// java) and the directories the caller's PATH reaches, read-only.
type Home struct {
	// PresetsOff names presets not applied (homeview checks the names).
	PresetsOff []string `toml:"presets_off"`
	// ReadOnly are extra paths shown read-only in every call ("~/x" allowed).
	ReadOnly []string `toml:"read_only"`
}

// Tools holds per-tool settings.
type Tools struct {
	SafeBash  SafeBash `toml:"safe_bash"`
	SafeRead  Sandbox  `toml:"safe_read"`
	SafeWrite Sandbox  `toml:"safe_write"`
	// FileTimeout bounds one safe_read or safe_write.
	FileTimeout Duration `toml:"file_timeout"`
}

// Sandbox returns the sandbox settings of tool (defaults for an unknown one).
func (t *Tools) Sandbox(tool string) Sandbox {
	switch tool {
	case "safe_bash":
		return t.SafeBash.Sandbox
	case "safe_read":
		return t.SafeRead
	case "safe_write":
		return t.SafeWrite
	}
	return defaultSandbox()
}

// Sandbox is what a tool's sandbox may use. Memory, tasks and CPU bound the whole
// call (its systemd scope); paths are host paths shown at their own place.
type Sandbox struct {
	// MemoryMax bounds the memory of the call ("1GiB", "512MiB", or bytes).
	MemoryMax Size `toml:"memory_max"`
	// TasksMax bounds processes and threads of the call.
	TasksMax uint64 `toml:"tasks_max"`
	// CPUQuotaPercent: 100 = one core; 0 = no quota. Applied where the user
	// manager has the cpu controller.
	CPUQuotaPercent int `toml:"cpu_quota_percent"`
	// ReadOnly are extra host paths visible read-only (the system directories
	// /usr /bin /sbin /lib* /etc always are).
	ReadOnly []string `toml:"read_only"`
	// ReadWrite are extra host paths visible read-write besides the workspace
	// (for example a build cache).
	ReadWrite []string `toml:"read_write"`
	// MaxTokens is the tool's response budget, counted with the cl100k_base
	// tokenizer; a call may ask for less (max_tokens), never more. Output
	// beyond it is left out of the response and paged with --continue.
	MaxTokens int `toml:"max_tokens"`
}

// DefaultMaxTokens is every tool's default response budget (search-like tools,
// when there are any, default to 500).
const DefaultMaxTokens = 2000

func defaultSandbox() Sandbox {
	return Sandbox{MemoryMax: 1 << 30, TasksMax: 512, ReadOnly: []string{}, ReadWrite: []string{}, MaxTokens: DefaultMaxTokens}
}

// DefaultBudgets are the daemon-side tools' response budgets: search-like
// answers (lists of references) 500 tokens; checkpoint_restore room for its
// context level (at most 3,000 tokens) with the summary and a header.
var DefaultBudgets = map[string]int{
	"memory_search": 500, "checkpoint_list": 500,
	"memory_store": 500, "memory_feedback": 500, "checkpoint_save": 500, "branch": 500,
	"memory_get": DefaultMaxTokens, "return": DefaultMaxTokens,
	"checkpoint_restore": 3500,
}

// MaxTokens is tool's response budget.
func (c *Config) MaxTokens(tool string) int {
	switch tool {
	case "safe_bash", "safe_read", "safe_write":
		return c.Tools.Sandbox(tool).MaxTokens
	}
	if n, ok := c.Budgets[tool]; ok {
		return n
	}
	if n, ok := DefaultBudgets[tool]; ok {
		return n
	}
	return DefaultMaxTokens
}

// Store chooses where memories, checkpoints and branches are kept.
type Store struct {
	// Backend is "sqlite" (one file on this machine, no server) or "qdrant"
	// (a Qdrant server, to share memories across machines or a team).
	Backend string `toml:"backend"`
	// Path of the SQLite file. Empty: $XDG_DATA_HOME/contextd/state.db
	// (~/.local/share/contextd/state.db).
	Path string `toml:"path"`
	// QdrantHost and QdrantPort: the server's gRPC endpoint.
	QdrantHost string `toml:"qdrant_host"`
	QdrantPort int    `toml:"qdrant_port"`
	// QdrantTLS connects with TLS.
	QdrantTLS bool `toml:"qdrant_tls"`
	// QdrantAPIKeyEnv names the environment variable (of the daemon) holding
	// the API key, so the key need not be written in this file.
	QdrantAPIKeyEnv string `toml:"qdrant_api_key_env"`
	// CollectionPrefix starts the names of contextd's collections.
	CollectionPrefix string `toml:"collection_prefix"`

	// EmbedAPI names the protocol of an embedding endpoint that gives
	// memories dense vectors, fused with the lexical ranking: "ollama"
	// (POST /api/embed) or "openai" (an OpenAI-compatible POST
	// /v1/embeddings). Empty: none, search is lexical only and contextd
	// makes no network call for it.
	EmbedAPI string `toml:"embed_api"`
	// EmbedURL is the endpoint's base URL (http or https, no credentials).
	// Empty with "ollama": http://localhost:11434; "openai" needs one.
	EmbedURL string `toml:"embed_url"`
	// EmbedModel is the embedding model's name; required with EmbedAPI.
	EmbedModel string `toml:"embed_model"`
	// EmbedAPIKeyEnv names the environment variable (of the daemon) holding
	// the endpoint's API key, sent as a bearer token; the key itself is never
	// written in this file. Empty: no key.
	EmbedAPIKeyEnv string `toml:"embed_api_key_env"`
	// EmbedTimeout bounds one request to the endpoint; a slower answer
	// leaves that memory (or that search) lexical.
	EmbedTimeout Duration `toml:"embed_timeout"`
}

// Protocols of Store.EmbedAPI.
const (
	EmbedNone   = ""
	EmbedOllama = "ollama"
	EmbedOpenAI = "openai"
)

// MaxEmbedTimeout bounds store.embed_timeout: a memory call waits that long
// at most for its embedding.
const MaxEmbedTimeout = time.Minute

// Hook configures `contextd-proxy hook`.
type Hook struct {
	// Blocked are the agent's built-in tools the hook refuses (the default
	// is proxy/hook's DefaultBlocked). contextd's own tools are never
	// refused.
	Blocked []string `toml:"blocked"`
}

// Branch configures context folding (branch / return).
type Branch struct {
	// DefaultBudget: tokens the responses inside a branch may cost, when the
	// branch call gives none.
	DefaultBudget int `toml:"default_budget"`
	// SummaryMaxTokens bounds the summary return hands back.
	SummaryMaxTokens int `toml:"summary_max_tokens"`
}

// Scrub configures the secret scrubbing of every result.
type Scrub struct {
	// GitleaksConfig is a gitleaks configuration file (gitleaks' own TOML
	// format) whose rules and allowlists are added to gitleaks' default rules
	// and contextd's own. Empty: $XDG_CONFIG_HOME/contextd/gitleaks.toml if it
	// exists. A workspace's .gitleaks.toml is not read: a repository must not
	// be able to weaken the scrubbing of its own output.
	GitleaksConfig string `toml:"gitleaks_config"`
}

// Pages configures the stored output that continuation pages are cut from
// (under $XDG_STATE_HOME/contextd/pages).
type Pages struct {
	// TTL: a stored output is deleted this long after it was stored.
	TTL Duration `toml:"ttl"`
	// MaxTotal bounds all stored outputs together; the oldest go first.
	MaxTotal Size `toml:"max_total"`
}

// Audit configures the audit log (under $XDG_STATE_HOME/contextd/audit).
type Audit struct {
	// MaxFileSize: the current file is rotated when it grows past this.
	MaxFileSize Size `toml:"max_file_size"`
}

// SafeBash configures safe_bash.
type SafeBash struct {
	Sandbox
	// AllowNetwork lets a call ask for the host network ("network": true, or
	// --network), for package installs and the like. Off: every command sees
	// only its own loopback.
	AllowNetwork bool `toml:"allow_network"`
	// EgressAllow are egress rules for safe_bash's commands only, on top of
	// [egress] allow and the registries.
	EgressAllow []string `toml:"egress_allow"`
	// Env names more of the caller's variables a command may see, besides
	// PATH, LANG, LC_*, TERM, TZ, COLORTERM, NO_COLOR. A variable whose name or
	// value looks like a credential is never passed, listed or not.
	Env []string `toml:"env"`
	// Shell runs the command as `Shell -c COMMAND`.
	Shell string `toml:"shell"`
	// DefaultTimeout applies when a call gives none.
	DefaultTimeout Duration `toml:"default_timeout"`
	// MaxTimeout is the most a call may ask for.
	MaxTimeout Duration `toml:"max_timeout"`
}

// Default returns the configuration used when no file sets a key.
func Default() *Config {
	return &Config{
		IdleTimeout:      Duration{10 * time.Minute},
		DrainTimeout:     Duration{30 * time.Second},
		AllowedUIDs:      []uint32{},
		LogLevel:         "info",
		MaxRequestBytes:  64 << 20,
		Home:             Home{PresetsOff: []string{}, ReadOnly: []string{}},
		WorkspaceMarkers: []string{".git"},
		Tools: Tools{
			SafeBash: SafeBash{
				Sandbox:        defaultSandbox(),
				Env:            []string{},
				EgressAllow:    []string{},
				Shell:          "/bin/bash",
				DefaultTimeout: Duration{120 * time.Second},
				MaxTimeout:     Duration{10 * time.Minute},
			},
			SafeRead:    Sandbox{MemoryMax: 512 << 20, TasksMax: 64, ReadOnly: []string{}, ReadWrite: []string{}, MaxTokens: DefaultMaxTokens},
			SafeWrite:   Sandbox{MemoryMax: 512 << 20, TasksMax: 64, ReadOnly: []string{}, ReadWrite: []string{}, MaxTokens: DefaultMaxTokens},
			FileTimeout: Duration{60 * time.Second},
		},
		Pages:    Pages{TTL: Duration{time.Hour}, MaxTotal: 512 << 20},
		Audit:    Audit{MaxFileSize: 16 << 20},
		Store:    Store{Backend: "sqlite", QdrantHost: "localhost", QdrantPort: 6334, CollectionPrefix: "contextd_", EmbedTimeout: Duration{5 * time.Second}},
		Budgets:  maps.Clone(DefaultBudgets),
		Branch:   Branch{DefaultBudget: 8192, SummaryMaxTokens: 500},
		Hook:     Hook{Blocked: []string{"Bash", "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Grep", "Glob"}},
		MCP:      defaultMCP(),
		Cache:    defaultCache(),
		Egress:   defaultEgress(),
		Salience: defaultSalience(),
		Plugins:  defaultPlugins(),
		HTTP:     defaultHTTP(),

		Automations: []Automation{},
	}
}

// SearchPath is where Load looks, in order; the first file that exists is used,
// alone (files are not merged). XDG_CONFIG_HOME defaults to ~/.config.
func SearchPath() []string {
	var paths []string
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		paths = append(paths, filepath.Join(x, "contextd", "config.toml"))
	} else if h, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(h, ".config", "contextd", "config.toml"))
	}
	return append(paths, "/etc/contextd/config.toml")
}

// Load reads the configuration. With explicit set, that file must exist; otherwise
// the first file of SearchPath that exists is read, and none at all means defaults.
func Load(explicit string) (*Config, error) {
	if explicit != "" {
		return LoadFile(explicit)
	}
	for _, p := range SearchPath() {
		if _, err := os.Stat(p); err == nil {
			return LoadFile(p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("config %s: %w: %v", p, catalog.ErrConfig, err)
		}
	}
	return Default(), nil
}

// LoadFile reads one file on top of the defaults.
func LoadFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w: %v", path, catalog.ErrConfig, err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Source = path
	return c, nil
}

// Parse decodes TOML on top of the defaults. Unknown keys are errors, so a typo does
// not silently leave a default in force. The sections a feature compiles (egress
// and salience rules, [mcp.intercept], presets and the deny-list) are only decoded
// here: configcheck.Check compiles them.
func Parse(b []byte) (*Config, error) {
	c := Default()
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", catalog.ErrConfig, err)
	}
	if slices.ContainsFunc(md.Undecoded(), func(k toml.Key) bool { return k.String() == "automations.secret" }) {
		return nil, fmt.Errorf("%w: automations.secret: a secret is never written in the configuration; put it in a file only you can read (chmod 600) and name that file with secret_file", catalog.ErrConfig)
	}
	if keys := unknownKeys(md); len(keys) > 0 {
		return nil, fmt.Errorf("%w: unknown key(s) %s", catalog.ErrConfig, strings.Join(keys, ", "))
	}
	c.fillAutomations()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", catalog.ErrConfig, err)
	}
	return c, nil
}

func (c *Config) validate() error {
	if _, err := c.SlogLevel(); err != nil {
		return err
	}
	if c.MaxRequestBytes < 1<<20 {
		return fmt.Errorf("max_request_bytes = %d: must be at least 1048576 (1 MiB)", c.MaxRequestBytes)
	}
	for _, tool := range []string{"safe_bash", "safe_read", "safe_write"} {
		if n := c.Tools.Sandbox(tool).MaxTokens; n < 100 {
			return fmt.Errorf("tools.%s.max_tokens = %d: must be at least 100", tool, n)
		}
	}
	for tool, n := range c.Budgets {
		if _, ok := DefaultBudgets[tool]; !ok {
			return fmt.Errorf("budgets.%s: no such daemon-side tool (the sandboxed tools take [tools.<tool>] max_tokens)", tool)
		}
		if n < 100 {
			return fmt.Errorf("budgets.%s = %d: must be at least 100", tool, n)
		}
	}
	switch c.Store.Backend {
	case "sqlite", "qdrant":
	default:
		return fmt.Errorf("store.backend = %q: must be \"sqlite\" or \"qdrant\"", c.Store.Backend)
	}
	if c.Store.Backend == "qdrant" && (c.Store.QdrantHost == "" || c.Store.QdrantPort <= 0 || c.Store.QdrantPort > 65535) {
		return fmt.Errorf("store.qdrant_host/qdrant_port: %q:%d is not an address", c.Store.QdrantHost, c.Store.QdrantPort)
	}
	if err := c.Store.validateEmbed(); err != nil {
		return err
	}
	if err := c.MCP.validate(); err != nil {
		return err
	}
	if err := c.Plugins.validate(); err != nil {
		return err
	}
	if err := c.HTTP.validate(); err != nil {
		return err
	}
	if err := c.validateAutomations(); err != nil {
		return err
	}
	if err := c.Cache.validate(); err != nil {
		return err
	}
	if err := c.Egress.validate(); err != nil {
		return err
	}
	if c.Branch.DefaultBudget < 100 || c.Branch.SummaryMaxTokens < 50 {
		return fmt.Errorf("branch.default_budget (%d) must be at least 100 and branch.summary_max_tokens (%d) at least 50", c.Branch.DefaultBudget, c.Branch.SummaryMaxTokens)
	}
	if c.Pages.TTL.Duration <= 0 {
		return fmt.Errorf("pages.ttl = %s: must be positive", c.Pages.TTL)
	}
	sb := c.Tools.SafeBash
	if !filepath.IsAbs(sb.Shell) {
		return fmt.Errorf("tools.safe_bash.shell = %q: must be an absolute path", sb.Shell)
	}
	if sb.DefaultTimeout.Duration <= 0 || sb.MaxTimeout.Duration <= 0 {
		return errors.New("tools.safe_bash timeouts must be positive")
	}
	if sb.DefaultTimeout.Duration > sb.MaxTimeout.Duration {
		return fmt.Errorf("tools.safe_bash.default_timeout (%s) is above max_timeout (%s)", sb.DefaultTimeout, sb.MaxTimeout)
	}
	for name, box := range map[string]Sandbox{"safe_bash": sb.Sandbox, "safe_read": c.Tools.SafeRead, "safe_write": c.Tools.SafeWrite} {
		if box.MemoryMax < 16<<20 {
			return fmt.Errorf("tools.%s.memory_max = %d: at least 16MiB", name, box.MemoryMax)
		}
		if box.TasksMax < 8 {
			return fmt.Errorf("tools.%s.tasks_max = %d: at least 8", name, box.TasksMax)
		}
		if box.CPUQuotaPercent < 0 {
			return fmt.Errorf("tools.%s.cpu_quota_percent is negative", name)
		}
		for _, p := range append(append([]string{}, box.ReadOnly...), box.ReadWrite...) {
			if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
				return fmt.Errorf("tools.%s: path %q must be absolute and not /", name, p)
			}
		}
	}
	for _, p := range c.Home.ReadOnly {
		if !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
			return fmt.Errorf("home.read_only: %q must be absolute or start with ~/", p)
		}
	}
	if c.Tools.FileTimeout.Duration <= 0 {
		return errors.New("tools.file_timeout must be positive")
	}
	for _, m := range c.WorkspaceMarkers {
		if m == "" || strings.ContainsRune(m, '/') {
			return fmt.Errorf("workspace_markers: %q must be a plain file name", m)
		}
	}
	return nil
}

// PathList is one configured list of host paths a sandbox shows, with the
// key it is written under.
type PathList struct {
	Key   string
	Paths []string
}

// ShownPaths lists every configured list of host paths a sandbox shows, in
// a fixed order (the tools, [home], the MCP servers by name), so that a
// check of them (the credential deny-list, daemon/homeview) names the same
// key every time.
func (c *Config) ShownPaths() []PathList {
	var out []PathList
	for _, tool := range []string{"safe_bash", "safe_read", "safe_write"} {
		box := c.Tools.Sandbox(tool)
		out = append(out, PathList{"tools." + tool + ".read_only", box.ReadOnly}, PathList{"tools." + tool + ".read_write", box.ReadWrite})
	}
	out = append(out, PathList{"home.read_only", c.Home.ReadOnly})
	for _, name := range slices.Sorted(maps.Keys(c.MCP.Servers)) {
		srv := c.MCP.Servers[name]
		out = append(out, PathList{"mcp.servers." + name + ".read_only", srv.ReadOnly}, PathList{"mcp.servers." + name + ".read_write", srv.ReadWrite})
	}
	return out
}

// SlogLevel maps log_level to a slog level.
func (c *Config) SlogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return 0, fmt.Errorf("log_level = %q: use debug, info, warn or error", c.LogLevel)
	}
	return l, nil
}

// unknownKeys lists the keys of the file that no setting took. A table given
// as a rule's value ([mcp.intercept] rules' set.value, when.equals) or in an
// automation's input is data, decoded as a whole: its own keys are not
// unknown.
func unknownKeys(md toml.MetaData) []string {
	var keys []string
	for _, k := range md.Undecoded() {
		if len(k) > 2 && k[0] == "mcp" && k[1] == "intercept" && interceptspec.IsDataKey(k[2:]) {
			continue
		}
		if len(k) > 2 && k[0] == "automations" && k[1] == "input" {
			continue
		}
		keys = append(keys, k.String())
	}
	return keys
}
