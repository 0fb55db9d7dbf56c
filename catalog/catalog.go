// Package catalog is contextd's error catalog: the stable error codes, their exit
// statuses and gRPC codes, and the one place errors are translated between them
// (the protobuf form lives in package wire, which builds on this one).
package catalog

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Exit statuses from sysexits.h, used for contextd's own failures. A tool's own
// exit status (safe_bash) is passed through unchanged instead.
const (
	ExitOK          = 0
	ExitUsage       = 64  // EX_USAGE: the command line was wrong
	ExitDataErr     = 65  // EX_DATAERR: the input data was wrong
	ExitNoInput     = 66  // EX_NOINPUT: an input file does not exist
	ExitUnavailable = 69  // EX_UNAVAILABLE: the daemon cannot be reached
	ExitSoftware    = 70  // EX_SOFTWARE: internal error in contextd
	ExitCantCreat   = 73  // EX_CANTCREAT: an output file cannot be created
	ExitIOErr       = 74  // EX_IOERR: an I/O error
	ExitTempFail    = 75  // EX_TEMPFAIL: try again later
	ExitNoPerm      = 77  // EX_NOPERM: refused by policy
	ExitConfig      = 78  // EX_CONFIG: configuration error
	ExitTimeout     = 124 // as timeout(1): the tool's time limit ran out
	ExitInterrupted = 130 // as a shell reports SIGINT
)

// Status is a gRPC status code. The catalog keeps its own copy of the few it uses
// (their numbers are fixed by the gRPC specification) so that it does not link
// gRPC: the proxy, which starts on every tool call, uses the catalog and not gRPC.
type Status uint32

// The gRPC status codes the catalog maps to (numbers from the gRPC specification).
const (
	StatusOK                 Status = 0
	StatusCanceled           Status = 1
	StatusInvalidArgument    Status = 3
	StatusDeadlineExceeded   Status = 4
	StatusNotFound           Status = 5
	StatusAlreadyExists      Status = 6
	StatusPermissionDenied   Status = 7
	StatusResourceExhausted  Status = 8
	StatusFailedPrecondition Status = 9
	StatusInternal           Status = 13
	StatusUnavailable        Status = 14
)

// Class is one entry of the catalog. A *Class is itself an error, so it is used as a
// sentinel: wrap it with %w and test with errors.Is.
type Class struct {
	Code string // stable identifier, "CTXD-Exxx"; never reused or renumbered
	Name string // short lower-case description, used as the error text
	Exit int    // exit status of the proxy and of contextd's own commands
	GRPC Status // gRPC status code when the error is a protocol failure
	Hint string // what the user or agent should do about it
}

func (c *Class) Error() string { return c.Name }

var registry = map[string]*Class{}

func define(code, name string, exit int, grpc Status, hint string) *Class {
	if _, dup := registry[code]; dup {
		panic("catalog: duplicate code " + code)
	}
	c := &Class{Code: code, Name: name, Exit: exit, GRPC: grpc, Hint: hint}
	registry[code] = c
	return c
}

