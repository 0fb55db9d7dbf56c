package sqlitefile_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/sqlitefile"
)

// The runner takes a file from version 0 to the last step, one step a
// transaction: a step that fails leaves the version before it and none of its
// changes; the next run takes up from there; a version past the steps is
// refused, not misread.
func TestMigrationSteps(t *testing.T) {
	ctx := context.Background()
	fail := errors.New("step 2 fails")
	failing := true
	m := &sqlitefile.Migration{What: "test tables", Steps: []func(context.Context, *sql.Tx) error{
		func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "CREATE TABLE one (n INTEGER)")
			return err
		},
		func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, "CREATE TABLE two (n INTEGER)"); err != nil {
				return err
			}
			if failing {
				return fail
			}
			return nil
		},
	}}
	m.Version, m.SetVersion = sqlitefile.UserVersion()
	db, err := sqlitefile.Open(sqlitefile.Options{Name: "test store", Path: filepath.Join(t.TempDir(), "m.db"), Unavailable: errors.New("busy")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	version := func() int {
		var v int
		if err := db.W.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tables := func() int {
		var n int
		if err := db.W.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('one', 'two')").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := m.Run(ctx, db.W); !errors.Is(err, fail) || !strings.Contains(err.Error(), "migrate test tables to schema 2") {
		t.Fatalf("a failing step: %v", err)
	}
	if v, n := version(), tables(); v != 1 || n != 1 {
		t.Fatalf("after the failed step: version %d, %d tables; want 1 and 1 (step 1 kept, step 2 rolled back)", v, n)
	}
	failing = false
	if err := m.Run(ctx, db.W); err != nil {
		t.Fatal(err)
	}
	if v, n := version(), tables(); v != 2 || n != 2 {
		t.Fatalf("after the second run: version %d, %d tables; want 2 and 2", v, n)
	}
	if err := m.Run(ctx, db.W); err != nil {
		t.Fatalf("a run at the last version: %v", err)
	}
	if _, err := db.W.Exec("PRAGMA user_version = 7"); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx, db.W); err == nil || !strings.Contains(err.Error(), "newer than this contextd understands") {
		t.Fatalf("a newer schema: %v", err)
	}
}
