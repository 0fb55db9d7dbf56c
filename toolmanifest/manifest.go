// Package toolmanifest reads contextd-tool.toml, a plugin tool's manifest: what the tool is, how it is built and run, and what it may touch.
package toolmanifest

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/catalog"
)

// FileName is the manifest's name at the root of a tool's tree.
const FileName = "contextd-tool.toml"

// MaxSize bounds a manifest file: it is read from a tree fetched from
// anywhere, before anything else of it is trusted.
const MaxSize = 64 << 10

// Manifest is a parsed, validated contextd-tool.toml. Every path in it is
// clean; the relative ones stay inside the tool's root.
type Manifest struct {
	Name        string // the tool's name: its symlink, its MCP tool
	Version     string // free text shown in `tool list` and the audit; may be empty
	Description string // one line
	Schema      Schema // the input schema; it becomes schema.json
	Doc         string // TOOL.md, relative to the root
	Build       *Build // nil: nothing to build
	Run         Run
	Permissions Perms
}

// Build is run once, at install, in a sandbox on the tool's tree.
type Build struct {
	// Command is the argv, run in the tool's root; its program is looked
	// up on the sandbox's PATH.
	Command []string
	// Toolchains name the home presets the build needs (their caches and
	// configuration); the build's egress is their registries and nothing
	// else. The caller checks the names against the presets it has.
	Toolchains []string
}

// Run is how each instance of the plugin is started.
type Run struct {
	// Command is the argv; its program is a path relative to the tool's
	// root (an interpreted tool names its script, with a #! line).
	Command []string
}

// Access is how much of the workspace a tool sees.
type Access int

// The workspace access levels, in increasing order.
const (
	AccessNone Access = iota
	AccessReadOnly
	AccessReadWrite
)

var accessNames = []string{"none", "read-only", "read-write"}

func (a Access) String() string {
	if a < 0 || int(a) >= len(accessNames) {
		return fmt.Sprintf("Access(%d)", int(a))
	}
	return accessNames[a]
}

func parseAccess(s string) (Access, bool) {
	for i, n := range accessNames {
		if s == n {
			return Access(i), true
		}
	}
	return 0, false
}

// Perms are what a running instance of the tool may touch.
type Perms struct {
	Workspace Access
	// ReadOnly are extra host paths shown read-only: absolute and clean.
	ReadOnly []string
	// Egress are egress rules, "HOST[:PORT] [METHOD,...]", kept as
	// written. Parse checks only their shape; the caller compiles them with
	// the egress proxy's rule parser, which this leaf package cannot link.
	Egress []string
	// Credentials name variables of the daemon's environment the tool sees
	// as placeholders, as safe_bash does.
	Credentials []string
	// Host are the daemon's services the tool may use during a call
	// beyond scrubbing and logging, which every tool has: HostMemoryRead,
	// HostMemoryWrite, HostCheckpoints.
	Host    []string
	Memory  uint64 // bytes, for the whole instance
	Tasks   uint64 // processes and threads of the instance
	Timeout time.Duration
}

// The daemon's services a tool may ask for in permissions.host.
const (
	// HostMemoryRead: search the project's (and the global) memories.
	HostMemoryRead = "memory-read"
	// HostMemoryWrite: store memories in the project, which later
	// sessions' agents read.
	HostMemoryWrite = "memory-write"
	// HostCheckpoints: save checkpoints in the project, and restore its
	// checkpoints by id.
	HostCheckpoints = "checkpoints"
)

// HostServices are the values of permissions.host.
var HostServices = []string{HostMemoryRead, HostMemoryWrite, HostCheckpoints}

// Defaults and bounds of the limits. The minima are those of a sandboxed
// tool in the configuration; the maxima keep a typo from asking for the
// whole machine.
const (
	DefaultMemory  = 256 << 20
	MinMemory      = 16 << 20
	MaxMemory      = 64 << 30
	DefaultTasks   = 64
	MinTasks       = 8
	MaxTasks       = 4096
	DefaultTimeout = 60 * time.Second
	MinTimeout     = time.Second
	MaxTimeout     = time.Hour
)

// file mirrors the TOML text; Parse checks it and turns it into a Manifest.
type file struct {
	Name        string     `toml:"name"`
	Version     string     `toml:"version,omitempty"`
	Description string     `toml:"description"`
	Schema      any        `toml:"schema"`
	Doc         string     `toml:"doc,omitempty"`
	Build       *fileBuild `toml:"build,omitempty"`
	Run         fileRun    `toml:"run"`
	Permissions filePerms  `toml:"permissions"`
}

type fileBuild struct {
	Command    []string `toml:"command"`
	Toolchains []string `toml:"toolchains,omitempty"`
}

type fileRun struct {
	Command []string `toml:"command"`
}

