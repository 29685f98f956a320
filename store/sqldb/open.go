package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"modernc.org/sqlite"               // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLiteOptions tune a SQLite Source.
type SQLiteOptions struct {
	// ForeignKeys turns foreign key enforcement on.
	ForeignKeys bool
	// FullSync makes every commit durable across power loss
	// (synchronous=FULL); the default, NORMAL, is durable across a crash
	// of the process.
	FullSync bool
}

// Source is a database to open: a SQLite file or a PostgreSQL server.
// SQLiteFile and PostgresDSN make one; its String names it without secrets.
type Source struct {
	dialect Dialect
	// target is the SQLite path ("" is in memory) or the PostgreSQL DSN.
	target   string
	sqlite   SQLiteOptions
	maxConns int
}

// SQLiteFile is the SQLite database at path, created if missing. It opens
// in WAL mode with a busy timeout and immediate write transactions, so
// several processes can share the file (`portico keys` beside `portico
// serve`); the file and its directory are made private first (MakePrivate:
// 0600 and 0700, whatever they were). An empty path is a private in-memory
// database, gone when it is closed.
func SQLiteFile(path string, o SQLiteOptions) Source {
	return Source{dialect: SQLite(), target: path, sqlite: o}
}

// PostgresDSN is the PostgreSQL database at dsn (a postgres:// URL or a
// key=value string, as pgx reads it), with a pool of at most maxConns
// connections; 0 is 16. Several processes sharing one server take a
// smaller pool each.
func PostgresDSN(dsn string, maxConns int) Source {
	if maxConns <= 0 {
		maxConns = 16
	}
	return Source{dialect: Postgres(), target: dsn, maxConns: maxConns}
}

// Dialect is the source's dialect, which a package's migrations and
// queries may depend on.
func (s Source) Dialect() Dialect { return s.dialect }

// String names the database for an operator: the SQLite file, or the
// PostgreSQL user, host, port, database and search_path. It never holds
// the password.
func (s Source) String() string {
	if s.dialect.Name != "postgres" {
		if s.target == "" {
			return "sqlite in memory"
		}
		return "sqlite " + s.target
	}
	c, err := pgconn.ParseConfig(s.target)
	if err != nil {
		return "postgres (the DSN does not parse)"
	}
	name := fmt.Sprintf("postgres %s@%s/%s", c.User, net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.Database)
	if sp := c.RuntimeParams["search_path"]; sp != "" {
		name += " (search_path " + sp + ")"
	}
	return name
}

// Open opens the database src names and brings schema up to date,
// stamping the versions it applies with now. It is the one way Portico's
// packages open their databases: each passes its own Schema. On failure
// nothing stays open and the error is an *Error that names the database
// and, when one failed, the migration.
func Open(ctx context.Context, src Source, schema Schema, now time.Time) (*sql.DB, error) {
	var db *sql.DB
	var err error
	if src.dialect.Name == "postgres" {
		db, err = openPostgres(src)
	} else {
		db, err = openSQLite(src)
	}
	if err == nil && src.dialect.Name == "sqlite" && src.target != "" {
		if err = useWAL(ctx, db, sqliteBusyTimeout); err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		return nil, &Error{Database: src.String(), Schema: schema.Table, Err: err}
	}
	if merr := migrate(ctx, db, src.dialect, schema, now); merr != nil {
		_ = db.Close()
		merr.Database = src.String()
		return nil, merr
	}
	return db, nil
}

func openSQLite(src Source) (*sql.DB, error) {
	path, o := src.target, src.sqlite
	if path != "" {
		if err := MakePrivate(path); err != nil {
			return nil, err
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	if o.ForeignKeys {
		q.Add("_pragma", "foreign_keys(1)")
	}
	q.Set("_txlock", "immediate")
	dsn := "file::memory:?" + q.Encode()
	if path != "" {
		if o.FullSync {
			q.Add("_pragma", "synchronous(FULL)")
		} else {
			q.Add("_pragma", "synchronous(NORMAL)")
		}
		dsn = "file:" + path + "?" + q.Encode()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if path == "" {
		// Every connection to :memory: is a database of its own: keep one.
		db.SetMaxOpenConns(1)
		return db, nil
	}
	// A new connection reads the schema and runs the pragmas again (a
	// quarter of the CPU of 1,000 webhooks reading their outboxes when
	// database/sql kept its default two idle connections and opened one
	// for nearly every read, docs/benchmarks.md, issue 38): concurrent
	// readers find one idle instead.
	db.SetMaxIdleConns(sqliteIdleConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// sqliteIdleConns is how many idle connections a SQLite file's pool keeps.
const sqliteIdleConns = 16

// sqliteBusyTimeout is how long a SQLite statement waits for another
// connection's lock, and how long Open waits to switch a new file to WAL.
const sqliteBusyTimeout = 10 * time.Second

// useWAL switches the SQLite database to WAL mode, waiting up to wait for
// other connections, in this process or another, that hold the file.
//
// The switch is not left to a journal_mode pragma in the DSN, which every
// new connection would run: on a file still in rollback mode the switch
// takes its exclusive lock without calling the busy handler, so when
// several openers meet on a fresh file (two goroutines, or `portico keys`
// while `portico serve` first creates the store) all but one fail at once
// with SQLITE_BUSY whatever the busy timeout. Here the switch is retried
// until it takes or wait has passed. WAL is a property of the file, so the
// pool's later connections, and every later open, find it set and never
// switch again.
func useWAL(ctx context.Context, db *sql.DB, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		var mode string
		err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode)
		if err == nil && strings.EqualFold(mode, "wal") {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("journal mode %q after switching to WAL", mode)
		} else if !isBusy(err) {
			return fmt.Errorf("switch to WAL: %w", err)
		}
		if time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("switch to WAL: other connections held the file for %v: %w", wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause + rand.N(pause)):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED, in
// any of their extended forms.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

func openPostgres(src Source) (*sql.DB, error) {
	db, err := sql.Open("pgx", src.target)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(src.maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}
