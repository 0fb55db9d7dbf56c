// Package automation compiles the [[automations]] of the configuration (the webhook's verifier from its secret file, the workspace, the tool call's template) and expands a verified payload into a call's input and environment, its values only ever as data.
package automation

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/webhook"
	"github.com/contextd/contextd/envallow"
	"github.com/contextd/contextd/toolspec"
)

// EnvPrefix starts the name of every variable an automation sets.
const EnvPrefix = envallow.HookPrefix

// Automation is one compiled [[automations]] entry.
type Automation struct {
	Name string
	// Workspace is the absolute, symlink-free path the call runs in.
	Workspace string
	Tool      string
	// Verifier checks a delivery's signature with the secret read at
	// Compile.
	Verifier webhook.Verifier
	// MaxBodyBytes bounds a delivery's body.
	MaxBodyBytes int64
	// Limiter bounds the verified deliveries run.
	Limiter *Limiter
	// Memory, when set, stores the call's answer as a memory.
	Memory *config.AutomationMemory

	input map[string]json.RawMessage // the template, in JSON
	env   []binding                  // by variable name, sorted
	args  []binding                  // by input field, sorted
}

// binding ties a variable name or an input field to a payload path.
type binding struct {
	key  string // the variable's full name, or the input field
	from string // the path as written, for warnings
	path []step
}

var (
	namePattern = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)
	envPattern  = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	// pluginName is a plugin tool's name (toolmanifest's rule); whether it
	// is installed is known only when the hook runs.
	pluginName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
)

// reservedEnv are the variables every run gets (FixedEnv).
var reservedEnv = []string{"NAME", "DELIVERY", "EVENT"}

// maxSecretBytes bounds a secret file: a secret is a line, not a document.
const maxSecretBytes = 4096

// Compile checks a and builds what a delivery needs. Errors wrap
// catalog.ErrConfig and name the key ("automations.ci.secret_file").
func Compile(a config.Automation) (*Automation, error) {
	if !namePattern.MatchString(a.Name) {
		return nil, fmt.Errorf("automations.name %q: must be 1 to 40 of a-z, 0-9 and -: %w", a.Name, catalog.ErrConfig)
	}
	out := &Automation{Name: a.Name, Tool: a.Tool, MaxBodyBytes: int64(a.MaxBodyBytes), Memory: a.Memory}
	fail := func(key, format string, args ...any) error {
		return fmt.Errorf("automations.%s.%s: %s: %w", a.Name, key, fmt.Sprintf(format, args...), catalog.ErrConfig)
	}
	var err error
	if out.Workspace, err = workspace(a.Workspace); err != nil {
		return nil, fail("workspace", "%v", err)
	}
	secret, err := readSecret(a.SecretFile)
	if err != nil {
		return nil, fail("secret_file", "%v", err)
	}
	switch a.Scheme {
	case "github":
		out.Verifier = webhook.GitHub{Secret: secret}
	case "standard":
		key, err := webhook.DecodeStandardSecret(string(secret))
		if err != nil {
			return nil, fail("secret_file", "%s: %v", a.SecretFile, err)
		}
		out.Verifier = webhook.Standard{Secret: key, Window: a.Window.Duration}
	default:
		return nil, fail("scheme", "%q: must be \"github\" or \"standard\"", a.Scheme)
	}
	if a.Rate.Count < 1 || a.Rate.Per <= 0 {
		return nil, fail("rate", "%d per %s: must be at least one per period", a.Rate.Count, a.Rate.Per)
	}
	out.Limiter = NewLimiter(a.Rate)
	if err := out.compileCall(a, fail); err != nil {
		return nil, err
	}
	return out, nil
}

func workspace(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q: must be an absolute path", p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%q is not a directory", p)
	}
	if real == "/" {
		return "", fmt.Errorf("%q: / is never a workspace", p)
	}
	return real, nil
}

