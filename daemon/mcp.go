package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/mcpwrap"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/store/sqlite"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/wire/lite"
)

// setupMCP builds the wrapper of `mcp wrap` sessions (after setupPipeline:
// it shares the scrubber, the vaults, the page store and the counter).
func (s *service) setupMCP(cfg *config.Config) {
	home, _ := os.UserHomeDir()
	s.mcp = mcpwrap.New(mcpwrap.Deps{
		Runner:   s.opts.Runner,
		Config:   cfg,
		Log:      s.opts.Logger,
		Scrubber: s.scrubber,
		Vault:    s.vaults.get,
		Pages:    s.store,
		Counter:  s.counter,
		Stores:   s.mcpStores,
		Environ:  mcpEnviron(cfg),
		Home:     home,
	})
}

// mcpStores is where wraps keep records and pins: the state store when it is
// the embedded one; with Qdrant as the state store, an SQLite file of their
// own next to where the embedded one would be (records are local history,
// not shared knowledge).
func (s *service) mcpStores(ctx context.Context) (mcpwrap.Stores, error) {
	if s.opts.Config.Store.Backend != "sqlite" {
		// Not even opened: a Qdrant server that is down would hold up every
		// wrap and admin request for nothing.
		return s.ownMCPStore()
	}
	st, err := s.stateStore(ctx)
	if err != nil {
		return nil, err
	}
	if sq, ok := st.(*sqlite.Store); ok {
		return sq, nil
	}
	return s.ownMCPStore()
}

// ownMCPStore opens (once) the records file used beside a Qdrant state store.
func (s *service) ownMCPStore() (mcpwrap.Stores, error) {
	s.mcpOwn.once.Do(func() {
		p, err := sqlite.DefaultPath()
		if err != nil {
			s.mcpOwn.err = fmt.Errorf("mcp records: %v: %w", err, catalog.ErrStoreUnavailable)
			return
		}
		p = filepath.Join(filepath.Dir(p), "mcp.db")
		s.mcpOwn.st, s.mcpOwn.err = sqlite.Open(&sqlite.Options{Path: p})
		if s.mcpOwn.err != nil {
			s.mcpOwn.err = fmt.Errorf("mcp records at %s: %v: %w", p, s.mcpOwn.err, catalog.ErrStoreUnavailable)
		}
	})
	if s.mcpOwn.err != nil {
		return nil, s.mcpOwn.err
	}
	return s.mcpOwn.st, nil
}

type mcpOwnStore struct {
	once sync.Once
	st   *sqlite.Store
	err  error
}

// mcpEnviron builds a wrapped server's environment as safe_bash's is built,
// with the server's own env list added to safe_bash's.
func mcpEnviron(cfg *config.Config) func(caller map[string]string, extra []string, session, ws string) []string {
	return func(caller map[string]string, extra []string, session, ws string) []string {
		return tools.CommandEnv(caller, append(append([]string{}, cfg.Tools.SafeBash.Env...), extra...), session, ws)
	}
}

func (s *service) closeMCP() {
	if s.mcpOwn.st != nil {
		s.mcpOwn.st.Close()
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
		log.Info("mcp wrap ended", "server", req.Name, "err", s.redact(err))
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
	out, err := s.mcp.Admin(ctx, req.Op, req.Args)
	if err != nil {
		lite.Write(conn, &lite.Event{Error: catalog.ToDetail(s.redact(err))})
		return
	}
	lite.Write(conn, &lite.Event{Admin: out})
}
