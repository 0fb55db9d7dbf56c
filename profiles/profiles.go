// Package profiles holds contextd's hand-written seccomp profiles, one per tool, and finds the one in force for a tool.
//
// The profiles are JSON files in this directory (format: package seccomp),
// embedded in the binary:
//
//   - safe_bash.json: arbitrary programs; a deny-list (default allow).
//   - safe_read.json, safe_write.json: the file tools, which run as the
//     contextd binary re-executed in tool mode; allowlists (default EPERM) of
//     what that Go program needs, including the execve that starts it.
//   - mcp-server.json: a third-party MCP server launched by `mcp wrap`;
//     safe_bash's deny-list and a few groups a server has no use for.
//   - plugin.json: a plugin tool (`contextd tool install`), kept warm per
//     workspace; mcp-server's groups, under a name of its own.
//   - tool_fetch.json, tool_build.json: the fetch of a plugin tool's source
//     (go-getter, and git under it) and its one-time build at install;
//     mcp-server's list, for the same reason: programs of unknown origin.
//   - no_exec.json: a small default-allow profile that forbids execve and
//     execveat. A file tool loads it first thing on start (filters stack, the
//     stricter answer wins), taking back the exec that its own profile had
//     to allow.
//
// A user or administrator can replace a profile with a file of the same name
// (see Load).
package profiles

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/contextd/contextd/seccomp"
)

//go:embed *.json
var embedded embed.FS

// ErrNoProfile: no profile exists for the tool, neither as a file nor
// embedded. The tool must not run (fail closed).
var ErrNoProfile = errors.New("no seccomp profile for tool")

// SystemDir is the administrator's directory of profiles.
const SystemDir = "/etc/contextd/profiles"

// systemDir is SystemDir, replaced by tests.
var systemDir = SystemDir

// Tools lists the tools with an embedded profile, sorted.
func Tools() []string {
	entries, _ := embedded.ReadDir(".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(names)
	return names
}

// EmbeddedJSON returns the embedded profile of tool as written.
func EmbeddedJSON(tool string) ([]byte, error) {
	if err := checkTool(tool); err != nil {
		return nil, err
	}
	data, err := embedded.ReadFile(tool + ".json")
	if err != nil {
		return nil, fmt.Errorf("%w %q (embedded: %s)", ErrNoProfile, tool, strings.Join(Tools(), ", "))
	}
	return data, nil
}

// Embedded returns the parsed embedded profile of tool.
func Embedded(tool string) (*seccomp.Profile, error) {
	data, err := EmbeddedJSON(tool)
	if err != nil {
		return nil, err
	}
	p, err := seccomp.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("embedded profile %s.json: %w", tool, err)
	}
	return p, nil
}

// Dirs returns the directories searched for <tool>.json, first match wins:
// $XDG_CONFIG_HOME/contextd/profiles (default ~/.config/contextd/profiles;
// a relative XDG_CONFIG_HOME is ignored, as the XDG spec says), then
// SystemDir. The user's directory is left out when neither XDG_CONFIG_HOME
// nor HOME is usable.
func Dirs() []string {
	var dirs []string
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(cfg) {
		cfg = ""
		if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
			cfg = filepath.Join(home, ".config")
		}
	}
	if cfg != "" {
		dirs = append(dirs, filepath.Join(cfg, "contextd", "profiles"))
	}
	return append(dirs, systemDir)
}

// Load returns the profile in force for tool and where it came from: the
// first of <dir>/<tool>.json for dir in Dirs() that exists, else the
// embedded one (source "embedded:<tool>.json").
//
// A file that exists but cannot be read or parsed is an error, never a
// reason to fall back to the embedded profile: whoever wrote it meant it to
// apply (fail closed). The tool name must be a plain identifier
// ([a-z0-9_-]+).
//
// The daemon hands the profile to the sandbox init as JSON: json.Marshal of
// the returned profile is a valid profile with the same meaning.
func Load(tool string) (*seccomp.Profile, string, error) {
	if err := checkTool(tool); err != nil {
		return nil, "", err
	}
	for _, dir := range Dirs() {
		path := filepath.Join(dir, tool+".json")
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, path, fmt.Errorf("seccomp profile %s: %w", path, err)
		}
		p, err := seccomp.Parse(data)
		if err != nil {
			return nil, path, fmt.Errorf("seccomp profile %s: %w", path, err)
		}
		return p, path, nil
	}
	p, err := Embedded(tool)
	if err != nil {
		return nil, "", err
	}
	return p, "embedded:" + tool + ".json", nil
}

func checkTool(tool string) error {
	ok := tool != ""
	for _, c := range tool {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%w: %q is not a tool name", ErrNoProfile, tool)
	}
	return nil
}

// Cache keeps each tool's profile, encoded for the sandbox, between calls: parsing
// and encoding cost more than a millisecond a call. Before every use it checks,
// with a stat per search directory, that the same file (or still none) would be
// loaded; an override that appears, changes or disappears takes effect on the
// next call. Safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	key    string // which file, with its size and mtime; "" for embedded
	source string
	json   []byte
}

// JSON returns the encoded profile in force for tool and where it came from.
func (c *Cache) JSON(tool string) ([]byte, string, error) {
	key, err := locate(tool)
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	e, ok := c.entries[tool]
	c.mu.Unlock()
	if ok && e.key == key {
		return e.json, e.source, nil
	}
	p, source, err := Load(tool)
	if err != nil {
		return nil, source, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, source, fmt.Errorf("seccomp profile %s: encode: %w", source, err)
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]cacheEntry{}
	}
	c.entries[tool] = cacheEntry{key: key, source: source, json: data}
	c.mu.Unlock()
	return data, source, nil
}

// locate names the file Load would read for tool, with its size and mtime, or
// "" when it would use the embedded profile.
func locate(tool string) (string, error) {
	if err := checkTool(tool); err != nil {
		return "", err
	}
	for _, dir := range Dirs() {
		path := filepath.Join(dir, tool+".json")
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("seccomp profile %s: %w", path, err)
		}
		return fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano()), nil
	}
	return "", nil
}
