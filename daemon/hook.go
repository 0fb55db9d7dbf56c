package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/automation"
	"github.com/contextd/contextd/daemon/automation/deliveries"
	"github.com/contextd/contextd/daemon/callrec"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/httpapi"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/webhook"
)

// The webhook edge: POST /v1/hooks/NAME verifies a delivery for one of
// the configured automations and starts its call, which runs after the
// answer like any other call (counted, audited, drained).

// hooks are the daemon's automations and the record of their deliveries.
type hooks struct {
	byName map[string]*automation.Automation
	// broken are the automations that did not compile at start (a secret
	// file removed since the configuration was checked): why.
	broken map[string]error
	// store is the delivery record; nil when it could not be opened, and
	// then no delivery is run, since replays could not be refused.
	store    *deliveries.Store
	storeErr error
	// runs are the calls started and not yet ended: the drain waits
	// for them, as for the protocols' calls.
	runs sync.WaitGroup
	log  *slog.Logger
	// unverified bounds the records of deliveries refused before their
	// signature verified (an unknown automation, a body too large, a bad
	// signature or timestamp): whoever reaches the hooks path can send
	// those, and must not be able to flood the audit log and hooks.db.
	// Past it they are counted in the log only.
	unverified *automation.Limiter
	dropped    atomic.Int64
}

// openHooks compiles cfg's automations and opens the delivery record when
// there is any automation.
func openHooks(cfg *config.Config, log *slog.Logger) *hooks {
	hk := &hooks{byName: map[string]*automation.Automation{}, broken: map[string]error{}, log: log,
		unverified: automation.NewLimiter(config.Rate{Count: 60, Per: time.Minute})}
	for _, a := range cfg.Automations {
		c, err := automation.Compile(a)
		if err != nil {
			log.Error("automation not served", "automation", a.Name, "err", err)
			hk.broken[a.Name] = err
			continue
		}
		hk.byName[a.Name] = c
	}
	if len(cfg.Automations) == 0 {
		return hk
	}
	if hk.store, hk.storeErr = deliveries.Open(""); hk.storeErr != nil {
		log.Error("webhook deliveries refused: their record cannot be opened", "err", hk.storeErr)
	}
	return hk
}

// wait waits for the calls deliveries started.
func (hk *hooks) wait() {
	if hk != nil {
		hk.runs.Wait()
	}
}

func (hk *hooks) close() {
	if hk != nil && hk.store != nil {
		hk.store.Close()
	}
}

// automation is the compiled automation name, or why it cannot run.
func (hk *hooks) automation(name string) (*automation.Automation, error) {
	if _, ok := hk.broken[name]; ok {
		// Its reason names files of the user's: it is in the daemon's
		// log, not in an answer to a sender without the secret.
		return nil, fmt.Errorf("automation %q did not load (the daemon's log says why): %w", name, catalog.ErrConfig)
	}
	a, ok := hk.byName[name]
	if !ok {
		return nil, fmt.Errorf("no automation %q in the configuration: %w", name, catalog.ErrUnknownAutomation)
	}
	if hk.store == nil {
		return nil, fmt.Errorf("the delivery record cannot be opened (the daemon's log says why): %w", catalog.ErrStoreUnavailable)
	}
	return a, nil
}

// rateError is a delivery over its automation's rate: the answer's
// Retry-After says when a token is back.
type rateError struct {
	name  string
	retry time.Duration
}

func (e *rateError) Error() string {
	return fmt.Sprintf("automation %q: %s", e.name, catalog.ErrRateLimited.Name)
}
func (e *rateError) Unwrap() error             { return catalog.ErrRateLimited }
func (e *rateError) RetryAfter() time.Duration { return e.retry }

// hookVia is Call.Via of automation name's calls; hookSession their session.
func hookVia(name string) string     { return "hook:" + name }
func hookSession(name string) string { return "hook-" + name }

// senderID is the delivery id a refused delivery's headers claim, for the
// history only (it is not verified yet).
func senderID(h http.Header) string {
	id := h.Get("X-GitHub-Delivery")
	if id == "" {
		id = h.Get("webhook-id")
	}
	if len(id) > webhook.MaxHeaderValue {
		id = id[:webhook.MaxHeaderValue]
	}
	return id
}

