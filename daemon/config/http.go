package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// HTTP configures the HTTP API (docs/http.md): its Unix socket, the
// optional loopback TCP listener and the bounds of a request.
type HTTP struct {
	// Socket is the path the HTTP API binds when not socket-activated.
	// Empty: $XDG_RUNTIME_DIR/contextd/http.sock.
	Socket string `toml:"socket"`
	// TCP is a loopback "HOST:PORT" to listen on as well, with a bearer
	// token; empty: no TCP listener. configcheck refuses a host that is not
	// loopback.
	TCP string `toml:"tcp"`
	// AllowedOrigins are the browser origins ("scheme://host[:port]")
	// whose requests are served; any other Origin is refused.
	AllowedOrigins []string `toml:"allowed_origins"`
	// MaxBodyBytes bounds one request's body.
	MaxBodyBytes Size `toml:"max_body_bytes"`
}

// Bounds of a request body, [http] and per automation.
const (
	MinBodyBytes = 1 << 10
	MaxBodyBytes = 256 << 20
)

func defaultHTTP() HTTP {
	return HTTP{AllowedOrigins: []string{}, MaxBodyBytes: 1 << 20}
}

func (h *HTTP) validate() error {
	if h.Socket != "" && !filepath.IsAbs(h.Socket) {
		return fmt.Errorf("http.socket = %q: must be an absolute path", h.Socket)
	}
	if h.TCP != "" {
		host, port, err := net.SplitHostPort(h.TCP)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("http.tcp = %q: must be HOST:PORT (port 1-65535), e.g. \"127.0.0.1:7070\"", h.TCP)
		}
	}
	for _, o := range h.AllowedOrigins {
		if err := checkOrigin(o); err != nil {
			return fmt.Errorf("http.allowed_origins: %q: %v", o, err)
		}
	}
	if h.MaxBodyBytes < MinBodyBytes || h.MaxBodyBytes > MaxBodyBytes {
		return fmt.Errorf("http.max_body_bytes = %d: must be between %d and %d", h.MaxBodyBytes, MinBodyBytes, MaxBodyBytes)
	}
	return nil
}

// checkOrigin accepts an origin as a browser sends it: an http or https
// scheme and a host, an optional port, nothing else. Origins are compared
// exactly, so a wildcard or a path would never match and is refused here.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme must be http or https")
	case u.Host == "" || strings.Contains(u.Host, "*"):
		return fmt.Errorf("needs one host, no wildcard")
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return fmt.Errorf("must be scheme://host[:port] only")
	case o != strings.ToLower(o):
		return fmt.Errorf("must be lower case, as browsers send it")
	}
	return nil
}

// Automation is one [[automations]] entry: a webhook that starts a
// sandboxed tool call. Plain data: daemon/automation compiles it (the
// secret file, the workspace, the tool, the templates) at load.
type Automation struct {
	// Name is the hook's path element: POST /v1/hooks/NAME.
	Name string `toml:"name"`
	// Workspace is the absolute path the call runs in.
	Workspace string `toml:"workspace"`
	// Scheme is how a delivery is signed: "github" (X-Hub-Signature-256)
	// or "standard" (Standard Webhooks).
	Scheme string `toml:"scheme"`
	// SecretFile holds the shared secret (0600, the user's own); the
	// secret itself is never written in the configuration.
	SecretFile string `toml:"secret_file"`
	// Window is how far a "standard" delivery's timestamp may be from the
	// daemon's clock, either way.
	Window Duration `toml:"window"`
	// Rate bounds the verified deliveries run: "10/m" is ten at once,
	// refilled at ten a minute.
	Rate Rate `toml:"rate"`
	// MaxBodyBytes bounds a delivery's body; 0: [http] max_body_bytes.
	MaxBodyBytes Size `toml:"max_body_bytes"`
	// Tool is the tool called, built-in or a plugin tool's name.
	Tool string `toml:"tool"`
	// Input is the call's input, as the tool's schema.json describes it.
	Input map[string]any `toml:"input"`
	// Env maps NAME to a path in the payload ("pull_request.head.ref"):
	// the value reaches the command as CONTEXTD_HOOK_NAME.
	Env map[string]string `toml:"env"`
	// Args maps a top-level input field to a path in the payload: the
	// value is put there whole, as JSON.
	Args map[string]string `toml:"args"`
	// Memory, when set, stores the call's answer as a memory.
	Memory *AutomationMemory `toml:"memory"`
}

