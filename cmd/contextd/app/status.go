package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	"github.com/spf13/cobra"

	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/plugins"
	"github.com/contextd/contextd/daemon/sandbox"
	"github.com/contextd/contextd/daemon/store/sqlite"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/proxy/install"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/toolstore"
)

// bytesPerToken turns raw output sizes into token estimates for "tokens
// saved". Counting the raw output exactly would mean tokenizing everything
// the tools ever produced (gigabytes); about 4 bytes per token is what the
// pipeline's vocabulary (cl100k_base) averages on source code and English
// logs, and the report says it is an estimate.
const bytesPerToken = 4

// Report is what `contextd status` shows; --json prints it as is.
type Report struct {
	Daemon  DaemonState  `json:"daemon"`
	Today   Today        `json:"today"`
	Store   StoreState   `json:"store"`
	Sandbox []LayerState `json:"sandbox"`
	Project ProjectState `json:"project"`
	// Tools are the installed plugin tools (contextd tool install).
	Tools []plugins.Health `json:"tools"`
	// ToolsNote says why they could not be listed.
	ToolsNote string `json:"tools_note,omitempty"`
	// Webhooks are the latest deliveries to the automations, newest
	// first; absent when none is configured.
	Webhooks *WebhooksState `json:"webhooks,omitempty"`
	// MCPServed are the servers contextd-proxy mcp serves behind its one
	// endpoint ([mcp.servers.NAME] with a command or url); absent when none.
	MCPServed *MCPServedState `json:"mcp_served,omitempty"`
}

// MCPServedState is the served servers' part of the status.
type MCPServedState struct {
	Servers   []string `json:"servers"`
	Search    string   `json:"search"`
	Threshold int      `json:"threshold"`
}

// WebhooksState is the automations' part of the status.
type WebhooksState struct {
	Automations int            `json:"automations"`
	Deliveries  []DeliveryInfo `json:"deliveries"`
	Note        string         `json:"note,omitempty"`
}

// webhooksShown is how many deliveries status lists; contextd automations
// list shows more.
const webhooksShown = 5

// ProjectState is the current project's agents as install wired them.
type ProjectState struct {
	Root   string               `json:"root,omitempty"`
	Agents []install.AgentState `json:"agents"`
}

// DaemonState is the daemon as systemd (or, without a user manager, the
// socket) sees it.
type DaemonState struct {
	// State is "active", "socket-waiting" (the socket listens, no daemon
	// runs: the next call starts one), "stopped" or "unknown".
	State     string `json:"state"`
	Detail    string `json:"detail,omitempty"`
	PID       int    `json:"pid,omitempty"`
	UptimeSec int64  `json:"uptime_sec,omitempty"`
	Version   string `json:"version,omitempty"`
	InFlight  int    `json:"calls_in_flight,omitempty"`
	// SocketActivated: systemd handed the daemon its socket (as the running
	// daemon says).
	SocketActivated bool   `json:"socket_activated,omitempty"`
	Socket          string `json:"socket"`
}

// Today sums the audit log since local midnight.
type Today struct {
	Since           time.Time `json:"since"`
	Sessions        int       `json:"sessions"`
	Calls           int       `json:"calls"`
	Refused         int       `json:"refused"`
	SecretsRedacted int       `json:"secrets_redacted"`
	RawBytes        int64     `json:"raw_bytes"`
	RawTokensEst    int64     `json:"raw_tokens_estimate"`
	TokensReturned  int64     `json:"tokens_returned"`
	// EgressRefused are today's refused connections through the egress
	// proxy, by host and port, most frequent first.
	EgressRefused []EgressRefusal `json:"egress_refused,omitempty"`
	Note          string          `json:"note,omitempty"`
}

// EgressRefusal is one host:port the egress proxy refused today.
type EgressRefusal struct {
	Host   string   `json:"host"`
	Port   int      `json:"port"`
	Count  int      `json:"count"`
	Tools  []string `json:"tools"`
	Reason string   `json:"reason"` // the last one
	Leak   bool     `json:"leak,omitempty"`
}

