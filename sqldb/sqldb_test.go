package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/sqldb"
	"github.com/porticohq/portico/internal/testsvc"
)

func TestRebind(t *testing.T) {
	cases := []struct {
		d        sqldb.Dialect
		in, want string
	}{
		{sqldb.SQLite(), `SELECT a FROM t WHERE b = ? AND c = ?`, `SELECT a FROM t WHERE b = ? AND c = ?`},
		{sqldb.Postgres(), `SELECT a FROM t WHERE b = ? AND c = ?`, `SELECT a FROM t WHERE b = $1 AND c = $2`},
		{sqldb.Postgres(), `INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, `INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`},
		{sqldb.Postgres(), `SELECT 1`, `SELECT 1`},
	}
	for _, c := range cases {
		if got := c.d.Rebind(c.in); got != c.want {
			t.Errorf("%s Rebind(%q) = %q, want %q", c.d.Name, c.in, got, c.want)
		}
	}
}

// backend is an open database and its dialect.
type backend struct {
	db *sql.DB
	d  sqldb.Dialect
}

// backends opens a fresh database of each kind.
func backends(t *testing.T) map[string]backend {
	out := map[string]backend{}
	lite, err := sqldb.OpenSQLite(filepath.Join(t.TempDir(), "t.db"), sqldb.SQLiteOptions{ForeignKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out["sqlite"] = backend{lite, sqldb.SQLite()}
	pg, err := sqldb.OpenPostgres(testsvc.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	out["postgres"] = backend{pg, sqldb.Postgres()}
	return out
}

// TestMigrate runs a schema on both backends: each step once, concurrent
// starts serialized, a newer database refused, unique violations detected.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s := sqldb.Schema{Table: "test_schema", LockID: 42, Steps: []string{
				`CREATE TABLE items (id ` + b.d.Serial + `, name TEXT NOT NULL UNIQUE)`,
				`ALTER TABLE items ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
				CREATE INDEX items_size ON items (size)`,
			}}
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Go(func() { errs <- sqldb.Migrate(ctx, b.db, b.d, s, time.Now()) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if v, err := sqldb.Version(ctx, b.db, "test_schema"); err != nil || v != 2 {
				t.Fatalf("version %d, %v", v, err)
			}
			if _, err := b.db.ExecContext(ctx, b.d.Rebind(`INSERT INTO items (name, size) VALUES (?, ?)`), "a", 1); err != nil {
				t.Fatal(err)
			}
			_, err := b.db.ExecContext(ctx, b.d.Rebind(`INSERT INTO items (name, size) VALUES (?, ?)`), "a", 2)
			if !sqldb.IsUnique(err) {
				t.Fatalf("duplicate name: %v", err)
			}
			if sqldb.IsUnique(errors.New("connection refused")) || sqldb.IsUnique(nil) {
				t.Fatal("IsUnique matched a non-unique error")
			}
			older := s
			older.Steps = s.Steps[:1]
			if err := sqldb.Migrate(ctx, b.db, b.d, older, time.Now()); err == nil || !strings.Contains(err.Error(), "schema version 2 is newer than this portico (1)") {
				t.Fatalf("older binary on a newer database: %v", err)
			}
		})
	}
}

// A database file and its directory are private to their owner whatever
// existed before: a new directory and file, and ones made readable by
// others (0755 and 0644, the usual umask) before Portico first ran.
func TestOpenSQLiteMakesPrivate(t *testing.T) {
	cases := []struct {
		name string
		pre  func(t *testing.T, dir, path string)
	}{
		{"new directory and file", func(*testing.T, string, string) {}},
		{"directory 0755", func(t *testing.T, dir, _ string) { mustMode(t, os.Mkdir(dir, 0o755), dir, 0o755) }},
		{"directory 0755, files 0644", func(t *testing.T, dir, path string) {
			mustMode(t, os.Mkdir(dir, 0o755), dir, 0o755)
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				mustMode(t, os.WriteFile(p, nil, 0o644), p, 0o644)
			}
		}},
		{"directory 0777", func(t *testing.T, dir, _ string) { mustMode(t, os.Mkdir(dir, 0o777), dir, 0o777) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			path := filepath.Join(dir, "portico.db")
			c.pre(t, dir, path)
			db, err := sqldb.OpenSQLite(path, sqldb.SQLiteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			checkMode(t, dir, 0o700)
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				checkMode(t, p, 0o600)
			}
		})
	}
}

// A directory shared with other users (sticky bit, as /tmp) is not taken
// over: the open fails and says why.
func TestOpenSQLiteRefusesSharedDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	_, err := sqldb.OpenSQLite(filepath.Join(dir, "portico.db"), sqldb.SQLiteOptions{})
	if !errors.Is(err, sqldb.ErrSharedDir) {
		t.Fatalf("open in a sticky directory: %v, want ErrSharedDir", err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o777 {
		t.Errorf("the shared directory's mode changed to %v", fi.Mode())
	}
}

// mustMode fails on err and sets p's mode exactly (the umask aside).
func mustMode(t *testing.T, err error, p string, mode os.FileMode) {
	t.Helper()
	if err == nil {
		err = os.Chmod(p, mode)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func checkMode(t *testing.T, p string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want %v", filepath.Base(p), fi.Mode().Perm(), want)
	}
}
