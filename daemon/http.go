package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/callrec"
	"github.com/contextd/contextd/daemon/httpapi"
	"github.com/contextd/contextd/daemon/httpguard"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/toolspec"
)

// The HTTP adapter: the API for automations (daemon/httpapi). As grpc.go
// does for gRPC, it converts the edge's types to the core's and back here
// and nowhere else, and keeps each call's record for GET /v1/calls/{id}.

// viaHTTP is Call.Via of a call made over the HTTP API.
const viaHTTP = "http"

// newHTTPServer is the HTTP API of svc behind wrap; each connection's
// caller travels in its requests' context.
func newHTTPServer(svc *service, recs *callrec.Store, addrs []string, wrap func(http.Handler) http.Handler) (*httpapi.Server, error) {
	return httpapi.New(httpCore{s: svc, recs: recs, addrs: addrs}, httpapi.Options{
		Version:      svc.opts.Version,
		Logger:       svc.opts.Logger,
		MaxBodyBytes: int64(svc.opts.Config.HTTP.MaxBodyBytes),
		Wrap:         wrap,
		ConnContext:  connContext,
	})
}

// httpServing is the HTTP API as Run serves it, one server per listener;
// the zero value serves nothing.
type httpServing struct {
	srvs []*httpapi.Server
	wg   *sync.WaitGroup
}

// serveHTTP serves the HTTP API on Options.HTTP, if there is one, to the
// daemon's own user only (checked at accept, as on the main socket), and
// on [http] tcp, if set, to whoever holds the token.
func (s *service) serveHTTP() (hs httpServing, err error) {
	cfg := s.opts.Config.HTTP
	ln := s.opts.HTTP
	if ln == nil && cfg.TCP == "" {
		return httpServing{}, nil
	}
	var tcp httpTCP
	defer func() {
		if err != nil {
			if ln != nil {
				ln.Close()
			}
			if tcp.ln != nil {
				tcp.ln.Close()
			}
		}
	}()
	if cfg.TCP != "" {
		if tcp, err = openTCP(cfg.TCP, cfg.AllowedOrigins); err != nil {
			return httpServing{}, fmt.Errorf("http api: %w", err)
		}
	}
	recs, err := openCallRecords(s)
	if err != nil {
		return httpServing{}, fmt.Errorf("http api: %v: %w", err, catalog.ErrInternal)
	}
	type served struct {
		ln   net.Listener
		wrap func(http.Handler) http.Handler
	}
	var lns []served
	var addrs []string
	if ln != nil {
		unix, err := httpguard.Unix(cfg.AllowedOrigins)
		if err != nil {
			return httpServing{}, fmt.Errorf("http api: %w", err)
		}
		lns = append(lns, served{peer.NewListener(ln, nil, s.opts.Logger), unix.Wrap})
		addrs = append(addrs, ln.Addr().String())
	}
	if tcp.ln != nil {
		lns = append(lns, served{tcp.ln, tcp.wrap})
		addrs = append(addrs, tcp.ln.Addr().String())
	}
	for _, l := range lns {
		srv, err := newHTTPServer(s, recs, addrs, l.wrap)
		if err != nil {
			return httpServing{}, fmt.Errorf("http api: %v: %w", err, catalog.ErrInternal)
		}
		hs.srvs = append(hs.srvs, srv)
	}
	hs.wg = new(sync.WaitGroup)
	log := s.opts.Logger
	for i, srv := range hs.srvs {
		hs.wg.Add(1)
		go func() {
			defer hs.wg.Done()
			if err := srv.Serve(lns[i].ln); err != nil {
				log.Error("http api stopped serving", "addr", addrs[i], "err", err)
			}
		}()
	}
	log.Info("http api serving", "addrs", addrs)
	return hs, nil
}

// drain stops accepting and waits for the requests in flight (streamed
// calls among them), as the light protocol's calls are waited for; each
// server drains at once, so none accepts while another is waited for.
func (hs httpServing) drain() {
	var shut sync.WaitGroup
	for _, srv := range hs.srvs {
		shut.Go(func() { srv.Shutdown(context.Background()) })
	}
	shut.Wait()
	if hs.wg != nil {
		hs.wg.Wait()
	}
}

// cut closes the connections drain still waits for.
func (hs httpServing) cut() {
	for _, srv := range hs.srvs {
		srv.Close()
	}
}

// openCallRecords is the store of the HTTP API's call records, expired
// with the pages they refer to.
func openCallRecords(svc *service) (*callrec.Store, error) {
	dir, err := callrec.DefaultDir()
	if err != nil {
		return nil, err
	}
	recs, err := callrec.Open(dir, svc.opts.Config.Pages.TTL.Duration)
	if err != nil {
		return nil, err
	}
	if err := recs.Prune(); err != nil {
		svc.opts.Logger.Warn("expired call records not removed", "err", err)
	}
	return recs, nil
}

// httpCore is the service as httpapi.Core.
type httpCore struct {
	s     *service
	recs  *callrec.Store
	addrs []string
}

