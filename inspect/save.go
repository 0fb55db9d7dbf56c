package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/wire/lite"
)

// Saved is the file `s` writes: the session as this inspector received it
// since it attached (the daemon's backlog first), with what it learned
// about held messages.
type Saved struct {
	Record    string         `json:"record"`
	Server    string         `json:"server"`
	Target    string         `json:"target"`
	SavedAt   time.Time      `json:"saved_at"`
	Intercept bool           `json:"intercept"`
	Ended     bool           `json:"ended"`
	Messages  []SavedMessage `json:"messages,omitempty"`
}

// SavedMessage is one message as recorded, plus its fate if it was held.
type SavedMessage struct {
	lite.InspectMessage
	// Held: still waiting for a decision when the file was written.
	Held bool `json:"held,omitempty"`
	// Outcome of a message that was held: forward, modify, drop (decided
	// here) or released (decided elsewhere).
	Outcome string `json:"outcome,omitempty"`
	// Answer is, for a request, the Seq of its response.
	Answer uint64 `json:"answer,omitempty"`
}

// snapshot copies the session, so that the file is written off the UI's
// goroutine without sharing the model.
func (m *Model) snapshot() *Saved {
	s := &Saved{Record: m.hello.Record, Server: m.hello.Server, Target: m.hello.Target,
		SavedAt: m.opts.Now(), Intercept: m.intercept, Ended: m.ended,
		Messages: make([]SavedMessage, 0, len(m.entries))}
	for _, e := range m.entries {
		s.Messages = append(s.Messages, SavedMessage{InspectMessage: e.m, Held: e.held, Outcome: e.outcome, Answer: e.resp})
	}
	return s
}

// save starts writing the session to a new file in Options.Dir.
func (m *Model) save() tea.Cmd {
	snap := m.snapshot()
	dir := m.opts.Dir
	if dir == "" {
		dir = "."
	}
	m.setStatus("saving...")
	return func() tea.Msg {
		path, err := writeSaved(dir, snap)
		return savedMsg{path: path, err: err}
	}
}

// writeSaved writes s to a file named after its record and time in dir,
// never over an existing file, readable by its owner only (the messages may
// hold what the user would not share).
func writeSaved(dir string, s *Saved) (string, error) {
	b, err := encodeSaved(s)
	if err != nil {
		return "", err
	}
	base := fmt.Sprintf("contextd-inspect-%s-%s", fileSafe(s.Record), s.SavedAt.Format("20060102-150405"))
	for i := 1; i < 100; i++ {
		name := base + ".json"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.json", base, i)
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("save: %v: %w", err, catalog.ErrIO)
		}
		_, werr := f.Write(b)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return "", fmt.Errorf("save: write %s: %v: %w", path, werr, catalog.ErrIO)
		}
		if dir == "." {
			// Short enough for the status line, and it says where: here.
			path = "./" + name
		}
		return path, nil
	}
	return "", fmt.Errorf("save: %s: 99 files of that name exist already: %w", filepath.Join(dir, base), catalog.ErrConflict)
}

// fileSafe keeps the first characters of a record id that are safe in a
// file name: eight are enough beside the time (a record id is a UUID) and
// keep the name short enough to be shown whole.
func fileSafe(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteRune(c)
		}
		if b.Len() >= 8 {
			break
		}
	}
	if b.Len() == 0 {
		return "session"
	}
	return b.String()
}

// encodeSaved writes the session as JSON with one message per line. The
// messages are copied as they came (json.MarshalIndent would re-indent
// each raw message), and a line per message keeps the file greppable.
func encodeSaved(s *Saved) ([]byte, error) {
	head := *s
	head.Messages = nil
	hb, err := json.Marshal(head)
	if err != nil {
		return nil, fmt.Errorf("save: encode: %v: %w", err, catalog.ErrInternal)
	}
	var b bytes.Buffer
	b.Write(hb[:len(hb)-1]) // without the closing brace
	b.WriteString(`,"messages":[`)
	for i := range s.Messages {
		mb, err := json.Marshal(&s.Messages[i])
		if err != nil {
			return nil, fmt.Errorf("save: encode message %d: %v: %w", s.Messages[i].Seq, err, catalog.ErrInternal)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		b.Write(mb)
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), nil
}