// The catalog. Codes are grouped by tens: 00x command line and input, 01x reaching
// the daemon, 02x files and the workspace, 03x running commands, 04x continuation,
// 05x contextd itself, 06x configuration, 07x state services, 08x installation,
// 09x plugin tools, 10x the HTTP API.
var (
	ErrUsage = define("CTXD-E001", "usage error", ExitUsage, StatusInvalidArgument,
		"run the tool with --help to see its arguments")
	ErrBadInput = define("CTXD-E002", "invalid input", ExitDataErr, StatusInvalidArgument,
		"fix the input so it matches the tool's schema.json")
	ErrUnknownTool = define("CTXD-E003", "unknown tool", ExitUsage, StatusNotFound,
		"run `contextd-proxy install` again; the proxy and the daemon may be different versions")

	ErrDaemonUnavailable = define("CTXD-E010", "contextd is not reachable", ExitUnavailable, StatusUnavailable,
		"start it with `systemctl --user start contextd.socket` (or run `contextd serve`)")
	ErrSocketPermission = define("CTXD-E011", "permission denied on the contextd socket", ExitUnavailable, StatusPermissionDenied,
		"the socket belongs to another user; each user runs their own contextd (check CONTEXTD_SOCKET and XDG_RUNTIME_DIR)")
	ErrPeerRefused = define("CTXD-E012", "connection refused by the daemon's peer check", ExitNoPerm, StatusPermissionDenied,
		"contextd serves only the user it runs as; run your own with `systemctl --user start contextd.socket`, or add your uid to allowed_uids in its config")
	ErrConnectionLost = define("CTXD-E013", "connection to contextd lost during the call", ExitTempFail, StatusUnavailable,
		"the daemon stopped or crashed mid-call; the command may have run in part: check its effects, then retry")
	ErrShuttingDown = define("CTXD-E014", "contextd is shutting down", ExitTempFail, StatusUnavailable,
		"the call was stopped because the daemon is exiting; retry it (socket activation starts a new daemon)")
	ErrInterrupted = define("CTXD-E016", "interrupted", ExitInterrupted, StatusCanceled,
		"the call was canceled on your request (SIGINT/SIGTERM); a running command was killed")
	ErrDaemonIdentity = define("CTXD-E015", "the socket is served by another user", ExitNoPerm, StatusPermissionDenied,
		"the process behind the socket does not run as you; do not send it your calls (check CONTEXTD_SOCKET)")

	ErrOutsideWorkspace = define("CTXD-E020", "path is outside the workspace", ExitNoPerm, StatusPermissionDenied,
		"use a path inside the project (its git top level or the working directory); `..` and symlinks may not leave it")
	ErrNotFound = define("CTXD-E021", "no such file or directory", ExitNoInput, StatusNotFound,
		"check the path; paths are relative to the working directory and stay inside the workspace")
	ErrNotRegular = define("CTXD-E022", "not a regular text file", ExitDataErr, StatusInvalidArgument,
		"safe_read reads regular text files; use safe_bash (ls, file, xxd) for directories, devices and binaries")
	ErrIO = define("CTXD-E023", "input/output error", ExitIOErr, StatusInternal,
		"check the file system (space, permissions); nothing was changed if a write failed")
	ErrSymlinkLoop = define("CTXD-E024", "too many levels of symbolic links", ExitDataErr, StatusInvalidArgument,
		"the path goes through a symlink loop; fix or avoid the link")
	ErrFilePermission = define("CTXD-E025", "permission denied on a file", ExitNoPerm, StatusPermissionDenied,
		"the file's permissions, a read-only mount, or a path contextd keeps read-only in the sandbox (.claude, .git/config, .git/hooks) forbid this; contextd runs with your rights, no more")

	ErrTimeout = define("CTXD-E030", "command timed out", ExitTimeout, StatusDeadlineExceeded,
		"the command was killed with its whole process group; raise --timeout (up to the configured maximum) or split the work")
	ErrSandbox = define("CTXD-E032", "the sandbox could not be set up", ExitSoftware, StatusFailedPrecondition,
		"the call did not run: a protection layer failed and contextd fails closed; `contextd doctor` checks each layer and says how to fix it")
	ErrLaunch = define("CTXD-E031", "command could not be started", ExitSoftware, StatusInternal,
		"check that the shell and the working directory exist")
	ErrServerStart = define("CTXD-E033", "the wrapped server could not be started", ExitUnavailable, StatusFailedPrecondition,
		"a wrapped server runs in the sandbox, which sees the project and the system directories only: install the server inside the project, or show its directory with `read_only` under [mcp.servers.NAME] in the configuration (docs/mcp.md)")
	ErrServerExited = define("CTXD-E034", "the wrapped server exited", ExitUnavailable, StatusUnavailable,
		"the message ends with the last lines the server wrote to stderr (the daemon's log has them all: `journalctl --user -u contextd`); run the same command in the project to see it fail, fix what it says, then start the agent's MCP connection again")

	ErrUnknownContinuation = define("CTXD-E040", "unknown or expired continuation reference", ExitDataErr, StatusNotFound,
		"run the original call again to get a fresh reference")

	ErrInternal = define("CTXD-E050", "internal error", ExitSoftware, StatusInternal,
		"this is a bug in contextd; the daemon log has details")
	ErrPolicy = define("CTXD-E051", "refused by policy", ExitNoPerm, StatusPermissionDenied,
		"the daemon's configuration forbids this call")
	ErrRoot = define("CTXD-E052", "refusing to run as root", ExitNoPerm, StatusPermissionDenied,
		"run contextd as your own user (systemctl --user); pass --allow-root only if you really mean it")
	ErrAlreadyRunning = define("CTXD-E053", "another contextd is already listening on the socket", ExitTempFail, StatusAlreadyExists,
		"stop it first (`systemctl --user stop contextd.socket contextd.service`) or use another --socket")
	ErrAuditDamaged = define("CTXD-E055", "audit log failed verification", ExitDataErr, StatusFailedPrecondition,
		"a record was edited, deleted or lost (or a crash cut a write); the file:line given says where; copy the audit directory before changing anything")
	ErrConflict = define("CTXD-E054", "refusing to overwrite a file contextd did not create", ExitCantCreat, StatusAlreadyExists,
		"move the file away, or leave it; nothing was changed")
	ErrCacheBusy = define("CTXD-E056", "the cache layers are in use", ExitTempFail, StatusFailedPrecondition,
		"a tool call in that workspace has them mounted; wait for it to end (`contextd cache list` marks the layers in use), then run the command again")

	ErrConfig = define("CTXD-E060", "invalid configuration", ExitConfig, StatusFailedPrecondition,
		"fix the named key in the configuration file; docs/config.md lists every key")

	ErrNoRecord = define("CTXD-E070", "no such memory, checkpoint or branch", ExitNoInput, StatusNotFound,
		"use an id a search or list returned in this project; other projects' records are not visible")
	ErrBranchBudget = define("CTXD-E071", "the branch's token budget is spent", ExitNoPerm, StatusResourceExhausted,
		"call `return` with a summary of what the branch found; its further calls are refused")
	ErrNoBranch = define("CTXD-E072", "no open branch in this session", ExitDataErr, StatusFailedPrecondition,
		"`return` closes a branch opened with `branch` in the same session (CONTEXTD_SESSION)")
	ErrBranchDepth = define("CTXD-E073", "branches nest at most 3 deep", ExitDataErr, StatusFailedPrecondition,
		"`return` from the innermost branch before opening another")
	ErrStoreUnavailable = define("CTXD-E074", "the state store is unavailable", ExitUnavailable, StatusUnavailable,
		"the message says why (another contextd holding the file, a Qdrant server down); see [store] in the configuration (docs/config.md)")

	ErrNotInstalled = define("CTXD-E080", "a part of contextd is missing", ExitUnavailable, StatusFailedPrecondition,
		"reinstall contextd (`apt install --reinstall contextd`, or `make install` from the source tree); its binaries are installed together")

	ErrPluginStart = define("CTXD-E090", "the tool plugin could not be started", ExitUnavailable, StatusFailedPrecondition,
		"the message says why (a handshake refused, a protocol version, the plugin's last stderr lines); `contextd tool list` shows the tool's health, and `contextd tool install` again rebuilds it")
	ErrPluginExited = define("CTXD-E091", "the tool plugin exited during the call", ExitTempFail, StatusUnavailable,
		"the plugin crashed, was killed, or overran its timeout, and its whole sandbox was ended; the call may have done part of its work: check, then retry (the next call starts a fresh plugin)")
	ErrInstallRefused = define("CTXD-E092", "the tool's source was refused", ExitDataErr, StatusFailedPrecondition,
		"the fetched source holds what contextd never installs (a path leaving the tree, a link, a device, more bytes or files than [plugins] fetch limits allow); the message names the entry; nothing was installed")
	ErrChecksum = define("CTXD-E093", "the tool's source changed since it was locked", ExitDataErr, StatusFailedPrecondition,
		"the source gave other bytes (or a tag moved) than the lock pins; check why with its author, then accept the new checksum with `contextd tool update NAME --checksum SUM` or remove and install the tool again")
	ErrApproval = define("CTXD-E094", "the tool's permissions were not approved", ExitNoPerm, StatusPermissionDenied,
		"read the permissions printed above, then run the command again with --yes (or from a terminal, and answer yes)")

	ErrUnknownEndpoint = define("CTXD-E100", "no such endpoint", ExitUsage, StatusNotFound,
		"check the method and the path; GET /v1/openapi.json lists every endpoint")
	ErrBodyTooLarge = define("CTXD-E101", "request body too large", ExitDataErr, StatusResourceExhausted,
		"send less (max_body_bytes under [http] in the configuration bounds a request's body)")
	ErrNoCall = define("CTXD-E109", "no such call or page", ExitNoInput, StatusNotFound,
		"use the id a call returned while its record is kept ([pages] ttl); fetch a call's pages in order, from 1")
)

