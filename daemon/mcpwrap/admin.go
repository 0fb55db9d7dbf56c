package mcpwrap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/record"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/wire/lite"
)

// The admin operations `contextd mcp ...` sends (lite.Admin.Op).
const (
	OpSessions = "mcp.sessions" // SessionsArgs -> []SessionInfo
	OpSession  = "mcp.session"  // SessionArgs -> the record as JSON (record.WriteJSON)
	OpApprove  = "mcp.approve"  // ApproveArgs -> intercept.Pin
	OpPins     = "mcp.pins"     // PinsArgs -> []intercept.Pin
)

// SessionsArgs lists recorded sessions.
type SessionsArgs struct {
	Limit int `json:"limit"`
}

// SessionInfo is one line of `contextd mcp sessions list`.
type SessionInfo struct {
	record.Session
	Live bool `json:"live"`
}

// SessionArgs names one session.
type SessionArgs struct {
	ID string `json:"id"`
}

// ApproveArgs approves a tool's changed description.
type ApproveArgs struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// PinsArgs lists the pins of a server ("" for all).
type PinsArgs struct {
	Server string `json:"server"`
}

// Admin carries out one admin operation and returns its answer as JSON.
func (w *Wrapper) Admin(ctx context.Context, op string, args json.RawMessage) (json.RawMessage, error) {
	st, err := w.d.Stores(ctx)
	if err != nil {
		return nil, err
	}
	decode := func(v any) error {
		if len(args) == 0 {
			return nil
		}
		if err := json.Unmarshal(args, v); err != nil {
			return fmt.Errorf("%s: arguments: %v: %w", op, err, catalog.ErrBadInput)
		}
		return nil
	}
	var out any
	switch op {
	case OpSessions:
		var a SessionsArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		infos, err := w.sessions(ctx, st, a.Limit)
		if err != nil {
			return nil, err
		}
		out = infos
	case lite.OpWrapEnd:
		var a lite.WrapEndArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		var f error
		w.mu.Lock()
		if s, ok := w.live[a.Record]; ok {
			f = s.failure()
		} else {
			f = w.failed[a.Record]
		}
		w.mu.Unlock()
		out = lite.WrapEnd{Failure: catalog.ToDetail(f)}
	case OpSession:
		var a SessionArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		if a.ID == "" {
			return nil, fmt.Errorf("%s: no session id: %w", op, catalog.ErrBadInput)
		}
		live, _ := w.lookup(a.ID)
		if live != nil {
			live.rec.Flush() // a live session's latest messages too
		}
		r, err := st.LoadSession(ctx, a.ID)
		if err != nil {
			return nil, err
		}
		if live != nil && r.Session.Failure == "" {
			if f := live.failure(); f != nil {
				r.Session.Failure = failureText(f)
			}
		}
		var b bytes.Buffer
		if err := record.WriteJSON(&b, r); err != nil {
			return nil, fmt.Errorf("%s: %v: %w", op, err, catalog.ErrInternal)
		}
		return json.RawMessage(b.Bytes()), nil
	case lite.OpMCPHub:
		h, err := w.hub(ctx, st)
		if err != nil {
			return nil, err
		}
		out = h
	case OpApprove:
		var a ApproveArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		if !validName(a.Server) || a.Tool == "" {
			return nil, fmt.Errorf("%s: give a server name and a tool: %w", op, catalog.ErrBadInput)
		}
		p, err := intercept.Approve(ctx, st.Pins(), a.Server, a.Tool)
		if err != nil {
			return nil, err
		}
		out = p
	case OpPins:
		var a PinsArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		ps, err := st.Pins().List(ctx, a.Server)
		if err != nil {
			return nil, err
		}
		if ps == nil {
			ps = []intercept.Pin{}
		}
		out = ps
	default:
		return nil, fmt.Errorf("unknown admin operation %q (a newer contextd command than this daemon?): %w", op, catalog.ErrBadInput)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encode: %v: %w", op, err, catalog.ErrInternal)
	}
	return b, nil
}

// hub is the answer to OpMCPHub: [mcp]'s search settings and the served
// servers, each with how many of its tools are pinned.
func (w *Wrapper) hub(ctx context.Context, st Stores) (*lite.MCPHub, error) {
	m := &w.d.Config.MCP
	h := &lite.MCPHub{Search: m.Search, Threshold: m.SearchThreshold, Results: m.SearchResults,
		StartWait: m.StartWait.Duration, StartTimeout: m.StartTimeout.Duration,
		// Dense only with an endpoint to ask: without one, tool_search is
		// lexical and says nothing of it.
		Dense:   m.SearchDense && w.d.Config.Store.EmbedAPI != config.EmbedNone,
		Servers: []lite.MCPHubServer{}}
	for _, name := range m.ServedNames() {
		sc := m.Servers[name]
		target := sc.URL
		if target == "" {
			target = strings.Join(sc.Command, " ")
		}
		pins, err := st.Pins().List(ctx, name)
		if err != nil {
			return nil, err
		}
		h.Servers = append(h.Servers, lite.MCPHubServer{Name: name, Target: w.redactText(target), Pinned: len(pins)})
	}
	return h, nil
}

// redactText replaces the secrets in s (a token in a URL or an argument).
func (w *Wrapper) redactText(s string) string {
	if w.d.Scrubber == nil {
		return s
	}
	b := []byte(s)
	return string(scrub.Replace(b, w.d.Scrubber.Find(b), func(f scrub.Finding) string { return "[REDACTED:" + f.Rule + "]" }))
}

// sessions lists the recorded sessions, the live ones marked, with the
// failure of a live one whose server failed.
func (w *Wrapper) sessions(ctx context.Context, st Stores, limit int) ([]SessionInfo, error) {
	ss, err := st.ListSessions(ctx, limit)
	if err != nil {
		return nil, err
	}
	infos := make([]SessionInfo, 0, len(ss))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range ss {
		ls, live := w.live[s.ID]
		if live && s.Failure == "" {
			// Saved at its end; a failed server's session lingers to
			// answer its client.
			if f := ls.failure(); f != nil {
				s.Failure = failureText(f)
			}
		}
		infos = append(infos, SessionInfo{Session: s, Live: live})
	}
	return infos, nil
}
