package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/session"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/scrub"
)

// The respond stage: what a call's output goes through on its way to the
// caller. It owns the daemon's scrub (the second layer), the budget, the
// salience pass and the page store; everything the caller and the records
// get of a call leaves it scrubbed.

// responder is the respond stage's parts, set up once (newResponder) and
// shared with the MCP wraps.
type responder struct {
	scrubber *scrub.Scrubber
	rules    string // the user's extra gitleaks rules, for the tools' own scrub
	counter  *budget.Counter
	salience *salience.Set // nil: salience.enabled is off
	pages    *pages.Store
	vaults   vaults
}

// newResponder builds the scrubber (with the user's extra gitleaks rules),
// the token counter, the salience rules and the page store. A scrubber that
// cannot be built is fatal: no call may go out unscrubbed.
func newResponder(cfg *config.Config) (*responder, error) {
	rules, err := gitleaksRules(cfg.Scrub.GitleaksConfig)
	if err != nil {
		return nil, err
	}
	sc, err := scrub.New(&scrub.Options{ExtraConfig: rules})
	if err != nil {
		return nil, fmt.Errorf("scrub.gitleaks_config: %v: %w", err, catalog.ErrConfig)
	}
	r := &responder{scrubber: sc, rules: rules, counter: budget.Default()}
	if cfg.Salience.Enabled {
		if r.salience, err = configcheck.Salience(cfg.Salience); err != nil {
			return nil, fmt.Errorf("%v: %w", err, catalog.ErrConfig)
		}
	}
	if r.pages, err = pages.Open(&pages.Options{TTL: cfg.Pages.TTL.Duration, MaxTotal: int64(cfg.Pages.MaxTotal)}); err != nil {
		return nil, fmt.Errorf("page store: %v: %w", err, catalog.ErrIO)
	}
	// The vocabulary takes a moment to load; not on the first call's path.
	go r.counter.Load()
	return r, nil
}

func (r *responder) close() { r.pages.Close() }

// gitleaksRules reads the user's extra gitleaks configuration: the configured
// file, or $XDG_CONFIG_HOME/contextd/gitleaks.toml when it exists.
func gitleaksRules(path string) (string, error) {
	explicit := path != ""
	if !explicit {
		dir := os.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			h, _ := os.UserHomeDir()
			dir = filepath.Join(h, ".config")
		}
		path = filepath.Join(dir, "contextd", "gitleaks.toml")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("scrub.gitleaks_config %s: %v: %w", path, err, catalog.ErrConfig)
	}
	return string(b), nil
}

// response is one call's respond stage. It opens before the tool runs, so
// that the output streams to the caller as the tool writes it, and closes
// after (responder.finish).
type response struct {
	adm   *admission
	layer *respond.Layer // the daemon's scrub, with the session's vault
	// pipe is what the tool writes into; nil for a page.
	pipe *respond.Pipe
	// salience is the rules a tool runs in its sandbox; nil: none (the
	// pass is off, or the output is not a log or a file).
	salience *salience.Set
	send     func([]byte) error
	// refill is how a page reads a hole of its output again, in the
	// tool's sandbox (the run stage sets it); refilled is the sandbox it
	// ran in.
	refill   func(vault *scrub.Vault) pages.FillFunc
	refilled sandboxinfo.Layers
}

// answer is what the respond stage hands account: what the caller got, and
// what the records keep of the call, all of it scrubbed.
type answer struct {
	respond.Summary
	// session is the one the output belongs to: a page's may be the
	// caller's own rather than the one it named (closePage).
	session string
	detail  *catalog.Detail // the tool's failure as the caller reads it
	logErr  error           // the same for the daemon's log
	args    json.RawMessage // the call's input, for the audit record
	catches map[string]int  // the daemon's scrub's catches, by rule
	// refilled is the sandbox a page's hole was read again in.
	refilled sandboxinfo.Layers
	// err is a page that could not be answered: the call's error, not a
	// Result.
	err error
}

// open starts the response to the admitted call; out receives what the
// caller gets, in order.
func (r *responder) open(adm *admission, out func([]byte) error) *response {
	resp := &response{adm: adm, send: deliver(out),
		layer: &respond.Layer{Scrubber: r.scrubber, Vault: r.vaults.get(adm.session)}}
	if adm.page() {
		return resp
	}
	if adm.c.Tool == "safe_bash" || adm.c.Tool == "safe_read" {
		// The outputs that are logs and files; the state tools' answers
		// are shaped by the tools themselves.
		resp.salience = r.salience
	}
	resp.pipe = respond.New(respond.Options{Layer: resp.layer, Counter: r.counter, Budget: adm.tokens, Salience: resp.salience,
		Store: r.pages, Session: adm.session, Tool: adm.c.Tool, Send: resp.send})
	return resp
}

