package mcpwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/record"
	"github.com/contextd/contextd/mcp/relay"
	"github.com/contextd/contextd/mcp/transport"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/wire/lite"
	"github.com/contextd/contextd/workspace"
)

// Stores is where wraps keep their records and pins.
type Stores interface {
	record.Store
	record.Loader
	Pins() intercept.PinStore
}

// Deps is what a Wrapper uses of the daemon. Every field is required.
type Deps struct {
	Runner   runner.Runner
	Config   *config.Config
	Log      *slog.Logger
	Scrubber *scrub.Scrubber
	// Vault returns the session's vault, shared with the session's tool
	// calls: a secret has one placeholder in the whole session.
	Vault   func(session string) *scrub.Vault
	Pages   *pages.Store
	Counter *budget.Counter
	// Salience chooses the first page of a tools/call result over budget
	// (failures first, as for safe_bash); nil: head and tail only
	// ([salience] enabled = false).
	Salience *salience.Set
	// Stores opens (once) the record and pin store.
	Stores func(ctx context.Context) (Stores, error)
	// Sandbox builds a server's surroundings as a safe_bash call's (the
	// shield, the home view with its launcher's preset, the egress proxy,
	// the environment, [mcp.servers.NAME]'s paths and limits). Nil: the
	// server is refused (fail closed).
	Sandbox *sandboxenv.Builder
	// RecordGuard writes to the audit log what a wrapped server changed of
	// what git runs on its own, reverted when it ended (nil: logged only).
	RecordGuard func(server, session string, start time.Time, warnings []string)
	// RecordEgress writes a wrapped server's connections through the egress
	// proxy to the audit log when it ends (nil: not recorded).
	RecordEgress func(server, session string, start time.Time, sum netview.Summary)
}

// Wrapper runs wrap sessions and keeps the live ones for inspectors.
type Wrapper struct {
	d Deps

	mu     sync.Mutex
	live   map[string]*session // by record id
	failed map[string]error    // why recent sessions ended early, by record id (for OpWrapEnd)
	fifo   []string            // failed's keys, oldest first
}

// New returns a Wrapper.
func New(d Deps) *Wrapper {
	return &Wrapper{d: d, live: map[string]*session{}, failed: map[string]error{}}
}

// maxFailed bounds the failures kept for wraps that ask after their end.
const maxFailed = 64

// maxNameLen bounds a server name (it keys config, pins and records).
const maxNameLen = 64

