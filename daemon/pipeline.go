package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/scrub"
)

// setupPipeline builds what every response goes through: the scrubber (with
// the user's extra gitleaks rules), the token counter, the page store and the
// audit log. A scrubber that cannot be built is fatal: no call may go out
// unscrubbed. The audit log is not: a call still runs, and the daemon's log
// says that it is not audited.
func (s *service) setupPipeline(cfg *config.Config) error {
	rules, err := gitleaksRules(cfg.Scrub.GitleaksConfig)
	if err != nil {
		return err
	}
	sc, err := scrub.New(&scrub.Options{ExtraConfig: rules})
	if err != nil {
		return fmt.Errorf("scrub.gitleaks_config: %v: %w", err, catalog.ErrConfig)
	}
	s.scrubber, s.rules, s.counter = sc, rules, budget.Default()
	if cfg.Salience.Enabled {
		if s.salience, err = configcheck.Salience(cfg.Salience); err != nil {
			return fmt.Errorf("%v: %w", err, catalog.ErrConfig)
		}
	}
	st, err := pages.Open(&pages.Options{TTL: cfg.Pages.TTL.Duration, MaxTotal: int64(cfg.Pages.MaxTotal)})
	if err != nil {
		return fmt.Errorf("page store: %v: %w", err, catalog.ErrIO)
	}
	s.store = st
	lg, err := audit.Open(&audit.Options{MaxFileSize: int64(cfg.Audit.MaxFileSize), Logger: s.opts.Logger})
	if err != nil {
		s.opts.Logger.Error("audit log unavailable: calls are not audited", "err", err)
	} else {
		s.audit = lg
	}
	// The vocabulary takes a moment to load; not on the first call's path.
	go s.counter.Load()
	return nil
}

func (s *service) closePipeline() {
	if s.audit != nil {
		s.audit.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}

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

// budgetFor is the call's token budget: the tool's configured one, or less
// if the call asks for less. More is not given; the call is told.
func (s *service) budgetFor(tool string, asked int) (int, string, error) {
	ceiling := s.opts.Config.MaxTokens(tool)
	switch {
	case asked < 0:
		return 0, "", fmt.Errorf("max_tokens %d: %w", asked, catalog.ErrBadInput)
	case asked == 0:
		return ceiling, "", nil
	case asked > ceiling:
		return ceiling, fmt.Sprintf("max_tokens %d is above %s's configured budget; %d used", asked, tool, ceiling), nil
	}
	return max(asked, budget.MinBudget), "", nil
}

// scrubDetail is a tool's failure as the caller gets it, its message
// scrubbed: it may quote the input (a path, a command).
func (s *service) scrubDetail(l *respond.Layer, err error) *catalog.Detail {
	d := catalog.ToDetail(err)
	if d != nil {
		d.Message = string(l.Scrub([]byte(d.Message)))
	}
	return d
}

// scrubArgs is a call's input as the audit records it: scrubbed, and a
// safe_write's content reduced to its size.
func (s *service) scrubArgs(l *respond.Layer, input []byte) json.RawMessage {
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
	r.DurationMS = time.Since(start).Milliseconds()
	if r.Session == "" {
		r.Session = c.Session
	}
	if err := s.audit.Append(r); err != nil {
		s.opts.Logger.Error("audit record not written", "tool", r.Tool, "err", err)
	}
}

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