// Hook implements httpapi.Core, in the order of its checks: the
// automation, the body's size, the signature, the timestamp, the replay,
// the rate, the payload.
func (h httpCore) Hook(ctx context.Context, name string, hdr http.Header, body httpapi.HookBody) (httpapi.HookAccepted, error) {
	hk := h.s.hooks
	start := time.Now()
	cred := hookCred(ctx)
	a, err := hk.automation(name)
	if err != nil {
		return httpapi.HookAccepted{}, h.unverifiedRefused(name, senderID(hdr), cred, start, err)
	}
	raw, err := body(a.MaxBodyBytes)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			err = fmt.Errorf("the body is over %d bytes: %w", mb.Limit, catalog.ErrBodyTooLarge)
		} else {
			err = fmt.Errorf("reading the body: %v: %w", err, catalog.ErrBadInput)
		}
		return httpapi.HookAccepted{}, h.unverifiedRefused(name, senderID(hdr), cred, start, err)
	}
	d, err := a.Verifier.Verify(hdr, raw, time.Now())
	if err != nil {
		return httpapi.HookAccepted{}, h.unverifiedRefused(name, senderID(hdr), cred, start, err)
	}
	if err := hk.store.Claim(name, d.ID, time.Now()); err != nil {
		if errors.Is(err, catalog.ErrHookReplay) {
			return httpapi.HookAccepted{}, h.hookRefused(name, d.ID, "", cred, start, err)
		}
		return httpapi.HookAccepted{}, h.hookRefused(name, "", "", cred, start, fmt.Errorf("the delivery record: %v: %w", err, catalog.ErrIO))
	}
	// From here the id is claimed: a refusal gives it back (Finish).
	if ok, retry := a.Limiter.Allow(time.Now()); !ok {
		return httpapi.HookAccepted{}, h.hookRefused(name, "", d.ID, cred, start, &rateError{name: name, retry: retry})
	}
	input, env, warnings, err := a.Expand(raw)
	if err != nil {
		return httpapi.HookAccepted{}, h.hookRefused(name, "", d.ID, cred, start, err)
	}
	// GitHub signs the body only, not its delivery id: a signed body
	// resent under a new id would verify. The body is claimed too (GitHub's
	// own redelivery reuses the id, so nothing it sends is refused), last,
	// so that no refusal above has to give it back.
	if _, ok := a.Verifier.(webhook.GitHub); ok {
		sum := sha256.Sum256(raw)
		if err := hk.store.Claim(name, "body:"+hex.EncodeToString(sum[:]), time.Now()); err != nil {
			if !errors.Is(err, catalog.ErrHookReplay) {
				err = fmt.Errorf("the delivery record: %v: %w", err, catalog.ErrIO)
			} else {
				err = fmt.Errorf("this body was delivered before under another id: %w", catalog.ErrHookReplay)
			}
			return httpapi.HookAccepted{}, h.hookRefused(name, "", d.ID, cred, start, err)
		}
	}
	maps.Copy(env, a.FixedEnv(d))
	rec := h.recs.New(a.Tool, hookVia(name))
	rec.Workspace, rec.Session = a.Workspace, hookSession(name)
	h.keep(rec)
	if err := hk.store.Started(name, d.ID, rec.ID); err != nil {
		hk.log.Warn("delivery not tied to its call", "automation", name, "delivery", d.ID, "err", err)
	}
	for _, w := range warnings {
		hk.log.Info("automation payload", "automation", name, "delivery", d.ID, "warning", w)
	}
	c := Call{ID: rec.ID, Via: hookVia(name), Tool: a.Tool, Input: input, Session: hookSession(name),
		Cwd: a.Workspace, HookEnv: env}
	// Counted from now, so that neither the idle exit nor the drain
	// passes a call that is about to start.
	h.s.begin()
	hk.runs.Add(1)
	go func() {
		defer hk.runs.Done()
		defer h.s.end()
		h.runHook(a, d, c, cred)
	}()
	return httpapi.HookAccepted{CallID: rec.ID, StatusURL: "/v1/calls/" + rec.ID}, nil
}