// validName reports whether name is a server name: lower-case letters,
// digits, '-', '_', '.'.
func validName(name string) bool {
	if name == "" || len(name) > maxNameLen || name[0] == '.' {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Serve runs one wrap session on conn, for the caller with the given
// session: it launches or reaches the server, answers WrapReady (or an Error
// event), then relays until either side ends. The returned error is for the
// log; the caller has been told what it needs.
func (w *Wrapper) Serve(ctx context.Context, conn net.Conn, req *lite.Wrap, sessionID string) error {
	s, err := w.start(ctx, req, sessionID)
	if err != nil {
		lite.Write(conn, &lite.Event{Error: catalog.ToDetail(err)})
		return err
	}
	defer s.finish(w)
	if err := lite.Write(conn, &lite.Event{Wrap: &lite.WrapReady{Record: s.rec.Session().ID, Session: sessionID,
		Sandbox: s.sandbox, Warnings: s.warnings}}); err != nil {
		return fmt.Errorf("mcp wrap: answer the client: %w", err)
	}
	client := transport.NewStdio(conn, conn, &transport.StdioOptions{MaxMessage: w.d.Config.MCP.MaxMessageBytes})
	err = relay.Run(ctx, client, s.server, &relay.Options{Handler: s, Observer: s, Correlator: s.corr})
	client.Close()
	if f := s.failure(); f != nil && err == nil {
		err = f
	}
	return err
}

// configured returns req with the command or URL of [mcp.servers.NAME]: a
// served server is launched exactly as the configuration says, never as the
// caller says.
func configured(cfg *config.Config, req *lite.Wrap) (*lite.Wrap, error) {
	if len(req.Command) > 0 || req.URL != "" {
		return nil, fmt.Errorf("mcp wrap: a configured server takes its command or url from the configuration only: %w", catalog.ErrBadInput)
	}
	sc, ok := cfg.MCP.Servers[req.Name]
	if !ok || !sc.Served() {
		return nil, fmt.Errorf("mcp wrap: [mcp.servers.%s] has no command or url: %w", req.Name, catalog.ErrConfig)
	}
	r := *req
	r.Command, r.URL, r.SSE = slices.Clone(sc.Command), sc.URL, sc.SSE
	return &r, nil
}

// start builds a session: engine, record, and the server connection.
func (w *Wrapper) start(ctx context.Context, req *lite.Wrap, sessionID string) (*session, error) {
	if !validName(req.Name) {
		return nil, fmt.Errorf("mcp wrap: server name %q: use lower-case letters, digits, '-', '_' and '.' (--name): %w", req.Name, catalog.ErrBadInput)
	}
	cfg := w.d.Config
	if req.Configured {
		r, err := configured(cfg, req)
		if err != nil {
			return nil, err
		}
		req = r
	}
	if (len(req.Command) == 0) == (req.URL == "") {
		return nil, fmt.Errorf("mcp wrap: give a command or a URL: %w", catalog.ErrBadInput)
	}
	sc := cfg.MCP.Server(req.Name)
	stores, err := w.d.Stores(ctx)
	if err != nil {
		return nil, err
	}
	vs := &intercept.VaultScrubber{Scrubber: w.d.Scrubber, Vault: w.d.Vault(sessionID), Source: "mcp:" + req.Name}
	s := &session{name: req.Name, log: w.d.Log.With("mcp_server", req.Name, "session", sessionID), inspectors: map[*inspector]bool{},
		corr: jsonrpc.NewCorrelator(0)}
	eng, err := intercept.New(&intercept.Options{
		Server:   req.Name,
		Config:   &cfg.MCP.Intercept,
		Scrubber: vs,
		Budgeter: &intercept.CounterBudgeter{Counter: w.d.Counter, Tokens: cfg.MCP.MaxTokens,
			Keep: w.keeper(sessionID), Command: "contextd-proxy safe_read", MCPTool: "safe_read", Salience: w.d.Salience},
		Pins:    stores.Pins(),
		OnEvent: s.onHoldEvent,
	})
	if err != nil {
		return nil, err
	}
	s.engine = eng
	target := req.URL
	if target == "" {
		target = strings.Join(req.Command, " ")
	}
	s.target = target
	// The record names the server by its --name and what it runs.
	rec, err := record.Start(ctx, record.Session{Server: req.Name + ": " + target}, &record.Options{Store: stores, Redact: eng.Redact})
	if err != nil {
		return nil, fmt.Errorf("mcp wrap: start the session record: %v: %w", err, catalog.ErrStoreUnavailable)
	}
	s.rec = rec
	if req.URL != "" {
		opts := &transport.HTTPOptions{MaxMessage: cfg.MCP.MaxMessageBytes, Logger: s.log}
		if s.server, err = dialURL(ctx, req, opts, string(eng.Redact([]byte(req.URL)))); err != nil {
			rec.Close()
			return nil, err
		}
	} else {
		place, err := workspace.Find(req.Cwd, cfg.WorkspaceMarkers)
		if err != nil {
			rec.Close()
			return nil, err
		}
		spec := runner.Spec{Path: req.Command[0], Args: req.Command, Dir: req.Cwd}
		after, err := w.views(req, sessionID, place.Root, &spec, s)
		if err != nil {
			rec.Close()
			return nil, err
		}
		if s.proc, err = launch(context.WithoutCancel(ctx), w.d.Runner, spec, s.log, eng.Redact); err != nil {
			after()
			rec.Close()
			return nil, err
		}
		go func(p *process) {
			<-p.done
			after()
		}(s.proc)
		info := &serverInfo{name: req.Name, command: req.Command, cwd: req.Cwd, path: req.Env["PATH"],
			workspace: place.Root, home: spec.Home, config: configFile(cfg), readOnly: sc.ReadOnly, readWrite: sc.ReadWrite,
			egress: s.egressLines}
		proc := s.proc
		s.server = newServerConn(
			transport.NewStdio(s.proc.stdout, s.proc.stdin, &transport.StdioOptions{MaxMessage: cfg.MCP.MaxMessageBytes}),
			proc,
			func() []json.RawMessage { return s.corr.PendingIDs(jsonrpc.ClientToServer) },
			func(unanswered bool) error { return redacted(info.explain(proc, unanswered), eng.Redact) },
			s.fail)
		// What the runner really applied (a profile from disk, a missing
		// user manager), not what it was asked for.
		if l, ok := s.proc.applied(); ok {
			s.sandbox = &l
		}
	}
	w.mu.Lock()
	s.started = rec.Session().Started
	w.live[rec.Session().ID] = s
	w.mu.Unlock()
	s.log.Info("mcp wrap started", "record", rec.Session().ID, "target", eng.Redact([]byte(target)))
	return s, nil
}

// keeper stores a cut tools/call result whole in the page store, so that the
// agent can read the rest with --continue through contextd.
func (w *Wrapper) keeper(sessionID string) func(ctx context.Context, server, tool string, text []byte) (string, error) {
	return func(ctx context.Context, server, tool string, text []byte) (string, error) {
		e, err := w.d.Pages.Create(sessionID, "mcp:"+server+"/"+tool)
		if err != nil {
			return "", err
		}
		if _, err := e.Write(text); err != nil {
			e.Discard()
			return "", err
		}
		return e.Commit(pages.Meta{"tool": "mcp:" + server + "/" + tool})
	}
}

// dialURL reaches a server by URL. The transports check the URL themselves;
// shown is the URL as errors may quote it (scrubbed: a URL can carry a
// token).
func dialURL(ctx context.Context, req *lite.Wrap, opts *transport.HTTPOptions, shown string) (transport.Conn, error) {
	var c transport.Conn
	var err error
	if req.SSE {
		c, err = transport.NewSSE(ctx, req.URL, opts)
	} else {
		c, err = transport.NewStreamableHTTP(req.URL, opts)
	}
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, catalog.ErrUsage):
		return nil, fmt.Errorf("mcp wrap: --url %s: only http:// and https:// URLs with a host: %w", shown, catalog.ErrBadInput)
	default:
		return nil, fmt.Errorf("mcp wrap: connect to %s (SSE; is the server up at that address?): %v: %w", shown, err, catalog.ErrLaunch)
	}
}

// session is one live wrap.
type session struct {
	name, target string
	started      time.Time // when its record began (set before it is live)
	log          *slog.Logger
	engine       *intercept.Engine
	rec          *record.Recorder
	corr         *jsonrpc.Correlator // the relay's
	server       transport.Conn
	proc         *process // nil for a URL
	sandbox      *sandboxinfo.Layers
	warnings     []string
	// egressSofar sums up the server's connections through the egress
	// proxy so far (nil: no proxy).
	egressSofar func() netview.Summary

	mu         sync.Mutex
	failed     error      // why the server ended early
	backlog    []observed // the newest messages, for inspectors that attach
	inspectors map[*inspector]bool
	replays    map[string]bool // ids of requests Replay sent, whose answers stay here
	replaySeq  int
}

// maxBacklog bounds the messages kept for inspectors that attach later (the
// whole session is in the record).
const maxBacklog = 5000

// Handle implements relay.Handler: answers to replayed requests are recorded
// and kept from the client; everything else goes to the engine.
func (s *session) Handle(ctx context.Context, m *jsonrpc.Message) (relay.Verdict, error) {
	if m.Dir == jsonrpc.ServerToClient && (m.Info.Kind == jsonrpc.KindResponse || m.Info.Kind == jsonrpc.KindError) {
		s.mu.Lock()
		own := s.replays[string(m.Info.ID)]
		delete(s.replays, string(m.Info.ID))
		s.mu.Unlock()
		if own {
			return relay.Verdict{Action: relay.Drop, Rule: "replay"}, nil
		}
	}
	return s.engine.Handle(ctx, m)
}

// Observe implements relay.Observer: the record, then the inspectors. The
// message is kept raw for inspectors that attach later and converted (and
// scrubbed) only when one is there to see it: the forward loops do not pay
// for inspectors that never come.
func (s *session) Observe(m *jsonrpc.Message, v relay.Verdict, err error) {
	s.rec.Observe(m, v, err)
	o := observed{m: *m, v: v}
	if err != nil {
		o.err = err.Error()
	}
	s.mu.Lock()
	s.backlog = append(s.backlog, o)
	if len(s.backlog) > maxBacklog {
		s.backlog = append(s.backlog[:0], s.backlog[len(s.backlog)-maxBacklog/2:]...)
	}
	if len(s.inspectors) > 0 {
		im := s.inspectMessage(&o)
		for in := range s.inspectors {
			in.send(lite.InspectEvent{Message: &im})
		}
	}
	s.mu.Unlock()
}

