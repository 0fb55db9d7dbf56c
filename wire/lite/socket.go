package lite

import (
	"os"
	"path/filepath"
	"strconv"
)

// DefaultSocketPath is where the daemon listens and the proxy connects:
// $XDG_RUNTIME_DIR/contextd/contextd.sock, the path contextd.socket uses
// (%t/contextd/contextd.sock). Without XDG_RUNTIME_DIR it falls back to
// /run/user/<uid>, what pam_systemd sets.
func DefaultSocketPath() string {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = "/run/user/" + strconv.Itoa(os.Getuid())
	}
	return filepath.Join(dir, "contextd", "contextd.sock")
}
