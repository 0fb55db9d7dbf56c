// Package session names the session a call belongs to: the CONTEXTD_SESSION the
// proxy sent, or one derived from the agent process that ran the proxy, found by
// walking up the process tree from the peer pid past shells and wrappers.
package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/contextd/contextd/catalog"
)

// MaxLen bounds an explicit session id.
const MaxLen = 128

// Validate checks a session id the caller chose: printable, no spaces or slashes
// (it names files and log fields later), at most MaxLen bytes.
func Validate(id string) error {
	if id == "" || len(id) > MaxLen {
		return fmt.Errorf("session id must be 1 to %d bytes: %w", MaxLen, catalog.ErrBadInput)
	}
	for _, r := range id {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_.:@", r)) {
			return fmt.Errorf("session id %q: only letters, digits and -_.:@ are allowed: %w", id, catalog.ErrBadInput)
		}
	}
	return nil
}

// passThrough are process names that sit between an agent and the proxy without
// being the agent: shells an agent spawns per command, and common wrappers. The
// first ancestor not in this set is the agent.
var passThrough = map[string]bool{
	"contextd-proxy": true,
	"sh":             true, "bash": true, "dash": true, "zsh": true, "fish": true, "ksh": true, "mksh": true, "busybox": true,
	"env": true, "timeout": true, "nice": true, "nohup": true, "stdbuf": true, "xargs": true,
	"setsid": true, "script": true, "time": true, "flock": true, "ionice": true, "chrt": true,
}

// proc is what Derive reads of a process.
type proc struct {
	ppid      int
	comm      string
	startTime uint64 // clock ticks since boot: with the pid, unique across pid reuse
}

// procRoot is /proc; tests point it elsewhere.
var procRoot = "/proc"

// Derive returns a session id for a call from process pid (the proxy). The id is a
// hash of the agent's pid and start time, so it stays the same for every call the
// agent makes and changes when the agent restarts, even if the pid is reused.
func Derive(pid int) (string, error) {
	self, err := readProc(pid)
	if err != nil {
		return "", fmt.Errorf("derive session from pid %d: %w", pid, err)
	}
	agentPID, agent := pid, self
	for cur := self; cur.ppid > 1; {
		parent, err := readProc(cur.ppid)
		if err != nil {
			break // the parent exited or is hidden: stop at the last we saw
		}
		agentPID, agent = cur.ppid, parent
		if !passThrough[parent.comm] {
			break
		}
		cur = parent
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d:%d", agentPID, agent.startTime))
	return "a-" + hex.EncodeToString(sum[:8]), nil
}

// readProc parses /proc/PID/stat. The comm field may hold spaces and parentheses,
// so the fields after it are found from the last ')'.
func readProc(pid int) (proc, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return proc{}, err
	}
	return parseStat(string(b))
}

func parseStat(s string) (proc, error) {
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return proc{}, errors.New("malformed /proc stat")
	}
	comm := s[open+1 : close]
	// Fields after comm: state(3) ppid(4) ... starttime(22).
	f := strings.Fields(s[close+1:])
	if len(f) < 20 {
		return proc{}, errors.New("short /proc stat")
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return proc{}, fmt.Errorf("bad ppid in /proc stat: %w", err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return proc{}, fmt.Errorf("bad starttime in /proc stat: %w", err)
	}
	return proc{ppid: ppid, comm: comm, startTime: start}, nil
}