// maxRefusalsShown bounds the hosts status lists; --json has them all.
const maxRefusalsShown = 10

func (t *Today) addRefusal(tool string, c sandboxinfo.Connection) {
	for i := range t.EgressRefused {
		r := &t.EgressRefused[i]
		if r.Host == c.Host && r.Port == c.Port {
			r.Count++
			r.Reason, r.Leak = c.Reason, r.Leak || c.Leak
			if !slices.Contains(r.Tools, tool) {
				r.Tools = append(r.Tools, tool)
			}
			return
		}
	}
	t.EgressRefused = append(t.EgressRefused, EgressRefusal{Host: c.Host, Port: c.Port, Count: 1, Tools: []string{tool}, Reason: c.Reason, Leak: c.Leak})
}

// StoreState is where memories and checkpoints live.
type StoreState struct {
	Backend  string `json:"backend"`
	Location string `json:"location"`
	Bytes    int64  `json:"bytes,omitempty"`
	Note     string `json:"note,omitempty"`
}

// LayerState is one check of `contextd doctor`.
type LayerState struct {
	Layer    string `json:"layer"`
	OK       bool   `json:"ok"`
	Required bool   `json:"required"`
	Detail   string `json:"detail"`
	Fix      string `json:"fix,omitempty"` // what to do, for a layer that is not ok
}

// checkMark is how doctor and status mark a check.
func checkMark(ok, required bool) string {
	switch {
	case !ok && required:
		return "FAIL"
	case !ok:
		return "warn"
	}
	return "ok  "
}

