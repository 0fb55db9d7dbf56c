package qdrant

import (
	"errors"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/store"
)

// A versioned put goes on from the stored record when its claim holds, and
// is refused as the store's contract says when it does not.
func TestRebase(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	then := now.Add(-time.Hour)
	stored := &base{owner: "p", created: then, version: 3}
	for _, tt := range []struct {
		name    string
		owner   string
		claimed int64
		stored  *base
		created time.Time
		version int64
		err     error
	}{
		{"new, no claim", "p", 0, nil, now, 0, nil},
		{"new, a claim", "p", 2, nil, time.Time{}, 0, store.ErrConflict},
		{"stored, no claim", "p", 0, stored, then, 3, nil},
		{"stored, the stored version", "p", 3, stored, then, 3, nil},
		{"stored, a stale version", "p", 2, stored, time.Time{}, 0, store.ErrConflict},
		{"stored by another owner", "q", 0, stored, time.Time{}, 0, store.ErrNotFound},
		{"another owner, a stale version", "q", 2, stored, time.Time{}, 0, store.ErrNotFound},
	} {
		created, version, err := rebase("memory", "id1", tt.owner, tt.claimed, tt.stored, now)
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.err)
		}
		if !created.Equal(tt.created) || version != tt.version {
			t.Errorf("%s: created %v, version %d; want %v, %d", tt.name, created, version, tt.created, tt.version)
		}
	}
}
