package sessionserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver
)

// ErrNotFound: no unexpired record has that key and namespace.
var ErrNotFound = errors.New("sessionserver: record not found")

// Record is one stored session record.
type Record struct {
	// Key is the session's uncompressed public key in lower-case hex.
	Key string
	// Namespace separates records of one key; usually empty.
	Namespace string
	// Data is the encrypted payload, as the client sent it.
	Data string
	// ExpiresAt is when the record stops being readable.
	ExpiresAt time.Time
}

// Store keeps session records. *DB implements it on SQLite and PostgreSQL.
type Store interface {
	// Put creates or replaces the record of (Key, Namespace).
	Put(ctx context.Context, r Record, now time.Time) error
	// Get returns the data of an unexpired record, or ErrNotFound.
	Get(ctx context.Context, key, namespace string, now time.Time) (string, error)
	// DeleteExpired removes the records expired at now and returns how many.
	DeleteExpired(ctx context.Context, now time.Time) (int64, error)
}

var _ Store = (*DB)(nil)

// DB is the SQL Store: SQLite (pure-Go driver) or PostgreSQL (pgx), with
// the same schema and queries.
type DB struct {
	db       *sql.DB
	postgres bool
}

// OpenSQLite opens (creating it if needed) the SQLite database at path and
// migrates it. An empty path opens a private in-memory database.
func OpenSQLite(ctx context.Context, path string) (*DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Set("_txlock", "immediate")
	var dsn string
	if path == "" {
		dsn = "file::memory:?" + q.Encode()
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		dsn = "file:" + path + "?" + q.Encode()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sessionserver: open sqlite: %w", err)
	}
	if path == "" {
		// Every connection to :memory: is a database of its own: keep one.
		db.SetMaxOpenConns(1)
	}
	return open(ctx, &DB{db: db})
}

// OpenPostgres opens the PostgreSQL database at dsn and migrates it. Many
// server instances may share it.
func OpenPostgres(ctx context.Context, dsn string) (*DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("sessionserver: open postgres: %w", err)
	}
	db.SetMaxOpenConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return open(ctx, &DB{db: db, postgres: true})
}

func open(ctx context.Context, d *DB) (*DB, error) {
	if err := d.migrate(ctx); err != nil {
		_ = d.db.Close()
		return nil, err
	}
	return d, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

// rebind turns ? placeholders into $n for PostgreSQL; the queries hold no
// literal question marks.
func (d *DB) rebind(q string) string {
	if !d.postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// migrations are applied in order, each once. Append; never edit one that
// has shipped. The version table is this package's own, so the session
// records can share a database with the gateway's store.
var migrations = []string{
	`CREATE TABLE auth_sessions (
		session_key TEXT NOT NULL,
		namespace TEXT NOT NULL,
		data TEXT NOT NULL,
		expires_at BIGINT NOT NULL,
		updated_at BIGINT NOT NULL,
		PRIMARY KEY (session_key, namespace)
	);
	CREATE INDEX auth_sessions_expires ON auth_sessions (expires_at)`,
}

func (d *DB) migrate(ctx context.Context) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sessionserver: migrate: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if d.postgres {
		// Serializes concurrent starts; any number fixed for this package.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7305804066215290739)`); err != nil {
			return fmt.Errorf("sessionserver: migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS auth_sessions_schema (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("sessionserver: migrate: %w", err)
	}
	var have sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM auth_sessions_schema`).Scan(&have); err != nil {
		return fmt.Errorf("sessionserver: migrate: %w", err)
	}
	if int(have.Int64) > len(migrations) {
		return fmt.Errorf("sessionserver: schema version %d is newer than this portico (%d): upgrade portico", have.Int64, len(migrations))
	}
	for v := int(have.Int64) + 1; v <= len(migrations); v++ {
		for _, stmt := range strings.Split(migrations[v-1], ";\n") {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sessionserver: migration %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO auth_sessions_schema (version, applied_at) VALUES (?, ?)`), v, time.Now().UnixMilli()); err != nil {
			return fmt.Errorf("sessionserver: migration %d: %w", v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sessionserver: migrate: %w", err)
	}
	return nil
}

// Version returns the schema version.
func (d *DB) Version(ctx context.Context) (int, error) {
	var v int
	err := d.db.QueryRowContext(ctx, `SELECT MAX(version) FROM auth_sessions_schema`).Scan(&v)
	return v, err
}

// Put creates or replaces a record.
func (d *DB) Put(ctx context.Context, r Record, now time.Time) error {
	_, err := d.db.ExecContext(ctx, d.rebind(`INSERT INTO auth_sessions (session_key, namespace, data, expires_at, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (session_key, namespace) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at, updated_at = excluded.updated_at`),
		r.Key, r.Namespace, r.Data, r.ExpiresAt.UnixMilli(), now.UnixMilli())
	if err != nil {
		return fmt.Errorf("sessionserver: put: %w", err)
	}
	return nil
}

// Get returns the data of an unexpired record.
func (d *DB) Get(ctx context.Context, key, namespace string, now time.Time) (string, error) {
	var data string
	err := d.db.QueryRowContext(ctx, d.rebind(`SELECT data FROM auth_sessions WHERE session_key = ? AND namespace = ? AND expires_at > ?`),
		key, namespace, now.UnixMilli()).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("sessionserver: get: %w", err)
	}
	return data, nil
}

// DeleteExpired removes expired records.
func (d *DB) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	res, err := d.db.ExecContext(ctx, d.rebind(`DELETE FROM auth_sessions WHERE expires_at <= ?`), now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("sessionserver: delete expired: %w", err)
	}
	return res.RowsAffected()
}