func credOf(ctx context.Context) (peer.Cred, error) {
	cred, ok := peer.FromContext(ctx)
	if !ok {
		return cred, fmt.Errorf("no peer credentials: %w", catalog.ErrPeerRefused)
	}
	return cred, nil
}

// Call implements httpapi.Core.
func (h httpCore) Call(ctx context.Context, req httpapi.CallRequest, out func([]byte) error) (httpapi.CallResponse, error) {
	cred, err := credOf(ctx)
	if err != nil {
		return httpapi.CallResponse{}, err
	}
	if !filepath.IsAbs(req.Workspace) {
		return httpapi.CallResponse{}, fmt.Errorf("workspace %q: an absolute path is needed: %w", req.Workspace, catalog.ErrBadInput)
	}
	rec := h.recs.New(req.Tool, viaHTTP)
	if req.Session == "" && overTCP(ctx) {
		req.Session = tcpSessionPrefix + rec.ID
	}
	rec.Workspace, rec.Session = req.Workspace, req.Session
	h.keep(rec)
	c := Call{ID: rec.ID, Via: viaHTTP, Tool: req.Tool, Input: req.Input, Session: req.Session,
		Cwd: req.Workspace, MaxTokens: req.MaxTokens}
	resp, res, err := h.run(ctx, c, cred, out)
	if err != nil {
		h.finish(rec.ID, callrec.Refused, catalog.ToProblem(err), nil)
		return resp, err
	}
	resp.NextPage = nextPage(rec.ID, 1, res)
	h.finish(rec.ID, callrec.Done, resp, func(r *callrec.Record) {
		r.Session, r.Workspace = res.Session, res.Workspace
		r.Pages = []string{res.Continue}
	})
	return resp, nil
}

// Page implements httpapi.Core.
func (h httpCore) Page(ctx context.Context, req httpapi.PageRequest, out func([]byte) error) (httpapi.CallResponse, error) {
	cred, err := credOf(ctx)
	if err != nil {
		return httpapi.CallResponse{}, err
	}
	rec, err := h.recs.Get(req.ID)
	if err != nil {
		return httpapi.CallResponse{}, err
	}
	ref, err := rec.PageRef(req.N)
	if err != nil {
		return httpapi.CallResponse{}, err
	}
	c := Call{ID: rec.ID, Via: rec.Via, Tool: rec.Tool, Session: rec.Session, Cwd: rec.Workspace,
		Continue: ref, MaxTokens: req.MaxTokens}
	resp, res, err := h.run(ctx, c, cred, out)
	if err != nil {
		return resp, err
	}
	resp.NextPage = nextPage(rec.ID, req.N+1, res)
	if err := h.recs.Update(rec.ID, func(r *callrec.Record) { r.SetPage(req.N, res.Continue) }); err != nil {
		h.s.opts.Logger.Warn("call record not updated: its next page cannot be fetched", "call_id", rec.ID, "err", err)
	}
	return resp, nil
}

// run runs c, collecting its output for the answer while out streams it.
func (h httpCore) run(ctx context.Context, c Call, cred peer.Cred, out func([]byte) error) (httpapi.CallResponse, Result, error) {
	var buf bytes.Buffer
	res, err := h.s.call(ctx, c, cred, func(b []byte) error {
		buf.Write(b)
		if out != nil {
			return out(b)
		}
		return nil
	})
	if err != nil {
		return httpapi.CallResponse{}, res, err
	}
	return httpapi.CallResponse{ID: c.ID, Output: buf.String(), Result: httpResult(res)}, res, nil
}

// nextPage is the path of page n of call id, when res left output out.
func nextPage(id string, n int, res Result) string {
	if res.Continue == "" {
		return ""
	}
	return fmt.Sprintf("/v1/calls/%s/pages/%d", id, n)
}

// keep stores rec; a call whose record cannot be kept still runs, and
// the log says why GET /v1/calls will not know it.
func (h httpCore) keep(rec callrec.Record) {
	if err := h.recs.Put(rec); err != nil {
		h.s.opts.Logger.Warn("call record not kept", "call_id", rec.ID, "err", err)
	}
}

// finish records how call id ended: its answer as the caller got it.
func (h httpCore) finish(id string, st callrec.State, answer any, more func(*callrec.Record)) {
	b, err := json.Marshal(answer)
	if err == nil {
		err = h.recs.Update(id, func(r *callrec.Record) {
			r.State, r.Answer, r.Ended = st, b, time.Now().UTC()
			if more != nil {
				more(r)
			}
		})
	}
	if err != nil {
		h.s.opts.Logger.Warn("call record not kept", "call_id", id, "err", err)
	}
}

func httpResult(r Result) httpapi.Result {
	out := httpapi.Result{ExitCode: r.ExitCode, Truncated: r.Truncated, HasMore: r.Truncated,
		TokensUsed: r.TokensUsed, Continue: r.Continue, Error: r.Error, Session: r.Session,
		Workspace: r.Workspace, Warnings: r.Warnings}
	if l := r.Sandbox; sandboxed(l) {
		out.Sandbox = &l
	}
	return out
}