// runHook runs a delivery's call to its end: its record, the delivery's
// outcome and, when the automation keeps one, the memory of its answer.
func (h httpCore) runHook(a *automation.Automation, d webhook.Delivery, c Call, cred peer.Cred) {
	name := a.Name
	resp, res, err := h.run(context.Background(), c, cred, nil)
	o := deliveries.Outcome{Exit: res.ExitCode}
	if err != nil {
		o = deliveries.Outcome{Code: catalog.ClassOf(err).Code, Exit: catalog.ExitCode(err)}
		h.finish(c.ID, callrec.Refused, catalog.ToProblem(err), nil)
	} else {
		resp.NextPage = nextPage(c.ID, 1, res)
		h.finish(c.ID, callrec.Done, resp, func(r *callrec.Record) {
			r.Session, r.Workspace = res.Session, res.Workspace
			r.Pages = []string{res.Continue}
		})
	}
	if err := h.s.hooks.store.Finish(name, d.ID, time.Now(), o); err != nil {
		h.s.hooks.log.Warn("delivery's end not recorded", "automation", name, "delivery", d.ID, "err", err)
	}
	if a.Memory != nil && err == nil {
		h.remember(a, c, cred, resp)
	}
}

// remember stores a run's answer as the automation's memory: a success
// when the tool exited 0.
func (h httpCore) remember(a *automation.Automation, run Call, cred peer.Cred, resp httpapi.CallResponse) {
	outcome := "failure"
	if resp.Result.ExitCode == 0 {
		outcome = "success"
	}
	desc := a.Memory.Description
	if desc == "" {
		desc = "the answer of automation " + a.Name + "'s run"
	}
	content := resp.Output
	if content == "" {
		content = "(no output)"
	}
	input, err := json.Marshal(map[string]string{"title": a.Memory.Title, "description": desc,
		"content": content, "outcome": outcome})
	if err == nil {
		c := Call{Via: run.Via, Tool: "memory_store", Input: input, Session: run.Session, Cwd: run.Cwd}
		_, err = h.s.call(context.Background(), c, cred, func([]byte) error { return nil })
	}
	if err != nil {
		h.s.hooks.log.Warn("automation's memory not stored", "automation", a.Name, "call_id", run.ID, "err", err)
	}
}

// unverifiedRefused is hookRefused for a delivery refused before its
// signature verified, within hooks.unverified; past it, counted only.
func (h httpCore) unverifiedRefused(name, id string, cred peer.Cred, start time.Time, err error) error {
	hk := h.s.hooks
	if ok, _ := hk.unverified.Allow(time.Now()); ok {
		if n := hk.dropped.Swap(0); n > 0 {
			hk.log.Warn("webhook deliveries refused unrecorded: more than 60 a minute before their signature verified", "count", n)
		}
		return h.hookRefused(name, id, "", cred, start, err)
	}
	hk.dropped.Add(1)
	return err
}

// hookRefused records a refused delivery (its history row and its audit
// record) and returns err. claimed is the id the delivery claimed, given
// back now; unclaimed the id a delivery refused before its claim gave.
func (h httpCore) hookRefused(name, unclaimed, claimed string, cred peer.Cred, start time.Time, err error) error {
	hk := h.s.hooks
	class := catalog.ClassOf(err)
	hk.log.Info("webhook delivery refused", "automation", name, "code", class.Code, "err", err)
	if hk.store != nil {
		var serr error
		if claimed != "" {
			serr = hk.store.Finish(name, claimed, time.Now(), deliveries.Outcome{Code: class.Code, Exit: catalog.ExitCode(err)})
		} else {
			serr = hk.store.Refused(name, unclaimed, time.Now(), class.Code)
		}
		if serr != nil {
			hk.log.Warn("refused delivery not recorded", "automation", name, "err", serr)
		}
	}
	h.s.record(&audit.Record{Kind: audit.KindHook, Tool: hookVia(name), Error: class.Code, Reason: class.Name,
		ExitCode: catalog.ExitCode(err)}, Call{Via: hookVia(name), Session: hookSession(name)}, cred, start)
	return err
}

// hookCred is who sent a delivery: the peer of the Unix socket, or the
// daemon's own user on a listener that knows no peer (the signature is
// the delivery's proof, not the connection).
func hookCred(ctx context.Context) peer.Cred {
	if cred, ok := peer.FromContext(ctx); ok {
		return cred
	}
	return peer.Cred{PID: int32(os.Getpid()), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
}
