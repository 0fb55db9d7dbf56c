package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/mcpwrap"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/store/sqlite"
	mcpstore "github.com/contextd/contextd/mcp/store"
	"github.com/contextd/contextd/wire/lite"
)

// setupMCP builds the wrapper of `mcp wrap` sessions (after the responder:
// it shares the scrubber, the vaults, the page store and the counter).
func (s *service) setupMCP(cfg *config.Config) {
	s.embedder = embedding.FromConfig(cfg.Store)
	s.mcp = mcpwrap.New(mcpwrap.Deps{
		Runner:   s.opts.Runner,
		Config:   cfg,
		Log:      s.opts.Logger,
		Scrubber: s.resp.scrubber,
		Vault:    s.resp.vaults.get,
		Pages:    s.resp.pages,
		Counter:  s.resp.counter,
		Salience: s.resp.salience, // nil when [salience] enabled = false
		Stores:   s.mcpStores,
		Sandbox:  s.sandbox,
		RecordGuard: func(server, session string, start time.Time, warnings []string) {
			s.appendAudit(&audit.Record{Kind: audit.KindGitGuard, Time: start.UTC(), Tool: "mcp:" + server, Session: session,
				DurationMS: time.Since(start).Milliseconds(), Warnings: warnings})
		},
		RecordEgress: func(server, session string, start time.Time, sum netview.Summary) {
			// The server's network and its connections; the lines for a
			// caller went to the daemon's log (mcpwrap), and are not the
			// record's.
			s.appendAudit(&audit.Record{Kind: audit.KindEgress, Time: start.UTC(), Tool: "mcp:" + server, Session: session,
				DurationMS: time.Since(start).Milliseconds(), Sandbox: audit.Sandbox{EgressRules: sum.RulesFrom},
				Egress: sum.Connections})
		},
	})
}

// mcpStores is where wraps keep records and pins (package mcp/store), opened
// on first use and kept until the daemon exits; a failed open is tried again
// on the next wrap.
func (s *service) mcpStores(ctx context.Context) (mcpwrap.Stores, error) {
	s.mcpStore.mu.Lock()
	defer s.mcpStore.mu.Unlock()
	if s.mcpStore.st != nil {
		return s.mcpStore.st, nil
	}
	path, err := s.mcpPath(ctx)
	if err != nil {
		return nil, err
	}
	st, err := mcpstore.Open(&mcpstore.Options{Path: path})
	if err != nil {
		return nil, fmt.Errorf("mcp records at %s: %v: %w", path, err, catalog.ErrStoreUnavailable)
	}
	s.mcpStore.st = st
	return st, nil
}

// mcpPath is the file that holds the MCP tables: the state file when the
// state store is the embedded one, where they have always been; with Qdrant
// as the state store, an SQLite file of their own next to where the
// embedded one would be (records are local history, not shared knowledge).
func (s *service) mcpPath(ctx context.Context) (string, error) {
	if s.opts.Config.Store.Backend == "sqlite" {
		// The state store opens first, so that only the daemon that holds
		// the state file writes the MCP tables in it: with the file held
		// elsewhere, a wrap fails as a memory call does.
		st, err := s.stateStore(ctx)
		if err != nil {
			return "", err
		}
		if sq, ok := st.(*sqlite.Store); ok {
			return sq.Path(), nil
		}
	}
	// With Qdrant the state store is not even opened: a server that is
	// down would hold up every wrap and admin request for nothing.
	p, err := sqlite.DefaultPath()
	if err != nil {
		return "", fmt.Errorf("mcp records: %v: %w", err, catalog.ErrStoreUnavailable)
	}
	return filepath.Join(filepath.Dir(p), "mcp.db"), nil
}

type mcpStore struct {
	mu sync.Mutex
	st *mcpstore.Store
}

func (s *service) closeMCP() {
	s.mcpStore.mu.Lock()
	defer s.mcpStore.mu.Unlock()
	if s.mcpStore.st != nil {
		s.mcpStore.st.Close()
		s.mcpStore.st = nil
	}
}

// serveWrap runs one `mcp wrap` connection. The session counts as a call in
// flight for as long as it lasts, so the daemon does not exit idle under it;
// stopping the daemon ends it like any call.
func (s *service) serveWrap(conn net.Conn, req *lite.Wrap, cred peer.Cred) {
	s.begin()
	defer s.end()
	log := s.opts.Logger.With("peer_pid", cred.PID, "peer_uid", cred.UID)
	sess, err := sessionOf(Call{Session: req.Session}, cred)
	if err != nil {
		lite.Write(conn, &lite.Event{Error: catalog.ToDetail(err)})
		return
	}
	ctx, cancel := context.WithCancelCause(peer.NewContext(context.Background(), cred))
	defer cancel(nil)
	stop := context.AfterFunc(s.callsCtx, func() { cancel(context.Cause(s.callsCtx)) })
	defer stop()
	if err := s.mcp.Serve(ctx, conn, req, sess); err != nil {
		log.Info("mcp wrap ended", "server", req.Name, "err", s.resp.redact(err))
		return
	}
	log.Info("mcp wrap ended", "server", req.Name)
}

// serveInspect attaches an inspector to a live wrap session.
func (s *service) serveInspect(conn net.Conn, req *lite.Inspect, cred peer.Cred) {
	ctx, cancel := context.WithCancel(peer.NewContext(context.Background(), cred))
	defer cancel()
	stop := context.AfterFunc(s.callsCtx, func() { conn.Close() })
	defer stop()
	s.mcp.Inspect(ctx, conn, req)
}

// serveAdmin answers one request of contextd's command line.
func (s *service) serveAdmin(conn net.Conn, req *lite.Admin, cred peer.Cred) {
	ctx, cancel := context.WithCancel(peer.NewContext(context.Background(), cred))
	defer cancel()
	var out []byte
	var err error
	if req.Op == lite.OpEmbed {
		out, err = s.embed(ctx, req.Args)
	} else {
		out, err = s.mcp.Admin(ctx, req.Op, req.Args)
	}
	if err != nil {
		lite.Write(conn, &lite.Event{Error: catalog.ToDetail(s.resp.redact(err))})
		return
	}
	lite.Write(conn, &lite.Event{Admin: out})
}

// Bounds of one OpEmbed request: tool_search sends the served tools' texts
// in batches of at most maxEmbedTexts.
const (
	maxEmbedTexts = 512
	maxEmbedBytes = 8 << 10
)

// embed answers OpEmbed with the user's embedding endpoint, whose key never
// leaves the daemon.
func (s *service) embed(ctx context.Context, args []byte) ([]byte, error) {
	if s.embedder == nil {
		return nil, fmt.Errorf("embed: no embedding endpoint is configured ([store] embed_api): %w", catalog.ErrConfig)
	}
	var a lite.EmbedArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("embed: arguments: %v: %w", err, catalog.ErrBadInput)
	}
	if len(a.Texts) == 0 || len(a.Texts) > maxEmbedTexts {
		return nil, fmt.Errorf("embed: %d texts: send 1 to %d: %w", len(a.Texts), maxEmbedTexts, catalog.ErrBadInput)
	}
	texts := make([]string, len(a.Texts))
	for i, t := range a.Texts {
		texts[i] = embedding.Truncate(t, maxEmbedBytes)
	}
	vs, err := s.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(lite.Embeddings{Model: s.embedder.String(), Vectors: vs})
	if err != nil {
		return nil, fmt.Errorf("embed: encode: %v: %w", err, catalog.ErrInternal)
	}
	return b, nil
}
