package install

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/catalog"
)

// With HOME relative and no XDG_STATE_HOME, the record of accepted files is
// not written relative to the current directory (the project, where a
// sandboxed call could forge it): the write is refused, and reading finds
// nothing accepted.
func TestSeenRecordNeverInTheProject(t *testing.T) {
	proj := t.TempDir()
	t.Chdir(proj)
	t.Setenv("HOME", "relative-home")
	t.Setenv("XDG_STATE_HOME", "")
	o := &Options{}
	err := o.writeSeen(&seenRecord{Version: 1, Files: map[string]map[string]string{proj: {"a": "x"}}})
	if !errors.Is(err, catalog.ErrConfig) {
		t.Fatalf("writeSeen with a relative HOME: %v, want ErrConfig", err)
	}
	if _, err := os.Stat(filepath.Join(proj, "relative-home")); err == nil {
		t.Fatal("the record was written inside the current directory")
	}
	if r := o.readSeen(); len(r.Files) != 0 {
		t.Fatalf("readSeen found %v", r.Files)
	}
}