// observed is a message as the relay passed it, kept for inspectors.
type observed struct {
	m   jsonrpc.Message
	v   relay.Verdict
	err string
}

// inspectMessage converts o for an inspector, scrubbed.
func (s *session) inspectMessage(o *observed) lite.InspectMessage {
	m, v := &o.m, o.v
	im := lite.InspectMessage{Seq: m.Seq, Dir: m.Dir.String(), Time: m.Time, Kind: m.Info.Kind.String(),
		ID: string(m.Info.ID), Method: m.Info.Method, Tool: m.Info.Tool, Corr: m.Corr, Action: v.Action.String(), Rule: v.Rule}
	raw := m.Raw
	if v.Action == relay.Modify {
		im.Original = jsonOrString(s.engine.Redact(m.Raw))
		raw = v.Raw
	}
	im.Raw = jsonOrString(s.engine.Redact(raw))
	if o.err != "" {
		im.Action, im.Rule = "blocked", o.err
	}
	return im
}

// onHoldEvent tells the inspectors about held and released messages.
func (s *session) onHoldEvent(e intercept.Event) {
	var ev lite.InspectEvent
	switch e.Type {
	case intercept.EventHeld:
		raw := jsonOrString(s.engine.Redact(e.Held.Raw))
		ev.Message = &lite.InspectMessage{Seq: e.Held.Seq, Dir: e.Held.Dir.String(), Time: e.Held.Since,
			Kind: e.Held.Kind.String(), ID: string(e.Held.ID), Corr: e.Held.Corr, Method: e.Held.Method, Tool: e.Held.Tool,
			Raw: raw, Action: "held"}
	case intercept.EventReleased:
		ev.Decided = e.Held.Seq
	default:
		return
	}
	s.mu.Lock()
	for in := range s.inspectors {
		in.send(ev)
	}
	s.mu.Unlock()
}

// replay sends the client request with seq to the server again under a new
// id; its answer is recorded and not passed to the client.
func (s *session) replay(ctx context.Context, seq uint64) error {
	var raw json.RawMessage
	s.mu.Lock()
	for _, o := range s.backlog {
		if o.m.Seq == seq && o.m.Dir == jsonrpc.ClientToServer {
			raw = o.m.Raw
			if o.v.Action == relay.Modify {
				raw = o.v.Raw
			}
		}
	}
	s.mu.Unlock()
	if raw == nil {
		return fmt.Errorf("replay: no message %d in this session's recent messages: %w", seq, catalog.ErrBadInput)
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msg); err != nil || msg["method"] == nil || msg["id"] == nil {
		return fmt.Errorf("replay: message %d is not a request: %w", seq, catalog.ErrBadInput)
	}
	s.mu.Lock()
	s.replaySeq++
	id, _ := json.Marshal(fmt.Sprintf("contextd-replay-%d", s.replaySeq))
	if s.replays == nil {
		s.replays = map[string]bool{}
	}
	s.replays[string(id)] = true
	s.mu.Unlock()
	msg["id"] = id
	out, _ := json.Marshal(msg)
	return s.server.Write(ctx, out)
}

// fail records why the server ended early: in the record, the log, and
// for the wrap's question after the end (OpWrapEnd).
func (s *session) fail(err error) {
	s.mu.Lock()
	first := s.failed == nil
	if first {
		s.failed = err
	}
	s.mu.Unlock()
	if first {
		s.rec.SetFailure(failureText(err))
		s.log.Warn("mcp wrap: the server ended early", "err", err)
	}
}

// failure is why the server ended early, or nil.
func (s *session) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// configFile is the configuration file a user edits to change c: the one it
// was read from, or the first place contextd looks.
func configFile(c *config.Config) string {
	if c.Source != "" {
		return c.Source
	}
	if p := config.SearchPath(); len(p) > 0 {
		return p[0]
	}
	return "the configuration file"
}

