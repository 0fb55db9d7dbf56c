package proxy

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// MCPBinary is the program that serves `contextd-proxy mcp`, installed next to
// contextd-proxy. It is a binary of its own because the MCP SDK's packages
// (net/http, JSON Schema, gob) cost about 5 ms of initialisation and 14 ms of
// start-up in every process that links them, and contextd-proxy starts on
// every tool call through a symlink; an MCP server starts once per agent
// session.
const MCPBinary = "contextd-proxy-mcp"

// runMCP replaces this process with MCPBinary, passing args on; it returns
// only when that cannot be done.
func runMCP(args []string) error {
	exe, err := mcpBinaryPath()
	if err != nil {
		return err
	}
	argv := append([]string{exe}, args...)
	// Exec rather than a child process: the agent's stdin and stdout reach the
	// server directly, and signals the agent sends reach it too.
	err = unix.Exec(exe, argv, os.Environ())
	return fmt.Errorf("mcp: start %s: %v: %w", exe, err, catalog.ErrLaunch)
}

// mcpBinaryPath finds MCPBinary in the directory of this binary, symlinks
// resolved: the two are built and installed together, and a program of that
// name found elsewhere (on PATH) could be another version or someone else's.
func mcpBinaryPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("mcp: find own binary: %v: %w", err, catalog.ErrInternal)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", fmt.Errorf("mcp: resolve own binary: %v: %w", err, catalog.ErrInternal)
	}
	exe := filepath.Join(filepath.Dir(self), MCPBinary)
	fi, err := os.Stat(exe)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("mcp: %s is missing or not executable; it is installed with contextd-proxy: %w", exe, catalog.ErrNotInstalled)
	}
	return exe, nil
}
