package audit

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// JournalMode says when records are also sent to the systemd journal.
type JournalMode int

const (
	// JournalAuto sends records when contextd runs as a systemd service
	// (JOURNAL_STREAM or INVOCATION_ID is set) and journald's socket exists.
	JournalAuto JournalMode = iota
	// JournalOn sends records whenever journald's socket exists.
	JournalOn
	// JournalOff never sends records to the journal.
	JournalOff
)

// Defaults of Options.
const (
	DefaultMaxFileSize = 16 << 20 // 16 MiB, about 30 000 calls
	DefaultMaxFiles    = 0        // keep every file
)

// Options configure Open. A nil *Options means every default.
type Options struct {
	// Dir holds the log. Default: DefaultDir().
	Dir string
	// MaxFileSize is the size past which the next record goes to a new file.
	// Default (0): DefaultMaxFileSize. A record larger than this still fits in
	// a file of its own.
	MaxFileSize int64
	// MaxFiles is how many rotated (not current) files are kept; older ones
	// are deleted at rotation, which head.json and a "retention" record note.
	// Default (0): keep all.
	MaxFiles int
	// SyncEveryRecord makes Append return only once the record and head.json
	// are on disk (fdatasync(2)), at several milliseconds a record. Default
	// (false): files are synced at rotation, retention and Close only.
	SyncEveryRecord bool
	// Journal says when records also go to the journal. Default: JournalAuto.
	Journal JournalMode
	// Logger gets warnings: a chain reset at Open, journald or head.json
	// failures. Default: slog.Default().
	Logger *slog.Logger
}

// DefaultDir is $XDG_STATE_HOME/contextd/audit, or ~/.local/state/contextd/audit
// when XDG_STATE_HOME is unset or not absolute (as the XDG spec says to treat it).
func DefaultDir() (string, error) {
	if s := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "contextd", "audit"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("audit: no state directory (XDG_STATE_HOME and HOME unset): %w", err)
	}
	return filepath.Join(home, ".local", "state", "contextd", "audit"), nil
}

// resolve returns a copy of o with the defaults filled in.
func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return r, err
		}
		r.Dir = d
	}
	if r.MaxFileSize <= 0 {
		r.MaxFileSize = DefaultMaxFileSize
	}
	if r.MaxFiles < 0 {
		r.MaxFiles = DefaultMaxFiles
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r, nil
}