// finish releases held messages, ends the server and the record, and tells
// the inspectors.
func (s *session) finish(w *Wrapper) {
	s.engine.ReleaseAll()
	s.server.Close()
	if s.proc != nil {
		ex, err := s.proc.stop()
		s.log.Info("mcp wrap server ended", "exit", ex.Code, "err", err)
	}
	if err := s.rec.Close(); err != nil {
		s.log.Warn("mcp wrap: session record", "err", err)
	}
	id := s.rec.Session().ID
	w.mu.Lock()
	delete(w.live, id)
	if f := s.failure(); f != nil {
		w.failed[id] = f
		w.fifo = append(w.fifo, id)
		if len(w.fifo) > maxFailed {
			delete(w.failed, w.fifo[0])
			w.fifo = w.fifo[1:]
		}
	}
	w.mu.Unlock()
	s.mu.Lock()
	for in := range s.inspectors {
		in.send(lite.InspectEvent{Ended: true})
		in.close()
	}
	s.inspectors = map[*inspector]bool{}
	s.mu.Unlock()
}

// lookup finds a live session (the newest for "").
func (w *Wrapper) lookup(id string) (*session, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id == "" {
		// The newest of those still running: one that ended is not a
		// default, and an older one still running is.
		var at time.Time
		for k, s := range w.live {
			if st := s.started; id == "" || st.After(at) {
				id, at = k, st
			}
		}
	}
	s, ok := w.live[id]
	if !ok {
		if id == "" {
			return nil, fmt.Errorf("no mcp wrap session is running (start one with contextd-proxy mcp wrap): %w", catalog.ErrNoRecord)
		}
		return nil, fmt.Errorf("no running mcp wrap session %q (contextd mcp sessions list shows recorded ones): %w", id, catalog.ErrNoRecord)
	}
	return s, nil
}

// jsonOrString is b as a JSON value for an inspector: itself when it is
// JSON, else (a message that failed to parse) a JSON string of it.
func jsonOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	out, _ := json.Marshal(string(b))
	return out
}

func jsonValid(b []byte) bool { return len(b) > 0 && json.Valid(b) }

// views builds what a server's sandbox shows of the workspace, of $HOME
// and of the network into spec (sandboxenv: a Server), and holds the git
// guard's fingerprint for the server's life. after, called once the server
// has ended, puts back what it changed of what git runs on its own, stops
// the proxy (logging and recording what went through it) and gives the
// rest back.
func (w *Wrapper) views(req *lite.Wrap, sessionID, root string, spec *runner.Spec, s *session) (after func(), err error) {
	if w.d.Sandbox == nil {
		return nil, fmt.Errorf("mcp wrap: no protection of the workspace's host-run paths: %w", catalog.ErrSandbox)
	}
	sb, err := w.d.Sandbox.Build(sandboxenv.Request{Kind: sandboxenv.Server, Name: req.Name, Workspace: root, Session: sessionID,
		CallerEnv: req.Env, Vault: w.d.Vault(sessionID), Scrubber: w.d.Scrubber, Launcher: req.Command[0]})
	if err != nil {
		sb.Release(nil)
		return nil, fmt.Errorf("mcp wrap: %w", err)
	}
	snap, err := gitguard.TakeLayout(root, sb.Git)
	if err != nil {
		sb.Release(nil)
		return nil, fmt.Errorf("mcp wrap: %w", err)
	}
	sb.Apply(spec)
	spec.Env = sb.Vars
	s.warnings = append(s.warnings, sb.Warnings...)
	if n := sb.Net(); n != nil {
		s.egressSofar = n.Sofar
	}
	started := time.Now()
	return func() {
		if sum := sb.Finish(); sum != nil {
			if len(sum.Lines) > 0 {
				s.log.Warn("mcp wrap: egress refused", "lines", sum.Lines)
			}
			if w.d.RecordEgress != nil && len(sum.Connections) > 0 {
				w.d.RecordEgress(req.Name, sessionID, started, *sum)
			}
		}
		rep := snap.Check(gitguard.DefaultDir())
		ws := rep.Warnings()
		if err := rep.Err(); err != nil {
			ws = append(ws, err.Error())
		}
		sb.Release(nil)
		if len(ws) == 0 {
			return
		}
		// The session is over: the log and the audit record are where
		// the server's plants are named.
		s.log.Warn("mcp wrap: the server changed what git runs on its own", "server", req.Name, "warnings", ws)
		if w.d.RecordGuard != nil {
			w.d.RecordGuard(req.Name, sessionID, started, ws)
		}
	}, nil
}

// egressLines are the refusals of the server's connections so far.
func (s *session) egressLines() []string {
	if s.egressSofar == nil {
		return nil
	}
	return s.egressSofar().Lines
}