type filePerms struct {
	Workspace   string   `toml:"workspace,omitempty"`
	ReadOnly    []string `toml:"read_only,omitempty"`
	Egress      []string `toml:"egress,omitempty"`
	Credentials []string `toml:"credentials,omitempty"`
	Host        []string `toml:"host,omitempty"`
	Memory      any      `toml:"memory,omitempty"`
	Tasks       *int64   `toml:"tasks,omitempty"`
	Timeout     string   `toml:"timeout,omitempty"`
}

// Parse reads a manifest strictly: an unknown key, a missing one or a value
// out of its bounds is an error wrapping catalog.ErrBadInput that names the
// key and says what to write instead.
func Parse(data []byte) (*Manifest, error) {
	if len(data) > MaxSize {
		return nil, bad("", "the file is %d bytes; a manifest holds at most %d", len(data), MaxSize)
	}
	var f file
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", FileName, tomlMessage(err), catalog.ErrBadInput)
	}
	// A schema written as a table is JSON Schema, whose keys are its own.
	var keys []string
	for _, k := range md.Undecoded() {
		if k[0] != "schema" {
			keys = append(keys, k.String())
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		return nil, bad(keys[0], "unknown key; remove it or fix its spelling (the keys are name, version, description, schema, doc, and the tables build, run and permissions)")
	}
	return f.manifest()
}

// tomlMessage is the decoder's error with its position, on one line.
func tomlMessage(err error) string {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d: %s", pe.Position.Line, pe.Message)
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// bad is a manifest error about key.
func bad(key, format string, args ...any) error {
	where := FileName
	if key != "" {
		where += ": " + key
	}
	return fmt.Errorf("%s: %s: %w", where, fmt.Sprintf(format, args...), catalog.ErrBadInput)
}

func (f *file) manifest() (*Manifest, error) {
	m := &Manifest{}
	var err error
	if m.Name, err = checkName(f.Name); err != nil {
		return nil, err
	}
	if m.Version, err = checkLine("version", f.Version, 64, false); err != nil {
		return nil, err
	}
	if m.Description, err = checkLine("description", f.Description, 200, true); err != nil {
		return nil, err
	}
	if m.Schema, err = parseSchema(f.Schema); err != nil {
		return nil, err
	}
	doc := f.Doc
	if doc == "" {
		doc = "TOOL.md"
	}
	if m.Doc, err = checkRel("doc", doc); err != nil {
		return nil, err
	}
	if f.Build != nil {
		if m.Build, err = f.Build.build(); err != nil {
			return nil, err
		}
	}
	if m.Run, err = f.Run.run(); err != nil {
		return nil, err
	}
	if m.Permissions, err = f.Permissions.permissions(); err != nil {
		return nil, err
	}
	return m, nil
}

func (b *fileBuild) build() (*Build, error) {
	cmd, err := checkArgv("build.command", b.Command)
	if err != nil {
		return nil, err
	}
	tcs, err := checkNames("build.toolchains", b.Toolchains, toolchainName(), "a preset's name such as \"go\" or \"python\"")
	if err != nil {
		return nil, err
	}
	return &Build{Command: cmd, Toolchains: tcs}, nil
}

func (r *fileRun) run() (Run, error) {
	cmd, err := checkArgv("run.command", r.Command)
	if err != nil {
		return Run{}, err
	}
	if cmd[0], err = checkRel("run.command", cmd[0]); err != nil {
		return Run{}, err
	}
	return Run{Command: cmd}, nil
}

func (p *filePerms) permissions() (Perms, error) {
	out := Perms{Memory: DefaultMemory, Tasks: DefaultTasks, Timeout: DefaultTimeout}
	ws := p.Workspace
	if ws == "" {
		ws = "none"
	}
	a, ok := parseAccess(ws)
	if !ok {
		return out, bad("permissions.workspace", "%q is not one of none, read-only, read-write", ws)
	}
	out.Workspace = a
	var err error
	if out.ReadOnly, err = checkHostPaths(p.ReadOnly); err != nil {
		return out, err
	}
	if out.Egress, err = checkEgress(p.Egress); err != nil {
		return out, err
	}
	if out.Credentials, err = checkNames("permissions.credentials", p.Credentials, envName(), "an environment variable's name such as GITHUB_TOKEN"); err != nil {
		return out, err
	}
	if out.Host, err = checkList("permissions.host", p.Host, func(h string) (string, error) {
		if !slices.Contains(HostServices, h) {
			return "", bad("permissions.host", "%q is not one of %s", h, strings.Join(HostServices, ", "))
		}
		return h, nil
	}); err != nil {
		return out, err
	}
	if p.Memory != nil {
		if out.Memory, err = parseMemory(p.Memory); err != nil {
			return out, err
		}
	}
	if p.Tasks != nil {
		n := *p.Tasks
		if n < MinTasks || n > MaxTasks {
			return out, bad("permissions.tasks", "%d is not between %d and %d", n, MinTasks, MaxTasks)
		}
		out.Tasks = uint64(n)
	}
	if p.Timeout != "" {
		if out.Timeout, err = parseTimeout(p.Timeout); err != nil {
			return out, err
		}
	}
	return out, nil
}