// readSecret reads a secret file that only its owner, the daemon's user,
// can read, and that no link redirects: opened without following a final
// symlink, then checked on the open file so that it cannot be swapped
// between the check and the read. A final newline is not part of the
// secret.
func readSecret(p string) ([]byte, error) {
	if p == "" {
		return nil, fmt.Errorf("required: the file holding the webhook's secret")
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, err
		}
		p = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("%q: must be absolute or start with ~/", p)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symlink; name the file itself", p)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", p)
	case st == nil || int(st.Uid) != os.Getuid():
		return nil, fmt.Errorf("%s is not yours: the secret file must belong to the user contextd runs as", p)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s has mode %04o: others may read it; chmod 600 it (and consider the secret leaked)", p, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecretBytes {
		return nil, fmt.Errorf("%s is over %d bytes: a secret file holds the secret alone", p, maxSecretBytes)
	}
	b = []byte(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"))
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", p)
	}
	return b, nil
}

// compileCall checks the tool and the templates: the input as JSON, env
// names and args fields, every path's syntax, and for a built-in tool the
// fields its schema.json allows and requires.
func (out *Automation) compileCall(a config.Automation, fail func(key, format string, args ...any) error) error {
	spec, builtin := toolspec.Get(a.Tool)
	switch {
	case a.Tool == "branch" || a.Tool == "return":
		return fail("tool", "%q: a hook's call has no session to fold", a.Tool)
	case !builtin && !pluginName.MatchString(a.Tool):
		return fail("tool", "%q is neither a built-in tool nor a plugin tool's name", a.Tool)
	}
	raw, err := json.Marshal(a.Input)
	if err != nil {
		return fail("input", "%v", err)
	}
	out.input = map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &out.input); err != nil {
		return fail("input", "%v", err)
	}
	if len(a.Env) > 0 && builtin && a.Tool != "safe_bash" {
		return fail("env", "%s runs no command that could read variables; use args", a.Tool)
	}
	for _, name := range slices.Sorted(maps.Keys(a.Env)) {
		switch {
		case !envPattern.MatchString(name):
			return fail("env."+name, "the name must be [A-Z][A-Z0-9_]*, at most 64")
		case slices.Contains(reservedEnv, name):
			return fail("env."+name, "%s%s is always set (to the automation, the delivery id, the event)", EnvPrefix, name)
		case envallow.LooksLikeCredential(EnvPrefix+name, ""):
			return fail("env."+name, "a variable named like a credential is never passed to a command; choose another name")
		}
		path, err := parsePath(a.Env[name])
		if err != nil {
			return fail("env."+name, "%v", err)
		}
		out.env = append(out.env, binding{key: EnvPrefix + name, from: a.Env[name], path: path})
	}
	if len(a.Args) > 0 && a.Tool == "safe_bash" {
		return fail("args", "safe_bash's input is a shell line, which a payload value must never be part of; pass it with env and quote \"$%sNAME\" in the command", EnvPrefix)
	}
	for _, field := range slices.Sorted(maps.Keys(a.Args)) {
		if field == "" {
			return fail("args", "an empty field name")
		}
		path, err := parsePath(a.Args[field])
		if err != nil {
			return fail("args."+field, "%v", err)
		}
		out.args = append(out.args, binding{key: field, from: a.Args[field], path: path})
	}
	if builtin {
		return out.checkSchema(spec.Schema, fail)
	}
	return nil
}

// checkSchema refuses, at load, an input a built-in tool would refuse at
// every run: a field its schema does not have, or a required one missing.
// The values' types are checked by the tool when it runs.
func (out *Automation) checkSchema(schema []byte, fail func(key, format string, args ...any) error) error {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return fail("tool", "%s's schema: %v", out.Tool, err)
	}
	given := map[string]bool{}
	for f := range out.input {
		given[f] = true
	}
	for _, b := range out.args {
		given[b.key] = true
	}
	for _, f := range slices.Sorted(maps.Keys(given)) {
		if _, ok := s.Properties[f]; !ok {
			return fail("input", "%s has no field %q (its fields: %s)", out.Tool, f, strings.Join(slices.Sorted(maps.Keys(s.Properties)), ", "))
		}
	}
	for _, f := range s.Required {
		if !given[f] {
			return fail("input", "%s needs %q, from input or args", out.Tool, f)
		}
	}
	return nil
}

// FixedEnv is what every run of the automation gets besides its env
// bindings: its name, the delivery id and the event (empty for Standard
// Webhooks). The verifier has checked id and event are printable ASCII.
func (out *Automation) FixedEnv(d webhook.Delivery) map[string]string {
	return map[string]string{EnvPrefix + "NAME": out.Name, EnvPrefix + "DELIVERY": d.ID, EnvPrefix + "EVENT": d.Event}
}
