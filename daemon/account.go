package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/sandboxinfo"
)

// The account stage: what a call cost and how it went, recorded. It scrubs
// nothing; what it records left the respond stage scrubbed.

// account charges the session's open branches, logs the call, writes its
// audit record and returns its Result. A page that could not be answered
// is recorded too, and its error returned.
func (s *service) account(ctx context.Context, adm *admission, o toolcall.Outcome, ans answer, start time.Time) (Result, error) {
	rec := &audit.Record{Tool: adm.c.Tool, Session: ans.session, Workspace: adm.place.Root, ContinueOf: adm.c.Continue}
	ran := o.Layers
	if adm.page() {
		ran = ans.refilled // no tool ran, but a hole of the output may have been read again
	}
	rec.Sandbox, rec.Egress = auditNet(ran, o.Egress)
	rec.Plugin = o.Plugin
	if ans.err != nil {
		rec.Error, rec.ExitCode = catalog.ClassOf(ans.err).Code, catalog.ExitCode(ans.err)
		adm.log.Info("call", "code", rec.Error, "err", s.resp.redact(ans.err))
		s.record(rec, adm.c, adm.cred, start)
		return Result{}, ans.err
	}
	var warnings []string
	warnings = append(warnings, adm.warnings...)
	warnings = append(warnings, o.Warnings...)
	branch := s.branchCharge(ctx, adm.branches, adm.c.Tool, ans.TokensUsed)
	// The caller reads how to allow a refused host; the audit record lists
	// the connections themselves instead (auditNet).
	var shown []string
	shown = append(shown, warnings...)
	if o.Egress != nil {
		shown = append(shown, o.Egress.Lines...)
	}
	shown = append(shown, branch...)
	warnings = append(warnings, branch...)
	res := Result{
		ExitCode:   o.ExitCode,
		Error:      ans.detail,
		Session:    ans.session,
		Workspace:  adm.place.Root,
		TokensUsed: ans.TokensUsed,
		Truncated:  ans.Truncated,
		Continue:   ans.Continue,
		Warnings:   shown,
		Sandbox:    o.Layers,
	}
	second := countAll(ans.catches)
	attrs := []any{"exit", o.ExitCode, "duration_ms", time.Since(start).Milliseconds(),
		"scope", ran.Scope, "seccomp", ran.Seccomp, "network", ran.Network}
	if ran.Scope == "" && ran.ScopeNote != "" {
		attrs = append(attrs, "scope_missing", ran.ScopeNote)
	}
	if o.Err != nil {
		attrs = append(attrs, "code", catalog.ClassOf(o.Err).Code, "err", ans.logErr)
	}
	attrs = append(attrs, "bytes", ans.Bytes, "tokens", ans.TokensUsed, "truncated", ans.Truncated,
		"findings", countAll(o.Findings), "second_layer", second)
	adm.log.Info("call", attrs...)
	rec.ExitCode, rec.BytesProduced, rec.TokensReturned, rec.Truncated = o.ExitCode, ans.Bytes, ans.TokensUsed, ans.Truncated
	rec.Findings, rec.SecondLayer, rec.SecondLayerRules = merge(o.Findings, ans.catches), second, ans.catches
	rec.Warnings, rec.Args = warnings, ans.args
	if o.Err != nil {
		rec.Error = catalog.ClassOf(o.Err).Code
	}
	s.record(rec, adm.c, adm.cred, start)
	return res, nil
}

// auditNet is a call's sandbox and connections as its audit record has
// them: the egress proxy, named with where its rules come from, when the
// call's process had one in its own network namespace.
func auditNet(l sandboxinfo.Layers, net *sandboxinfo.Egress) (audit.Sandbox, []sandboxinfo.Connection) {
	sb := audit.Sandbox{Layers: l}
	if net == nil {
		return sb, nil
	}
	if l.Namespaces && !l.Network {
		sb.EgressRules = net.RulesFrom
	}
	return sb, net.Connections
}

// record appends the call's audit record, filling in who and when.
func (s *service) record(r *audit.Record, c Call, cred peer.Cred, start time.Time) {
	if s.audit == nil {
		return
	}
	r.Time = start.UTC()
	r.PeerPID, r.PeerUID = cred.PID, cred.UID
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", cred.PID)); err == nil {
		r.PeerExe = exe
	}
	r.Cwd = c.Cwd
	r.CallID, r.Via = c.ID, c.Via
	r.DurationMS = time.Since(start).Milliseconds()
	if r.Session == "" {
		r.Session = c.Session
	}
	s.appendAudit(r)
}

// appendAudit writes r to the audit log, if there is one.
func (s *service) appendAudit(r *audit.Record) {
	if s.audit == nil {
		return
	}
	if err := s.audit.Append(r); err != nil {
		s.opts.Logger.Error("audit record not written", "tool", r.Tool, "err", err)
	}
}

func countAll(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// merge adds the counts of b to a copy of a.
func merge(a, b map[string]int) map[string]int {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := map[string]int{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
