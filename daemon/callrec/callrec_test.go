package callrec

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
)

func TestPutGetUpdate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "calls")
	s, err := Open(dir, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir: %v %v", fi, err)
	}
	r := s.New("safe_bash", "http")
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.path(r.ID)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record file: %v %v", fi, err)
	}
	err = s.Update(r.ID, func(r *Record) {
		r.State, r.Answer, r.Pages = Done, []byte(`{"output":"x"}`), []string{"ref1"}
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(r.ID)
	if err != nil || got.State != Done || string(got.Answer) != `{"output":"x"}` || got.Tool != "safe_bash" || got.Via != "http" {
		t.Fatalf("Get: %+v %v", got, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("a temp file was left: %v", ents)
	}
}

func TestNoCall(t *testing.T) {
	s, err := Open(t.TempDir(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.now = func() time.Time { return now }
	old := s.New("safe_read", "http")
	if err := s.Put(old); err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return now.Add(2 * time.Hour) }
	for _, id := range []string{"../../etc/passwd", "", "00000000-0000-4000-8000-000000000000", old.ID} {
		if _, err := s.Get(id); !errors.Is(err, catalog.ErrNoCall) {
			t.Errorf("Get(%q): %v, want ErrNoCall", id, err)
		}
	}
	// Prune goes by the file's time: make it old, as two hours would.
	if err := os.Chtimes(s.path(old.ID), now.Add(-2*time.Hour), now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	s.now = time.Now
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path(old.ID)); !os.IsNotExist(err) {
		t.Errorf("Prune left the expired record: %v", err)
	}
}

func TestPageRef(t *testing.T) {
	r := Record{ID: "c", State: Done, Pages: []string{"p1"}}
	for _, tc := range []struct {
		pages []string
		n     int
		want  string
	}{
		{[]string{"p1"}, 1, "p1"},
		{[]string{"p1", "p2"}, 2, "p2"},
		{[]string{"p1"}, 2, ""},     // page 1 not fetched yet
		{[]string{""}, 1, ""},       // nothing left out
		{[]string{"p1", ""}, 2, ""}, // page 1 was the last
		{nil, 1, ""},                // no answer yet
		{[]string{"p1"}, 0, ""},     // pages count from 1
	} {
		r.Pages = tc.pages
		got, err := r.PageRef(tc.n)
		if tc.want != "" {
			if got != tc.want || err != nil {
				t.Errorf("%v page %d: %q %v, want %q", tc.pages, tc.n, got, err, tc.want)
			}
		} else if !errors.Is(err, catalog.ErrNoCall) {
			t.Errorf("%v page %d: %q %v, want ErrNoCall", tc.pages, tc.n, got, err)
		}
	}
	r.Pages = []string{"p1"}
	r.SetPage(1, "p2")
	r.SetPage(1, "other") // a page fetched again keeps the first answer's ref
	if len(r.Pages) != 2 || r.Pages[1] != "p2" {
		t.Errorf("SetPage: %v", r.Pages)
	}
}
