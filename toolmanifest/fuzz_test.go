package toolmanifest_test

import (
	"errors"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolmanifest"
)

var fuzzName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// FuzzParse: Parse never panics, refuses only with catalog.ErrBadInput, and
// whatever it accepts keeps the invariants and survives Encode unchanged.
// The seeds are in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(full))
	f.Add([]byte(minimal))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := toolmanifest.Parse(data)
		if err != nil {
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("error without ErrBadInput: %v", err)
			}
			return
		}
		checkInvariants(t, m)
		enc, err := toolmanifest.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := toolmanifest.Parse(enc)
		if err != nil {
			t.Fatalf("Parse(Encode(m)) = %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip changed the manifest:\n%#v\n%#v", m, again)
		}
	})
}

func checkInvariants(t *testing.T, m *toolmanifest.Manifest) {
	t.Helper()
	if !fuzzName.MatchString(m.Name) {
		t.Fatalf("name %q accepted", m.Name)
	}
	rel := []string{m.Doc, m.Run.Command[0]}
	if m.Schema.Path != "" {
		rel = append(rel, m.Schema.Path)
	} else if err := toolmanifest.CheckSchema(m.Schema.Inline); err != nil {
		t.Fatalf("inline schema accepted: %v", err)
	}
	for _, p := range rel {
		if !fs.ValidPath(p) || p == "." || path.Clean(p) != p {
			t.Fatalf("relative path %q accepted", p)
		}
	}
	p := m.Permissions
	for _, r := range p.ReadOnly {
		if !path.IsAbs(r) || path.Clean(r) != r || r == "/" {
			t.Fatalf("read_only %q accepted", r)
		}
	}
	if p.Workspace < toolmanifest.AccessNone || p.Workspace > toolmanifest.AccessReadWrite ||
		p.Memory < toolmanifest.MinMemory || p.Memory > toolmanifest.MaxMemory ||
		p.Tasks < toolmanifest.MinTasks || p.Tasks > toolmanifest.MaxTasks ||
		p.Timeout < toolmanifest.MinTimeout || p.Timeout > toolmanifest.MaxTimeout {
		t.Fatalf("limits out of bounds accepted: %+v", p)
	}
	if w := toolmanifest.Widens(m, m); len(w) != 0 {
		t.Fatalf("a manifest widens itself: %q", w)
	}
}