// AutomationMemory is the memory an automation's run is stored as.
type AutomationMemory struct {
	Title       string `toml:"title"`
	Description string `toml:"description"`
}

// Defaults of an [[automations]] entry's optional keys.
const DefaultHookWindow = 5 * time.Minute

// DefaultHookRate is an automation's rate when it gives none.
var DefaultHookRate = Rate{Count: 10, Per: time.Minute}

// fillAutomations gives each automation the defaults of the keys it left
// out; a table of an array has no defaults of its own in the decoder.
func (c *Config) fillAutomations() {
	for i := range c.Automations {
		a := &c.Automations[i]
		if a.Window.Duration == 0 && a.Scheme != "github" {
			a.Window.Duration = DefaultHookWindow
		}
		if a.Rate.Count == 0 {
			a.Rate = DefaultHookRate
		}
		if a.MaxBodyBytes == 0 {
			a.MaxBodyBytes = c.HTTP.MaxBodyBytes
		}
	}
}

func (c *Config) validateAutomations() error {
	seen := map[string]bool{}
	for i, a := range c.Automations {
		key := fmt.Sprintf("automations[%d]", i)
		if a.Name != "" {
			key = "automations." + a.Name
		}
		if seen[a.Name] {
			return fmt.Errorf("%s: the name is used twice", key)
		}
		seen[a.Name] = true
		switch {
		case a.Scheme == "github" && a.Window.Duration != 0:
			return fmt.Errorf("%s.window: GitHub's deliveries carry no timestamp; window is for scheme \"standard\"", key)
		case a.Scheme != "github" && (a.Window.Duration < time.Second || a.Window.Duration > 24*time.Hour):
			return fmt.Errorf("%s.window = %s: must be between 1s and 24h", key, a.Window)
		case a.MaxBodyBytes < MinBodyBytes || a.MaxBodyBytes > MaxBodyBytes:
			return fmt.Errorf("%s.max_body_bytes = %d: must be between %d and %d", key, a.MaxBodyBytes, MinBodyBytes, MaxBodyBytes)
		case a.Memory != nil && strings.TrimSpace(a.Memory.Title) == "":
			return fmt.Errorf("%s.memory.title: a memory needs a title", key)
		}
	}
	return nil
}

// Rate is a count per period, written "10/m" (also "/s", "/h", or a
// duration: "3/30s"): that many at once, refilled evenly over the period.
type Rate struct {
	Count int
	Per   time.Duration
}

// MaxRateCount bounds a rate's count.
const MaxRateCount = 100000

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rate) UnmarshalText(b []byte) error {
	n, per, ok := strings.Cut(string(b), "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 || count > MaxRateCount {
		return fmt.Errorf("rate %q: must be COUNT/PERIOD with a count from 1 to %d, e.g. \"10/m\"", b, MaxRateCount)
	}
	d, ok := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[per]
	if !ok {
		if d, err = time.ParseDuration(per); err != nil || d < time.Second || d > 24*time.Hour {
			return fmt.Errorf("rate %q: the period must be s, m, h or a duration from 1s to 24h", b)
		}
	}
	*r = Rate{Count: count, Per: d}
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (r Rate) MarshalText() ([]byte, error) {
	per := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	if per == "" {
		per = r.Per.String()
	}
	return []byte(strconv.Itoa(r.Count) + "/" + per), nil
}
