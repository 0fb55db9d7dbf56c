package install

// Foreign configuration: what an agent's project files hold that contextd did
// not write. Codex and Gemini CLI run a project's MCP servers, notify
// commands, hooks and extensions once the project is trusted, which install
// does; OpenCode runs them always. An agent in the sandbox may have planted
// such entries (a project set up for Claude, where .codex/ did not exist), so
// install adopts them, and trusts the project, only with the user's consent:
// it lists them and asks on a terminal, and without one refuses unless --yes.
//
// Foreign is everything in the agent's configuration file other than the
// exact entries install writes there, and every file other than that one in
// the agent's project directory (.codex/, .gemini/, .opencode/). A file stops
// being foreign when its content is exactly what the user last accepted or
// install last wrote: a record of those digests is kept in the user's state
// directory, outside every project, where the sandbox cannot forge it.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// agentDirs are the project directories each agent reads more configuration
// from (extensions, plugins, prompts): files install does not write.
var agentDirs = map[string]string{
	AgentCodex:    ".codex",
	AgentGemini:   ".gemini",
	AgentOpenCode: ".opencode",
}

// maxForeignShown caps the list shown; the count of the rest follows.
const maxForeignShown = 40

// secretKey marks keys whose values are not echoed in full (env, headers,
// tokens): the user sees the key and where it is.
var secretKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(token|secret|passw|key|auth|cookie|credential|env|header)`)
})

// shown renders one foreign entry: its path in the file and its value, cut
// short, a value under a secret-looking key hidden.
func shown(file, path, value string) string {
	value = strings.Join(strings.Fields(value), " ")
	if secretKey().MatchString(path) {
		value = fmt.Sprintf("(%d bytes, not shown)", len(value))
	} else if len(value) > 100 {
		value = value[:100] + "..."
	}
	return fmt.Sprintf("%s: %s = %s", file, path, value)
}

// foreignTOML lists the leaves of Codex's config.toml that are not the
// entries install writes.
func foreignTOML(file, src, proxy string) []string {
	d, err := parseTOML(src)
	if err != nil {
		return []string{file + ": (not TOML contextd can read)"}
	}
	own := map[string]any{"sandbox_mode": "read-only",
		"mcp_servers.contextd.command": proxy, "mcp_servers.contextd.args": []any{"mcp"}}
	for _, k := range CodexFeaturesOff {
		own["features."+k] = false
	}
	var out []string
	var walkVal func(path string, v any)
	walkVal = func(path string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			keys := slices.Sorted(mapKeys(m))
			for _, k := range keys {
				walkVal(path+"."+k, m[k])
			}
			return
		}
		if want, ok := own[strings.TrimPrefix(path, ".")]; ok && reflect.DeepEqual(v, want) {
			return
		}
		if _, ok := v.(map[string]any); ok {
			return // an empty table sets nothing
		}
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		out = append(out, shown(file, strings.TrimPrefix(path, "."), string(b)))
	}
	walkVal("", d.root.plain())
	return out
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// foreignJSON lists the members of a JSON file that are not the entries
// install writes: own maps a dotted path to the value install writes there
// (compared as JSON); elems maps the path of an array to the elements
// install adds to it.
func foreignJSON(file string, src []byte, own map[string][]byte, elems map[string][]string) []string {
	n, err := parseJSON(src, true)
	if err != nil {
		return []string{file + ": (not JSON contextd can read)"}
	}
	var out []string
	var walkNode func(path string, n *jnode)
	walkNode = func(path string, n *jnode) {
		if want, ok := own[path]; ok {
			if sameJSON(src, n, want) {
				return
			}
			out = append(out, shown(file, path, oneLine(src[n.start:n.end])))
			return
		}
		switch {
		case n.kind == '{':
			for _, m := range n.members {
				p := m.key
				if path != "" {
					p = path + "." + m.key
				}
				walkNode(p, m.val)
			}
		case n.kind == '[' && elems[path] != nil:
			for _, el := range n.elems {
				var s string
				if el.kind != '"' || json.Unmarshal(src[el.start:el.end], &s) != nil || !slices.Contains(elems[path], s) {
					out = append(out, shown(file, path+"[]", oneLine(src[el.start:el.end])))
				}
			}
		default:
			out = append(out, shown(file, path, oneLine(src[n.start:n.end])))
		}
	}
	walkNode("", n)
	return out
}

// foreignIn lists the foreign entries of the configuration file install
// planned to edit for agent (its content before the edit).
func foreignIn(agent string, e *fileEdit, proxy string) []string {
	switch agent {
	case AgentCodex:
		return foreignTOML(e.rel, string(e.orig), proxy)
	case AgentGemini:
		own := map[string][]byte{"mcpServers." + MCPServerName: geminiMCPValue(proxy)}
		return foreignJSON(e.rel, e.orig, own, map[string][]string{"tools.exclude": GeminiExcluded})
	case AgentOpenCode:
		schema, _ := marshalNoEscape("https://opencode.ai/config.json")
		own := map[string][]byte{"$schema": schema,
			"mcp." + MCPServerName: openCodeV1Value(proxy), "mcp.servers." + MCPServerName: openCodeV2Value(proxy)}
		for _, t := range OpenCodeDenied {
			own["permission."+t] = []byte(`"deny"`)
		}
		return foreignJSON(e.rel, e.orig, own, nil)
	}
	return nil
}

// agentDirFiles lists the files under the agent's project directory (depth
// first, at most limit), each found beneath the project root; more says
// there were more than limit.
func agentDirFiles(root, dir string, limit int) (out []string, more bool, err error) {
	d, err := openProjectDir(root, dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer d.close()
	var walk func(d *dirAt, rel string, depth int) error
	walk = func(d *dirAt, rel string, depth int) error {
		fd, err := unix.Dup(d.fd)
		if err != nil {
			return fmt.Errorf("list %s: %v: %w", rel, err, catalog.ErrIO)
		}
		f := os.NewFile(uintptr(fd), rel)
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return fmt.Errorf("list %s: %v: %w", rel, err, catalog.ErrIO)
		}
		for _, ent := range ents {
			if len(out) >= limit {
				more = true
				return nil
			}
			p := filepath.Join(rel, ent.Name())
			if ent.IsDir() && depth < 8 {
				sub, err := walkDir(d, ent.Name(), false)
				if err != nil {
					return err
				}
				err = walk(sub, p, depth+1)
				sub.close()
				if err != nil {
					return err
				}
				continue
			}
			out = append(out, p)
		}
		return nil
	}
	err = walk(d, dir, 0)
	return out, more, err
}

// seenRecord is what install last wrote or the user last accepted: the
// SHA-256 of each file, by project root and path.
type seenRecord struct {
	Version int                          `json:"version"`
	Files   map[string]map[string]string `json:"files"` // root -> path -> sha256
}

// stateDir is where the record of what install wrote or the user accepted
// lives, outside every project; "" when neither XDG_STATE_HOME nor HOME is
// an absolute path (a relative one would put the record in the current
// directory, the project, where a sandboxed call could forge it).
func (o *Options) stateDir() string {
	if o.StateDir != "" {
		return o.StateDir
	}
	if s := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "contextd")
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "contextd")
	}
	return ""
}

const seenName = "install-seen.json"

// maxAgentDirFiles bounds the files of an agent's directory install reads
// to check them.
const maxAgentDirFiles = 1000

func (o *Options) readSeen() *seenRecord {
	r := &seenRecord{Version: 1, Files: map[string]map[string]string{}}
	dir := o.stateDir()
	if dir == "" {
		return r
	}
	b, err := os.ReadFile(filepath.Join(dir, seenName))
	if err != nil || json.Unmarshal(b, r) != nil || r.Files == nil {
		// No record (or a damaged one) proves nothing: everything is asked about.
		return &seenRecord{Version: 1, Files: map[string]map[string]string{}}
	}
	return r
}

func (o *Options) writeSeen(r *seenRecord) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %v: %w", seenName, err, catalog.ErrInternal)
	}
	dir := o.stateDir()
	if dir == "" {
		return fmt.Errorf("no place outside the project for %s: HOME and XDG_STATE_HOME are unset or relative; set HOME: %w", seenName, catalog.ErrConfig)
	}
	return writeAtomic(filepath.Join(dir, seenName), append(b, '\n'))
}

// checkForeign finds the foreign entries of the agents' files install is about
// to adopt and gets the user's consent for them (Yes, or Confirm); without it
// the error wraps ErrConflict and nothing was written. It returns the digests
// to record once install wrote its files.
func checkForeign(root string, o Options, agents []string, cfg map[string]*fileEdit, byFileOnly map[string]string) (map[string]string, error) {
	seen := o.readSeen().Files[root]
	accepted := map[string]string{}
	var foreign []string
	for _, a := range agents {
		if p, ok := byFileOnly[a]; ok && agentDirs[a] != "" {
			// Not asked again once install wrote the agent's file and it is
			// unchanged since.
			if e := cfg[a]; e == nil || !e.exists || seen[e.rel] != sum(e.orig) {
				foreign = append(foreign, fmt.Sprintf("%s: found in the project, but no %s on PATH: wiring %s only because of it (and trusting the project for it)", p, a, a))
			}
		}
		if e := cfg[a]; e != nil && e.exists {
			if seen[e.rel] == "" || seen[e.rel] != sum(e.orig) {
				foreign = append(foreign, foreignIn(a, e, o.Proxy)...)
			}
		}
		// OpenCode merges opencode.json and opencode.jsonc: the one install
		// does not edit is read too, and checked like it.
		if e := cfg[a]; a == AgentOpenCode && e != nil {
			other := "opencode.json"
			if e.rel == other {
				other = "opencode.jsonc"
			}
			if b, err := readIn(root, other); err == nil {
				h := sum(b)
				if seen[other] != h {
					foreign = append(foreign, foreignIn(a, &fileEdit{rel: other, orig: b, exists: true}, o.Proxy)...)
				}
				accepted[other] = h
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		dir, ok := agentDirs[a]
		if !ok {
			continue
		}
		files, more, err := agentDirFiles(root, dir, maxAgentDirFiles)
		if err != nil {
			return nil, err
		}
		if more {
			// Past the limit nothing is looked at, so nothing there can be
			// taken as accepted: asked again on every run.
			foreign = append(foreign, fmt.Sprintf("%s: more than %d files, the rest not checked (it holds what %s runs: review it)", dir, maxAgentDirFiles, a))
		}
		for _, f := range files {
			if e := cfg[a]; e != nil && e.rel == f {
				continue
			}
			b, err := readIn(root, f)
			if err != nil && !errors.Is(err, catalog.ErrNotRegular) {
				return nil, err
			}
			h := sum(b)
			if err != nil {
				h = "not a regular file"
			}
			if seen[f] == h {
				accepted[f] = h
				continue
			}
			accepted[f] = h
			foreign = append(foreign, fmt.Sprintf("%s: a file %s reads from the project (its plugins, extensions, commands or settings)", f, a))
		}
	}
	if len(foreign) == 0 || o.Yes {
		return accepted, nil
	}
	if o.Confirm != nil && o.Confirm(foreign) {
		return accepted, nil
	}
	list := foreign
	if len(list) > maxForeignShown {
		list = append(slices.Clone(list[:maxForeignShown]), fmt.Sprintf("(and %d more)", len(foreign)-maxForeignShown))
	}
	return nil, fmt.Errorf("the project holds agent configuration contextd did not write, which the agent would run once install wires (and trusts) the project:\n  %s\n"+
		"it may have been planted by an agent; review it, then run install --yes to adopt it (or remove it, or install for one agent only with --agent); nothing was changed: %w",
		strings.Join(list, "\n  "), catalog.ErrConflict)
}

// recordSeen records the digests of the agents' files as install left them
// (and those the user accepted), so the next install does not ask again
// about what nobody changed since.
func recordSeen(root string, o Options, cfg map[string]*fileEdit, accepted map[string]string) error {
	r := o.readSeen()
	files := map[string]string{}
	for p, h := range accepted {
		files[p] = h
	}
	for _, e := range cfg {
		if e != nil && (e.exists || e.changed) {
			files[e.rel] = sum(e.out)
		}
	}
	if prev, ok := r.Files[root]; ok && reflect.DeepEqual(prev, files) || !ok && len(files) == 0 {
		return nil // nothing new: the state directory is left alone
	}
	r.Files[root] = files
	return o.writeSeen(r)
}

// forgetSeen drops the project's record (uninstall): a later install asks
// about whatever is there then.
func forgetSeen(root string, o Options) error {
	r := o.readSeen()
	if _, ok := r.Files[root]; !ok {
		return nil
	}
	delete(r.Files, root)
	return o.writeSeen(r)
}