// Lookup returns the class with the given code, or nil.
func Lookup(code string) *Class { return registry[code] }

// All returns every class, ordered by code.
func All() []*Class {
	out := make([]*Class, 0, len(registry))
	for _, c := range registry {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// ClassOf returns the catalog class err wraps, or ErrInternal when it wraps none:
// an error nobody classified is a bug, not a user mistake.
func ClassOf(err error) *Class {
	var c *Class
	if errors.As(err, &c) {
		return c
	}
	return ErrInternal
}

// ExitCode is the process exit status for err (0 for nil).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	return ClassOf(err).Exit
}

// Format renders err for a person or an agent: the stable code first, then the
// message, then on a second line what to do.
func Format(err error) string {
	c := ClassOf(err)
	msg := err.Error()
	if !strings.Contains(msg, c.Name) {
		msg = msg + ": " + c.Name
	}
	return fmt.Sprintf("%s: %s\nhint: %s", c.Code, msg, c.Hint)
}

// Markdown renders the catalog as the table in docs/errors.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# contextd error catalog\n\n")
	b.WriteString("Every error contextd reports starts with one of these codes. The code and its\n")
	b.WriteString("meaning never change; new codes are only added. Generated from `catalog/catalog.go`\n")
	b.WriteString("by `go generate ./catalog`; do not edit by hand.\n\n")
	b.WriteString("| code | meaning | exit | what to do |\n|---|---|---|---|\n")
	for _, c := range All() {
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", c.Code, c.Name, c.Exit, strings.ReplaceAll(c.Hint, "|", "\\|"))
	}
	b.WriteString("\nExit statuses follow sysexits.h (64 usage, 65 bad data, 66 no input, 69 unavailable,\n")
	b.WriteString("70 internal, 73 cannot create, 74 I/O, 75 temporary, 77 no permission, 78 config);\n")
	b.WriteString("124 is a timeout, as with timeout(1); 130 an interrupted call, as a shell reports it. For safe_bash a command that ran reports its own\n")
	b.WriteString("exit status instead.\n")
	return b.String()
}