// finish ends the response: it sends what is left within the budget (or the
// marker and the tail) and keeps the rest for pages. A failure there is the
// call's failure unless the tool had one of its own. A page is cut from its
// stored output here (closePage).
func (r *responder) finish(resp *response, o *toolcall.Outcome) answer {
	if resp.adm.page() {
		return r.closePage(resp)
	}
	adm := resp.adm
	sum, err := resp.pipe.Close()
	if err != nil && o.Err == nil {
		o.Err = fmt.Errorf("%s: response: %v: %w", adm.c.Tool, err, catalog.ErrIO)
	}
	ans := answer{Summary: sum, session: adm.session, detail: scrubDetail(resp.layer, o.Err), logErr: r.redact(o.Err)}
	ans.catches = resp.layer.Catches
	// The input is not output: what the audit record keeps of it is
	// scrubbed with the session's placeholders, and not counted as the
	// second layer's catches.
	ans.args = scrubArgs(&respond.Layer{Scrubber: r.scrubber, Vault: resp.layer.Vault}, adm.c.Input)
	return ans
}

// closePage cuts the page a continuation asks for from its stored output,
// scrubbed with the session's vault, and sends it.
func (r *responder) closePage(resp *response) answer {
	adm := resp.adm
	c := adm.c
	cut := func(sess string) (respond.PageResult, error) {
		resp.layer = &respond.Layer{Scrubber: r.scrubber, Vault: r.vaults.get(sess)}
		return respond.Page(r.pages, resp.layer, r.counter, sess, c.Continue, adm.tokens, resp.refill(resp.layer.Vault))
	}
	sess := adm.session
	pg, err := cut(sess)
	if errors.Is(err, pages.ErrUnknown) && c.Session != "" {
		// The caller named a session, but the output may be in the one its
		// process gets by not naming any: a wrapped MCP server's cut result
		// is kept in the agent's session, and contextd's MCP face, a child
		// of the same agent, names a session per connection. That session
		// is the caller's own (it could ask without a name), so looking
		// there too opens nothing to it.
		if own, derr := session.Derive(int(adm.cred.PID)); derr == nil && own != sess {
			if pg2, err2 := cut(own); !errors.Is(err2, pages.ErrUnknown) {
				pg, err, sess = pg2, err2, own
			}
		}
	}
	ans := answer{session: sess, refilled: resp.refilled}
	if err != nil {
		var class *catalog.Class
		switch {
		case errors.Is(err, pages.ErrUnknown):
			err = fmt.Errorf("continuation %q (references expire, and belong to the session that made them): %w", c.Continue, catalog.ErrUnknownContinuation)
		case errors.As(err, &class):
			err = fmt.Errorf("continuation %q: %w", c.Continue, err) // the sandboxed read's own failure
		default:
			err = fmt.Errorf("continuation %q: %v: %w", c.Continue, err, catalog.ErrIO)
		}
		ans.err = err
		return ans
	}
	if ans.err = resp.send(pg.Data); ans.err != nil {
		return ans
	}
	ans.Summary = respond.Summary{Bytes: int64(len(pg.Data)), TokensUsed: pg.Tokens, Truncated: pg.HasMore, Continue: pg.Next}
	ans.catches = resp.layer.Catches
	return ans
}

// deliver is the response's Send: a write the caller cannot take means it
// is gone.
func deliver(out func([]byte) error) func([]byte) error {
	return func(b []byte) error {
		if err := out(b); err != nil {
			return fmt.Errorf("send output: %v: %w", err, catalog.ErrConnectionLost)
		}
		return nil
	}
}

// scrubDetail is a tool's failure as the caller gets it, its message
// scrubbed: it may quote the input (a path, a command).
func scrubDetail(l *respond.Layer, err error) *catalog.Detail {
	d := catalog.ToDetail(err)
	if d != nil {
		d.Message = string(l.Scrub([]byte(d.Message)))
	}
	return d
}

// scrubArgs is a call's input as the audit records it: scrubbed, and a
// safe_write's content reduced to its size.
func scrubArgs(l *respond.Layer, input []byte) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(input, &m) == nil {
		if c, ok := m["content"].(string); ok {
			m["content"] = "(" + strconv.Itoa(len(c)) + " bytes)"
			if b, err := json.Marshal(m); err == nil {
				input = b
			}
		}
	}
	out := l.Scrub(input)
	if !json.Valid(out) {
		b, _ := json.Marshal(string(out))
		return b
	}
	return out
}

// redact returns err with any secret in its message replaced by
// [REDACTED:<rule>]; the class (and so the code and exit status) is kept.
// It is for what is not a call's output (a refusal, the daemon's log), so
// no session's placeholder is made for it.
func (r *responder) redact(err error) error {
	if err == nil || r == nil || r.scrubber == nil {
		return err
	}
	msg := []byte(err.Error())
	fs := r.scrubber.Find(msg)
	if len(fs) == 0 {
		return err
	}
	out := scrub.Replace(msg, fs, func(f scrub.Finding) string { return "[REDACTED:" + f.Rule + "]" })
	return &redactedError{msg: string(out), err: err}
}

// redactedError is an error whose message had secrets taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// vaults holds each session's vault (placeholder -> secret), in memory only:
// never on disk, never in a log. They live as long as the daemon; a daemon
// that exits when idle forgets them, and safe_write then writes placeholders
// as they are (and says so).
type vaults struct {
	mu sync.Mutex
	m  map[string]*scrub.Vault
}

func (v *vaults) get(session string) *scrub.Vault {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]*scrub.Vault{}
	}
	vt, ok := v.m[session]
	if !ok {
		vt = scrub.NewVault()
		v.m[session] = vt
	}
	return vt
}