func statusCommand() *cobra.Command {
	var socket, cfgPath string
	var asJSON, noSandbox bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show the daemon, today's calls, secrets and tokens saved, the store, the project's agents and the sandbox layers",
		Long: `Show at a glance: whether the daemon runs (or waits on its socket), its pid and uptime;
today's sessions, calls and redacted secrets and the tokens returned against the raw output's
size (from the audit log); the state store; the agents wired in the current project, each
with whether contextd's MCP server is registered and its built-in tools are off; and each sandbox layer as ` + "`contextd doctor`" + ` checks it.
It does not start the daemon: a socket-waiting daemon stays asleep.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if socket == "" {
				socket = client.SocketPath()
			}
			ctx, cancel := context.WithTimeout(c.Context(), 30*time.Second)
			defer cancel()
			r := &Report{Daemon: daemonState(ctx, socket), Today: today(time.Now())}
			if cwd, err := os.Getwd(); err == nil {
				r.Project.Root, r.Project.Agents, _ = install.ProjectAgents(cwd)
			}
			// A configuration that does not load hides only the store (the
			// daemon, the audit and the sandbox are still worth seeing);
			// status then says so and fails with its error.
			cfg, cfgErr := configcheck.Load(cfgPath)
			if cfgErr != nil {
				r.Store = StoreState{Backend: "unknown", Location: "(the configuration did not load)",
					Note: fmt.Sprintf("configuration: %v; fix it (docs/config.md lists every key)", cfgErr)}
			} else {
				r.Store = storeState(cfg)
				r.Tools, r.ToolsNote = pluginTools(cfg)
				if names := cfg.MCP.ServedNames(); len(names) > 0 {
					r.MCPServed = &MCPServedState{Servers: names, Search: cfg.MCP.Search, Threshold: cfg.MCP.SearchThreshold}
				}
				if len(cfg.Automations) > 0 {
					r.Webhooks = &WebhooksState{Automations: len(cfg.Automations)}
					r.Webhooks.Deliveries, r.Webhooks.Note = recentDeliveries(webhooksShown)
				}
			}
			if !noSandbox {
				for _, ch := range sandbox.Diagnose(ctx) {
					l := LayerState{Layer: ch.Layer, OK: ch.OK, Required: ch.Required, Detail: ch.Detail}
					if !ch.OK {
						l.Fix = ch.Fix
					}
					r.Sandbox = append(r.Sandbox, l)
				}
			}
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
				return cfgErr
			}
			r.print(c.OutOrStdout())
			return cfgErr
		},
	}
	c.Flags().StringVar(&socket, "socket", "", "socket path (default $CONTEXTD_SOCKET or $XDG_RUNTIME_DIR/contextd/contextd.sock)")
	c.Flags().StringVar(&cfgPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/contextd/config.toml)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	c.Flags().BoolVar(&noSandbox, "no-sandbox-check", false, "skip the sandbox layer checks (they run a sandbox, ~0.2 s)")
	return c
}

// daemonState asks the user manager about the units, and the daemon itself
// only when it already runs, so that status never socket-activates it.
func daemonState(ctx context.Context, socket string) DaemonState {
	st := DaemonState{State: "unknown", Socket: socket}
	conn, err := sd.NewUserConnectionContext(ctx)
	if err != nil {
		// No user manager: a daemon started by hand may still answer.
		st.Detail = "no systemd user manager answers (" + err.Error() + ")"
		if _, serr := os.Stat(socket); serr != nil {
			st.State = "stopped"
			return st
		}
		askDaemon(ctx, socket, &st)
		return st
	}
	defer conn.Close()
	svc, err := conn.GetUnitPropertiesContext(ctx, "contextd.service")
	if err != nil {
		st.Detail = "contextd.service: " + err.Error()
		return st
	}
	sock, _ := conn.GetUnitPropertiesContext(ctx, "contextd.socket")
	active, _ := svc["ActiveState"].(string)
	sockActive, _ := sock["ActiveState"].(string)
	switch {
	case active == "active" || active == "reloading" || active == "deactivating":
		st.State = "active"
		if pid, ok := svc["MainPID"].(uint32); ok {
			st.PID = int(pid)
		}
		if us, ok := svc["ExecMainStartTimestamp"].(uint64); ok && us > 0 {
			st.UptimeSec = int64(time.Since(time.UnixMicro(int64(us))).Seconds())
		}
		askDaemon(ctx, socket, &st)
	case sockActive == "active":
		st.State = "socket-waiting"
		st.Detail = "contextd.socket listens; the next call starts the daemon"
	default:
		st.State = "stopped"
		st.Detail = "contextd.socket is " + orNone(sockActive) + ": systemctl --user enable --now contextd.socket"
	}
	return st
}

func askDaemon(ctx context.Context, socket string, st *DaemonState) {
	conn, err := client.Dial(socket)
	if err != nil {
		if st.Detail == "" {
			st.Detail = "the daemon does not answer: " + err.Error()
		}
		return
	}
	defer conn.Close()
	s, err := conn.Status(ctx)
	if err != nil {
		st.Detail = "the daemon does not answer: " + err.Error()
		return
	}
	st.State, st.PID, st.Version, st.InFlight = "active", int(s.PID), s.Version, int(s.CallsInFlight)
	st.SocketActivated = s.SocketActivated
	if st.UptimeSec == 0 {
		st.UptimeSec = s.UptimeMS / 1000
	}
}

// today sums today's audit records (local time).
func today(now time.Time) Today {
	y, m, d := now.Date()
	t := Today{Since: time.Date(y, m, d, 0, 0, 0, 0, now.Location())}
	dir, err := audit.DefaultDir()
	if err != nil {
		t.Note = err.Error()
		return t
	}
	sessions := map[string]bool{}
	for e, err := range audit.Read(dir, audit.Filter{Since: t.Since}) {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				t.Note = "no audit log yet"
			} else {
				t.Note = "audit log: " + err.Error() + " (run `contextd audit verify`)"
			}
			continue
		}
		for _, c := range e.Egress {
			if !c.Allowed {
				t.addRefusal(e.Tool, c)
			}
		}
		if e.Kind != audit.KindCall {
			continue
		}
		t.Calls++
		if e.Error != "" {
			t.Refused++
		}
		if e.Session != "" {
			sessions[e.Session] = true
		}
		for _, n := range e.Findings {
			t.SecretsRedacted += n
		}
		t.RawBytes += e.BytesProduced
		t.TokensReturned += int64(e.TokensReturned)
	}
	t.Sessions = len(sessions)
	t.RawTokensEst = t.RawBytes / bytesPerToken
	sort.SliceStable(t.EgressRefused, func(i, j int) bool { return t.EgressRefused[i].Count > t.EgressRefused[j].Count })
	return t
}

func storeState(cfg *config.Config) StoreState {
	s := StoreState{Backend: cfg.Store.Backend}
	switch cfg.Store.Backend {
	case "qdrant":
		s.Location = fmt.Sprintf("%s:%d", cfg.Store.QdrantHost, cfg.Store.QdrantPort)
		s.Note = "memory search: " + embedding.Describe(cfg.Store)
	default:
		p := cfg.Store.Path
		if p == "" {
			var err error
			if p, err = sqlite.DefaultPath(); err != nil {
				s.Note = err.Error()
				return s
			}
		}
		s.Location = p
		if fi, err := os.Stat(p); err == nil {
			s.Bytes = fi.Size()
			if w, err := os.Stat(p + "-wal"); err == nil {
				s.Bytes += w.Size()
			}
		} else {
			s.Note = "not created yet (the first memory or checkpoint creates it)"
		}
		search := "memory search: " + embedding.Describe(cfg.Store)
		if s.Note == "" {
			s.Note = search
		} else {
			s.Note += "; " + search
		}
	}
	return s
}

func (r *Report) print(w io.Writer) {
	d := r.Daemon
	line := d.State
	if d.PID > 0 {
		line += fmt.Sprintf(", pid %d", d.PID)
	}
	if d.UptimeSec > 0 {
		line += ", up " + (time.Duration(d.UptimeSec) * time.Second).String()
	}
	if d.Version != "" {
		line += ", version " + d.Version
	}
	if d.InFlight > 0 {
		line += fmt.Sprintf(", %d call(s) in flight", d.InFlight)
	}
	if d.SocketActivated {
		line += ", socket-activated"
	}
	fmt.Fprintf(w, "daemon:   %s\n", line)
	if d.Detail != "" {
		fmt.Fprintf(w, "          %s\n", d.Detail)
	}
	fmt.Fprintf(w, "socket:   %s\n", d.Socket)
	t := r.Today
	fmt.Fprintf(w, "today:    %d session(s), %d call(s) (%d refused), %d secret(s) redacted\n", t.Sessions, t.Calls, t.Refused, t.SecretsRedacted)
	saved := ""
	if t.RawTokensEst > 0 {
		saved = fmt.Sprintf(": ~%.1f%% saved", 100*float64(max(0, t.RawTokensEst-t.TokensReturned))/float64(t.RawTokensEst))
	}
	fmt.Fprintf(w, "tokens:   %d returned for %s of raw output (~%d tokens)%s\n", t.TokensReturned, human(t.RawBytes), t.RawTokensEst, saved)
	if n := len(t.EgressRefused); n > 0 {
		fmt.Fprintf(w, "egress:   %d host(s) refused today\n", n)
		for i, r := range t.EgressRefused {
			if i == maxRefusalsShown {
				fmt.Fprintf(w, "          ... and %d more (--json, or contextd audit tail)\n", n-i)
				break
			}
			what := "refused"
			if r.Leak {
				what = "leak blocked"
			}
			fmt.Fprintf(w, "          %s %s x%d (%s): %s\n", net.JoinHostPort(r.Host, strconv.Itoa(r.Port)), what, r.Count, strings.Join(r.Tools, ", "), r.Reason)
		}
	}
	if t.Note != "" {
		fmt.Fprintf(w, "          %s\n", t.Note)
	}
	s := r.Store
	loc := s.Location
	if s.Bytes > 0 {
		loc += " (" + human(s.Bytes) + ")"
	}
	fmt.Fprintf(w, "store:    %s at %s\n", s.Backend, loc)
	if s.Note != "" {
		fmt.Fprintf(w, "          %s\n", s.Note)
	}
	if r.Project.Root != "" {
		if len(r.Project.Agents) == 0 {
			fmt.Fprintf(w, "agents:   none wired in %s (contextd-proxy install)\n", r.Project.Root)
		} else {
			fmt.Fprintf(w, "agents:   in %s\n", r.Project.Root)
		}
		for _, a := range r.Project.Agents {
			mcp, off := "MCP registered", "built-ins off"
			if !a.MCP {
				mcp = "MCP NOT registered"
			}
			if !a.BuiltinsOff {
				off = "built-ins ON"
			}
			fmt.Fprintf(w, "  %s  %-9s %s, %s (%s)\n", checkMark(a.MCP && a.BuiltinsOff, false), a.Agent, mcp, off, a.Detail)
		}
	}
	printTools(w, r.Tools, r.ToolsNote)
	if m := r.MCPServed; m != nil {
		how := map[string]string{"on": "found with tool_search", "off": "listed in full", "defer": "listed in full, with tool_search",
			"auto": fmt.Sprintf("found with tool_search past %d tools", m.Threshold)}[m.Search]
		fmt.Fprintf(w, "mcp:      %s served by contextd-proxy mcp, %s ([mcp] search = %q)\n", strings.Join(m.Servers, ", "), how, m.Search)
	}
	if h := r.Webhooks; h != nil {
		fmt.Fprintf(w, "webhooks: %d automation(s), latest deliveries (contextd automations list):\n", h.Automations)
		for _, d := range h.Deliveries {
			fmt.Fprintf(w, "          %s\n", d.line())
		}
		if h.Note != "" {
			fmt.Fprintf(w, "          %s\n", h.Note)
		}
	}
	if len(r.Sandbox) > 0 {
		fmt.Fprintln(w, "sandbox:")
		for _, l := range r.Sandbox {
			fmt.Fprintf(w, "  %s  %-44s %s\n", checkMark(l.OK, l.Required), l.Layer, l.Detail)
			if l.Fix != "" {
				fmt.Fprintf(w, "        fix: %s\n", l.Fix)
			}
		}
	}
}

// pluginTools are the installed plugin tools' health, or why they could
// not be read.
func pluginTools(cfg *config.Config) ([]plugins.Health, string) {
	store, err := toolstore.Default()
	if err == nil {
		var hs []plugins.Health
		if hs, err = plugins.Inspect(store, cfg); err == nil {
			return hs, ""
		}
	}
	return nil, fmt.Sprintf("the tool store cannot be read: %v", err)
}

// printTools lists the installed plugin tools, each with what it may do
// and whether it would start.
func printTools(w io.Writer, hs []plugins.Health, note string) {
	if note != "" {
		fmt.Fprintf(w, "tools:    %s\n", note)
		return
	}
	if len(hs) == 0 {
		fmt.Fprintln(w, "tools:    no plugin tools installed (contextd tool install SOURCE)")
		return
	}
	fmt.Fprintf(w, "tools:    %d plugin tool(s) installed\n", len(hs))
	for _, h := range hs {
		v := h.Version
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(w, "  %s  %-20s %s  %s  (%s)\n", checkMark(h.OK, true), h.Name, v, h.Checksum, h.Source)
		if h.Problem != "" {
			fmt.Fprintf(w, "        problem: %s\n", h.Problem)
		}
		fmt.Fprintf(w, "        may: %s\n", strings.Join(h.Permissions, "; "))
	}
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func orNone(s string) string {
	if s == "" {
		return "not loaded"
	}
	return s
}
