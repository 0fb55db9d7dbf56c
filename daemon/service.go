package daemon

import (
	"context"
	"os"
	"time"

	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/mcpwrap"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/sandboxenv"
)

// service is the daemon's core: it runs calls on its own types (call.go);
// the protocols adapt to it (lite.go, grpc.go).
//
// A call goes through four stages, one file each, every stage handing the
// next what it needs:
//
//	admit    admit.go     who calls, in which session and workspace, which
//	                      tool with which input, with which budget, and
//	                      whether policy (an open branch's budget) lets the
//	                      call run: an admission
//	run      run.go       the tool, on what its kind needs (a state tool
//	                      the store, a sandboxed tool the sandbox), writing
//	                      into the response: an Outcome
//	respond  response.go  the response, opened before run so the output
//	                      streams: the daemon's scrub, the budget, the
//	                      salience pass, the pages: an answer, scrubbed
//	account  account.go   the branch's charge, the log line, the audit
//	                      record: the Result
//
// A page of an earlier output (Call.Continue) goes through the same
// stages: admit checks its session and budget, run gives it the way to read
// a hole of the output again in the tool's sandbox, respond cuts the page
// from the store, account records it.
//
// The respond stage's parts (the scrubber, the vaults, the page store) are
// a type of their own, responder, which the MCP wraps share. Admit, run and
// account stay methods of service: admit and account work on the same
// branches (the gate and the charge, on the state store), and run hands the
// tools the daemon's own options (its runner, home view and egress proxy),
// so a type per stage would each hold a copy of the same few fields.
type service struct {
	opts     Options
	callsCtx context.Context // canceled when the daemon gives up draining
	started  time.Time
	act      activity

	// resp is the respond stage (set up by Run).
	resp *responder
	// audit is account's record; nil: auditing failed to start, and each
	// call says so in the log.
	audit *audit.Log

	// state keeps memories, checkpoints and branches (set up by Run).
	state *stateStore
	// unbranched: sessions with no open branch (see branchGate).
	unbranched sessionSet

	// sandbox builds every sandbox's surroundings: a tool call's, a
	// wrapped server's.
	sandbox *sandboxenv.Builder

	// mcp runs `mcp wrap` sessions (set up by Run).
	mcp      *mcpwrap.Wrapper
	mcpStore mcpStore // the wraps' records and pins
	// embedder answers OpEmbed for tool_search: [store]'s endpoint, nil
	// when none is configured.
	embedder *embedding.Client

	// hooks are the automations webhooks start (set up by Run).
	hooks *hooks
}

// Status is what the daemon says of itself, for either protocol.
type Status struct {
	Version         string
	PID             int
	Uptime          time.Duration
	CallsInFlight   int
	SocketActivated bool
	Tools           []string
}

func (s *service) status() Status {
	return Status{
		Version:         s.opts.Version,
		PID:             os.Getpid(),
		Uptime:          time.Since(s.started),
		CallsInFlight:   s.inFlight(),
		SocketActivated: s.opts.Activated,
		Tools:           s.opts.Tools.Names(),
	}
}

// call runs one call for either protocol; out receives its output in order.
// Errors before the tool runs are the caller's (or contextd's) and are
// returned, for the protocol to report; everything after, including the
// tool's own failure, is in the Result. A page that cannot be answered is
// an error too.
func (s *service) call(parent context.Context, c Call, cred peer.Cred, out func([]byte) error) (_ Result, err error) {
	s.begin()
	defer s.end()
	// A refusal may quote the input (a path, a value): the caller gets it
	// scrubbed like any output.
	defer func() { err = s.resp.redact(err) }()
	start := time.Now()
	adm, err := s.admit(parent, c, cred)
	if err != nil {
		s.refused(adm, start, err)
		return Result{}, err
	}
	// The call ends when the caller goes away or when the daemon stops draining.
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stopAfter := context.AfterFunc(s.callsCtx, func() { cancel(context.Cause(s.callsCtx)) })
	defer stopAfter()

	admitted := time.Now()
	resp := s.resp.open(adm, out)
	o := s.run(ctx, adm, resp)
	ran := time.Now()
	ans := s.resp.finish(resp, &o)
	responded := time.Now()
	res, err := s.account(parent, adm, o, ans, start)
	// Where the call's time went, stage by stage, the tool's own stages
	// (the daemon's and its sandbox's) among them: bench/roundtrip's
	// latency, taken apart.
	adm.log.Debug("call stages", "admit_ms", msBetween(start, admitted), "run_ms", msBetween(admitted, ran),
		"respond_ms", msBetween(ran, responded), "account_ms", msBetween(responded, time.Now()), "tool_stages", o.Stages)
	return res, err
}

// msBetween is b-a in milliseconds, to the microsecond.
func msBetween(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }
