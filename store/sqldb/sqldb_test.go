package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/store/sqldb"
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

// sources are a fresh database of each kind.
func sources(t *testing.T) map[string]sqldb.Source {
	return map[string]sqldb.Source{
		"sqlite":   sqldb.SQLiteFile(filepath.Join(t.TempDir(), "t.db"), sqldb.SQLiteOptions{ForeignKeys: true}),
		"postgres": sqldb.PostgresDSN(testsvc.Postgres(t), 0),
	}
}

// open opens src with schema and closes it when the test ends.
func open(t *testing.T, src sqldb.Source, s sqldb.Schema) *sql.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), src, s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestOpenMigrates runs a schema on both backends: each step once,
// concurrent starts serialized, SQL and Go steps in order, a newer
// database refused, unique violations detected.
func TestOpenMigrates(t *testing.T) {
	ctx := context.Background()
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			d := src.Dialect()
			s := sqldb.Schema{Table: "test_schema", LockID: 42, Steps: append(sqldb.SQL(
				`CREATE TABLE items (id `+d.Serial+`, name TEXT NOT NULL UNIQUE)`,
				`ALTER TABLE items ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
				CREATE INDEX items_size ON items (size)`,
			), sqldb.Step{
				SQL: `INSERT INTO items (name, size) VALUES ('seed', 1)`,
				Go: func(ctx context.Context, tx *sql.Tx, d sqldb.Dialect) error {
					// Sees the SQL before it, in the same transaction.
					_, err := tx.ExecContext(ctx, d.Rebind(`UPDATE items SET size = size * ? WHERE name = ?`), 7, "seed")
					return err
				},
			})}
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Go(func() {
					db, err := sqldb.Open(ctx, src, s, time.Now())
					if err == nil {
						err = db.Close()
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			db := open(t, src, s)
			if v, err := sqldb.Version(ctx, db, "test_schema"); err != nil || v != 3 {
				t.Fatalf("version %d, %v", v, err)
			}
			var seeds, size int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*), MAX(size) FROM items WHERE name = 'seed'`).Scan(&seeds, &size); err != nil || seeds != 1 || size != 7 {
				t.Fatalf("the third step ran %d times, size %d, %v; want once, 7", seeds, size, err)
			}
			if _, err := db.ExecContext(ctx, d.Rebind(`INSERT INTO items (name, size) VALUES (?, ?)`), "a", 1); err != nil {
				t.Fatal(err)
			}
			_, err := db.ExecContext(ctx, d.Rebind(`INSERT INTO items (name, size) VALUES (?, ?)`), "a", 2)
			if !sqldb.IsUnique(err) {
				t.Fatalf("duplicate name: %v", err)
			}
			if sqldb.IsUnique(errors.New("connection refused")) || sqldb.IsUnique(nil) {
				t.Fatal("IsUnique matched a non-unique error")
			}
			older := s
			older.Steps = s.Steps[:1]
			_, err = sqldb.Open(ctx, src, older, time.Now())
			var oe *sqldb.Error
			if !errors.Is(err, sqldb.ErrNewer) || !errors.As(err, &oe) || oe.Database != src.String() || oe.Schema != "test_schema" ||
				!strings.Contains(err.Error(), "version 3, this portico knows 1") {
				t.Fatalf("older binary on a newer database: %v", err)
			}
		})
	}
}

// A failed migration leaves the database as it was, and the error names
// the database, the schema and the migration.
func TestOpenFailedMigration(t *testing.T) {
	ctx := context.Background()
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			good := sqldb.Schema{Table: "fail_schema", LockID: 43, Steps: sqldb.SQL(`CREATE TABLE a (x BIGINT)`)}
			open(t, src, good).Close()
			cases := []struct {
				name string
				step sqldb.Step
			}{
				{"bad SQL", sqldb.Step{SQL: `CREATE TABLE b (x BIGINT);
					CREATE TABLE a (x BIGINT)`}},
				{"Go step fails", sqldb.Step{SQL: `CREATE TABLE b (x BIGINT)`, Go: func(context.Context, *sql.Tx, sqldb.Dialect) error {
					return errors.New("rows do not convert")
				}}},
				{"empty step", sqldb.Step{}},
			}
			for _, c := range cases {
				bad := good
				bad.Steps = append(append([]sqldb.Step{}, good.Steps...), c.step)
				_, err := sqldb.Open(ctx, src, bad, time.Now())
				var oe *sqldb.Error
				if !errors.As(err, &oe) || oe.Migration != 2 || oe.Schema != "fail_schema" || oe.Database != src.String() ||
					!strings.HasPrefix(err.Error(), src.String()+": migration 2 of fail_schema: ") {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
			db := open(t, src, good)
			if v, err := sqldb.Version(ctx, db, "fail_schema"); err != nil || v != 1 {
				t.Fatalf("version after the failed migrations %d, %v", v, err)
			}
			if _, err := db.ExecContext(ctx, `SELECT x FROM b`); err == nil {
				t.Fatal("a failed migration left its table behind")
			}
		})
	}
}

// A database that cannot be reached is named in the error, without the
// password of its DSN.
func TestOpenUnreachable(t *testing.T) {
	src := sqldb.PostgresDSN("postgres://portico:s3cret@127.0.0.1:1/keys?sslmode=disable&connect_timeout=5", 0)
	if got, want := src.String(), "postgres portico@127.0.0.1:1/keys"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	_, err := sqldb.Open(context.Background(), src, sqldb.Schema{Table: "x_schema"}, time.Now())
	var oe *sqldb.Error
	if !errors.As(err, &oe) || oe.Migration != 0 || !strings.HasPrefix(err.Error(), "postgres portico@127.0.0.1:1/keys: x_schema: ") {
		t.Fatalf("unreachable server: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error shows the password: %v", err)
	}
	kv := sqldb.PostgresDSN("host=/run/postgresql port=5433 user=u password=s3cret dbname=d search_path=app", 0)
	if got, want := kv.String(), "postgres u@/run/postgresql:5433/d (search_path app)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
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
			db := open(t, sqldb.SQLiteFile(path, sqldb.SQLiteOptions{}), sqldb.Schema{Table: "t_schema"})
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
	src := sqldb.SQLiteFile(filepath.Join(dir, "portico.db"), sqldb.SQLiteOptions{})
	_, err := sqldb.Open(context.Background(), src, sqldb.Schema{Table: "t_schema"}, time.Now())
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

// openerEnv, when set, makes the test binary one of the processes of
// TestOpenFromProcesses: it waits for its start signal, then opens each of
// the files in the directory the variable names, in order.
const openerEnv = "SQLDB_TEST_OPENER"

// openerFiles is how many fresh files the processes of
// TestOpenFromProcesses race on, one after another.
const openerFiles = 40

// Several processes open fresh SQLite files at once, as `portico keys`
// beside a `portico serve` that is creating the store, or instances
// starting together, do: every open succeeds and each schema is migrated
// once. The processes start, load, and wait on a pipe that the test then
// closes, so they are released together; each then opens the same
// sequence of fresh files, racing on every one.
func TestOpenFromProcesses(t *testing.T) {
	if dir := os.Getenv(openerEnv); dir != "" {
		runOpener(dir)
		return
	}
	const procs = 6
	dir := filepath.Join(t.TempDir(), "data")
	start, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenFromProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), openerEnv+"="+dir)
		cmd.ExtraFiles = []*os.File{start}
		out := new(strings.Builder)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	start.Close()
	release.Close()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	if t.Failed() {
		return
	}
	for i := range openerFiles {
		db := open(t, sqldb.SQLiteFile(openerPath(dir, i), sqldb.SQLiteOptions{}), openerSchema)
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM items`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("file %d: %d seed rows, %v; want 1 (each migration once)", i, n, err)
		}
		var mode string
		if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("file %d: journal mode %q, %v", i, mode, err)
		}
	}
}

// openerSchema is the schema the processes of TestOpenFromProcesses
// migrate.
var openerSchema = sqldb.Schema{Table: "opener_schema", Steps: sqldb.SQL(
	`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`,
	`INSERT INTO items (name) VALUES ('seed')`,
)}

func openerPath(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("store-%d.db", i)) }

// runOpener is one process of TestOpenFromProcesses: it blocks on its
// inherited pipe (fd 3) until the test closes the write end, then opens
// the files in order and exits 1 at the first that fails.
func runOpener(dir string) {
	start := os.NewFile(3, "start")
	_, _ = io.Copy(io.Discard, start)
	for i := range openerFiles {
		db, err := sqldb.Open(context.Background(), sqldb.SQLiteFile(openerPath(dir, i), sqldb.SQLiteOptions{}), openerSchema, time.Now())
		if err == nil {
			err = db.Close()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "file %d: %v\n", i, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}
