package pages

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Meta is what the daemon keeps with an output for its pages: the tool, the
// command, anything a later page needs to say. It is stored as JSON.
type Meta map[string]string

// record is an output's entry in the index and its .meta file.
type record struct {
	id      string
	Session string    `json:"session"` // sessionKey of the owner
	Size    int64     `json:"size"`    // bytes stored
	Lines   int64     `json:"lines"`   // '\n' in them
	Dropped int64     `json:"dropped"` // bytes written past MaxEntry, not stored
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Meta    Meta      `json:"meta,omitempty"`
	// Holes are the parts of the output not stored, in order.
	Holes []Hole `json:"holes,omitempty"`
}

// A Hole is a part of an output that is not stored: its bytes are made again
// from their source when a page needs them (the middle of a long file, read
// again in the sandbox). The store keeps Source for the reader's FillFunc and
// does not look inside it.
type Hole struct {
	At     int64           `json:"at"` // offset in the output
	Len    int64           `json:"len"`
	Source json.RawMessage `json:"source"`
}

// length is the output's length: the bytes stored and the holes.
func (r *record) length() int64 {
	n := r.Size
	for _, h := range r.Holes {
		n += h.Len
	}
	return n
}

// holesValid reports whether the holes are in order, apart, and within the
// output (a .meta file is read back from disk).
func (r *record) holesValid() bool {
	at := int64(0) // the first offset the next hole may start at
	for _, h := range r.Holes {
		if h.At < at || h.Len <= 0 || len(h.Source) == 0 {
			return false
		}
		at = h.At + h.Len
	}
	return at <= r.length()
}

// sessionKey names a session's directory: a hash, because session ids are
// chosen by callers and may hold characters unfit for a file name (and "..").
func sessionKey(session string) string {
	h := sha256.Sum256([]byte("contextd pages\x00" + session))
	return hex.EncodeToString(h[:idLen/2])
}

// newID returns 128 random bits in hex: an id nobody can guess.
func newID() (string, error) {
	var b [idLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("pages: getrandom: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// writeMeta writes r's .meta file whole or not at all: to a temporary file,
// then renamed over.
func (s *Store) writeMeta(r *record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("pages: encode metadata: %w", err)
	}
	final := filepath.Join(s.dir, r.Session, r.id+".meta")
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("pages: open %s: %w", tmp, err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pages: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pages: rename %s: %w", tmp, err)
	}
	return nil
}

// readMeta reads the .meta file of output id of session directory key.
func (s *Store) readMeta(key, id string) (*record, error) {
	p := filepath.Join(s.dir, key, id+".meta")
	b, err := readFileNoFollow(p, 1<<20)
	if err != nil {
		return nil, err
	}
	r := &record{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("pages: decode %s: %w", p, err)
	}
	r.id = id
	return r, nil
}

// readFileNoFollow reads a small file, refusing symlinks and anything larger
// than limit (metadata is a few hundred bytes).
func readFileNoFollow(p string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pages: open %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("pages: fstat %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("pages: %s is not a small regular file", p)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("pages: read %s: %w", p, err)
	}
	return b, nil
}

// clone copies a Meta, so that neither the caller nor a reader can change the
// store's copy.
func (m Meta) clone() Meta {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}
