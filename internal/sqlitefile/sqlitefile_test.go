package sqlitefile_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/internal/sqlitefile"
)

var errMine = errors.New("mine unavailable")

func open(t *testing.T, path, lockSuffix, table string) (*sqlitefile.DB, error) {
	t.Helper()
	return sqlitefile.Open(sqlitefile.Options{
		Name: table + " store", Path: path, LockSuffix: lockSuffix, Unavailable: errMine,
		Migrate: func(ctx context.Context, w *sql.DB) error {
			_, err := w.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (n INTEGER NOT NULL)")
			return err
		},
	})
}

// Two owners of tables in one file, each with a lock of its own: both open
// in one process, write at once through their own writers, and read each
// other's commits. A second opener under an owner's lock is refused with
// the owner's sentinel, naming the holder.
func TestTwoOwnersOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	a, err := open(t, path, "", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := open(t, path, ".b.lock", "b")
	if err != nil {
		t.Fatalf("second owner: %v", err)
	}
	defer b.Close()
	if _, err := open(t, path, ".b.lock", "b"); !errors.Is(err, errMine) {
		t.Errorf("a second b: %v, want the owner's sentinel", err)
	} else if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal does not name the holder (%s): %v", want, err)
	}

	const n = 200
	var wg sync.WaitGroup
	for _, db := range []struct {
		db    *sqlitefile.DB
		table string
	}{{a, "a"}, {b, "b"}} {
		wg.Go(func() {
			for i := range n {
				if _, err := db.db.W.Exec("INSERT INTO "+db.table+" (n) VALUES (?)", i); err != nil {
					t.Errorf("%s: %v", db.table, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, c := range []struct {
		db    *sqlitefile.DB
		table string
	}{{a, "b"}, {b, "a"}} {
		var got int
		if err := c.db.R.QueryRow("SELECT count(*) FROM " + c.table).Scan(&got); err != nil || got != n {
			t.Errorf("%s read through the other owner: %d, %v; want %d", c.table, got, err, n)
		}
	}
	if _, err := a.R.Exec("INSERT INTO a (n) VALUES (1)"); err == nil {
		t.Error("a reader wrote")
	}
	for name, want := range map[string]os.FileMode{path: 0o600, path + ".lock": 0o600, path + ".b.lock": 0o600} {
		if fi, err := os.Stat(name); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want %v", name, fi.Mode(), err, want)
		}
	}
}