// Record implements httpapi.Core.
func (h httpCore) Record(_ context.Context, id string) (httpapi.CallRecord, error) {
	r, err := h.recs.Get(id)
	if err != nil {
		return httpapi.CallRecord{}, err
	}
	out := httpapi.CallRecord{ID: r.ID, State: string(r.State), Tool: r.Tool, Via: r.Via, Session: r.Session,
		Workspace: r.Workspace, Started: r.Started, Ended: r.Ended}
	switch r.State {
	case callrec.Done:
		out.Response = new(httpapi.CallResponse)
		err = json.Unmarshal(r.Answer, out.Response)
	case callrec.Refused:
		out.Problem = new(catalog.Problem)
		err = json.Unmarshal(r.Answer, out.Problem)
	}
	if err != nil {
		return httpapi.CallRecord{}, fmt.Errorf("call record %s: %v: %w", id, err, catalog.ErrInternal)
	}
	return out, nil
}

// Tools implements httpapi.Core: contextd's own tools, then the plugins.
func (h httpCore) Tools(context.Context) (httpapi.ToolList, error) {
	var out httpapi.ToolList
	for _, sp := range toolspec.All() {
		kind := "sandboxed"
		if toolspec.KindOf(sp.Name) == toolspec.State {
			kind = "state"
		}
		out = append(out, httpapi.ToolInfo{Name: sp.Name, Kind: kind, Description: schemaDescription(sp.Schema),
			Schema: sp.Schema, Doc: string(sp.Doc)})
	}
	if p := h.s.opts.Tools.Plugins; p != nil {
		for _, name := range p.Names() {
			if !h.s.opts.Tools.isPlugin(name) {
				continue
			}
			t, err := p.Describe(name)
			if err != nil {
				continue // removed since Names
			}
			out = append(out, httpapi.ToolInfo{Name: name, Kind: "plugin", Version: t.Version,
				Description: t.Description, Schema: t.Schema})
		}
	}
	return out, nil
}

// schemaDescription is a schema's top-level description.
func schemaDescription(schema []byte) string {
	var s struct {
		Description string `json:"description"`
	}
	json.Unmarshal(schema, &s)
	return s.Description
}

// Status implements httpapi.Core.
func (h httpCore) Status(context.Context) (httpapi.StatusReply, error) {
	st := h.s.status()
	return httpapi.StatusReply{Version: st.Version, PID: st.PID, UptimeMS: st.Uptime.Milliseconds(),
		CallsInFlight: st.CallsInFlight, SocketActivated: st.SocketActivated, Tools: st.Tools, HTTP: h.addrs}, nil
}

// auditDir is the audit log's directory, or why there is none.
func (h httpCore) auditDir() (string, error) {
	if h.s.audit == nil {
		return "", fmt.Errorf("the audit log could not be opened at start (the daemon's log says why): %w", catalog.ErrInternal)
	}
	return h.s.audit.Dir(), nil
}

// Audit implements httpapi.Core. A line that is not a good record is left
// out (GET /v1/audit/verify reports it).
func (h httpCore) Audit(_ context.Context, q httpapi.AuditQuery) (httpapi.AuditEntries, error) {
	dir, err := h.auditDir()
	if err != nil {
		return nil, err
	}
	var out httpapi.AuditEntries
	for e, err := range audit.Read(dir, audit.Filter{Session: q.Session, Tool: q.Tool, Since: q.Since, Until: q.Until}) {
		if errors.Is(err, audit.ErrTampered) {
			continue
		}
		if errors.Is(err, audit.ErrNoLog) {
			break // no call was audited yet
		}
		if err != nil {
			return nil, fmt.Errorf("audit log: %v: %w", err, catalog.ErrIO)
		}
		if len(out) == q.Limit {
			out = out[1:]
		}
		out = append(out, httpapi.AuditEntry{File: e.File, Line: e.Line, Record: httpapi.AuditLine(e.Raw)})
	}
	return out, nil
}

// AuditVerify implements httpapi.Core.
func (h httpCore) AuditVerify(context.Context) (httpapi.AuditVerifyReply, error) {
	dir, err := h.auditDir()
	if err != nil {
		return httpapi.AuditVerifyReply{}, err
	}
	rep, err := audit.Verify(dir)
	if err != nil && !errors.Is(err, audit.ErrTampered) && !errors.Is(err, audit.ErrNoLog) {
		return httpapi.AuditVerifyReply{}, fmt.Errorf("audit log: %v: %w", err, catalog.ErrIO)
	}
	conv := func(ps []audit.Problem) []httpapi.AuditProblem {
		out := []httpapi.AuditProblem{}
		for _, p := range ps {
			out = append(out, httpapi.AuditProblem{Kind: string(p.Kind), File: p.File, Line: p.Line, Seq: p.Seq, Detail: p.Detail})
		}
		return out
	}
	return httpapi.AuditVerifyReply{OK: rep.OK(), Dir: rep.Dir, Files: rep.Files, Records: rep.Records,
		FirstSeq: rep.FirstSeq, LastSeq: rep.LastSeq, HeadSeq: rep.HeadSeq, BaseSeq: rep.BaseSeq, Resets: rep.Resets,
		Problems: conv(rep.Problems), Warnings: conv(rep.Warnings)}, nil
}
