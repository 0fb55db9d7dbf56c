// Package logging builds the daemon's slog logger: native journal entries (with
// structured fields) when stderr is connected to the journal, text on stderr
// otherwise.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/coreos/go-systemd/v22/journal"
)

// New returns the logger for level. Under systemd (JOURNAL_STREAM names our
// stderr) it writes to the journal; otherwise text to w.
func New(w io.Writer, level slog.Level) *slog.Logger {
	if ok, _ := journal.StderrIsJournalStream(); ok && journal.Enabled() {
		return slog.New(&journalHandler{level: level})
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// journalHandler sends each record with journal.Send: the message as MESSAGE, the
// level as PRIORITY, every attribute as an upper-case field, so `journalctl
// --user -u contextd PEER_UID=1001` finds refused peers.
type journalHandler struct {
	level  slog.Level
	attrs  []slog.Attr
	prefix string // group prefix, "GROUP_"
}

func (h *journalHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *journalHandler) Handle(_ context.Context, r slog.Record) error {
	vars := map[string]string{"SYSLOG_IDENTIFIER": "contextd"}
	var text strings.Builder
	text.WriteString(r.Message)
	var add func(prefix string, a slog.Attr)
	add = func(prefix string, a slog.Attr) {
		a.Value = a.Value.Resolve()
		if a.Value.Kind() == slog.KindGroup {
			for _, g := range a.Value.Group() {
				add(prefix+a.Key+"_", g)
			}
			return
		}
		key := fieldName(prefix + a.Key)
		if key == "" {
			return
		}
		vars[key] = a.Value.String()
		fmt.Fprintf(&text, " %s=%s", prefix+a.Key, quote(a.Value.String()))
	}
	for _, a := range h.attrs {
		add("", a)
	}
	r.Attrs(func(a slog.Attr) bool { add(h.prefix, a); return true })
	return journal.Send(text.String(), priority(r.Level), vars)
}

func (h *journalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr{}, h.attrs...), prefixed(h.prefix, as)...)
	return &n
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.prefix = h.prefix + name + "_"
	return &n
}

func prefixed(prefix string, as []slog.Attr) []slog.Attr {
	if prefix == "" {
		return as
	}
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = slog.Attr{Key: prefix + a.Key, Value: a.Value}
	}
	return out
}

// fieldName makes a journal field name: upper case letters, digits and '_', not
// starting with '_' (those are trusted fields the journal sets itself).
func fieldName(k string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(k) {
		switch {
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return ""
	}
	return s
}

func quote(s string) string {
	if strings.ContainsAny(s, " \t\n\"") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func priority(l slog.Level) journal.Priority {
	switch {
	case l >= slog.LevelError:
		return journal.PriErr
	case l >= slog.LevelWarn:
		return journal.PriWarning
	case l >= slog.LevelInfo:
		return journal.PriInfo
	}
	return journal.PriDebug
}
