package sessionserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/porticohq/portico/store/sqldb"
)

// Store errors.
var (
	// ErrNotFound: no unexpired record has that key and namespace.
	ErrNotFound = errors.New("sessionserver: record not found")
	// ErrInvalidated: the key was logged out; it cannot be written again
	// before its record would have expired.
	ErrInvalidated = errors.New("sessionserver: the session was logged out")
)

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
	// Client is the address (the limit key) of the client that wrote it,
	// for its quota of stored bytes; empty for the server's own writes.
	Client string
}

// Store keeps session records. *DB implements it on SQLite and PostgreSQL.
type Store interface {
	// Put creates or replaces the record of (Key, Namespace), or returns
	// ErrInvalidated if the key was logged out and a tombstone of it, in
	// any namespace, lives.
	Put(ctx context.Context, r Record, now time.Time) error
	// Invalidate replaces the record with a tombstone that lives until
	// the record would have expired, and at least until r.ExpiresAt, and
	// the key's live records in other namespaces with tombstones of their
	// own; r.Data is not kept.
	Invalidate(ctx context.Context, r Record, now time.Time) error
	// Update replaces the data of a live record, keeping its expiry, or
	// returns ErrNotFound.
	Update(ctx context.Context, r Record, now time.Time) error
	// Get returns the data of an unexpired record, or ErrNotFound.
	Get(ctx context.Context, key, namespace string, now time.Time) (string, error)
	// StoredBytes is the size of the unexpired records client wrote.
	StoredBytes(ctx context.Context, client string, now time.Time) (int64, error)
	// DeleteExpired removes the records expired at now and returns how many.
	DeleteExpired(ctx context.Context, now time.Time) (int64, error)
}

var _ Store = (*DB)(nil)

// DB is the SQL Store: SQLite (pure-Go driver) or PostgreSQL (pgx), with
// the same schema and queries.
type DB struct {
	db *sql.DB
	d  sqldb.Dialect
}

// OpenSQLite opens (creating it if needed) the SQLite database at path and
// migrates it. An empty path opens a private in-memory database.
func OpenSQLite(ctx context.Context, path string) (*DB, error) {
	return open(ctx, sqldb.SQLiteFile(path, sqldb.SQLiteOptions{}))
}

// OpenPostgres opens the PostgreSQL database at dsn and migrates it. Many
// server instances may share it.
func OpenPostgres(ctx context.Context, dsn string) (*DB, error) {
	return open(ctx, sqldb.PostgresDSN(dsn, 0))
}

func open(ctx context.Context, src sqldb.Source) (*DB, error) {
	// The lock id is any number fixed for this package.
	schema := sqldb.Schema{Table: "auth_sessions_schema", LockID: 7305804066215290739, Steps: sqldb.SQL(migrations...)}
	db, err := sqldb.Open(ctx, src, schema, time.Now())
	if err != nil {
		return nil, fmt.Errorf("sessionserver: %w", err)
	}
	return &DB{db: db, d: src.Dialect()}, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

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
	// A logged-out key keeps a tombstone (tombstone = 1, no data) until its
	// record would have expired; client is who wrote a record, for the
	// quota of stored bytes.
	`ALTER TABLE auth_sessions ADD COLUMN client TEXT NOT NULL DEFAULT '';
	ALTER TABLE auth_sessions ADD COLUMN tombstone INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX auth_sessions_client ON auth_sessions (client, expires_at)`,
}

// Version returns the schema version.
func (d *DB) Version(ctx context.Context) (int, error) {
	return sqldb.Version(ctx, d.db, "auth_sessions_schema")
}

// Put creates or replaces a record unless a live tombstone holds the key,
// in any namespace: the signature covers only the data, so a captured
// request must not bring a logged-out session back under another
// namespace.
func (d *DB) Put(ctx context.Context, r Record, now time.Time) error {
	res, err := d.db.ExecContext(ctx, d.d.Rebind(`INSERT INTO auth_sessions (session_key, namespace, data, expires_at, updated_at, client, tombstone)
		SELECT ?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT), ?, 0
		WHERE NOT EXISTS (SELECT 1 FROM auth_sessions WHERE session_key = ? AND tombstone = 1 AND expires_at > ?)
		ON CONFLICT (session_key, namespace) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at,
			updated_at = excluded.updated_at, client = excluded.client, tombstone = 0
		WHERE auth_sessions.tombstone = 0 OR auth_sessions.expires_at <= ?`),
		r.Key, r.Namespace, r.Data, r.ExpiresAt.UnixMilli(), now.UnixMilli(), r.Client, r.Key, now.UnixMilli(), now.UnixMilli())
	if err != nil {
		return fmt.Errorf("sessionserver: put: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrInvalidated
	}
	return nil
}

// Invalidate writes a tombstone that lives as long as the record it
// replaces would have, and at least until r.ExpiresAt, and turns the key's
// live records in every other namespace into tombstones too: a logout ends
// the session key, not one of its records.
func (d *DB) Invalidate(ctx context.Context, r Record, now time.Time) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sessionserver: invalidate: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, d.d.Rebind(`INSERT INTO auth_sessions (session_key, namespace, data, expires_at, updated_at, client, tombstone)
		VALUES (?, ?, '', ?, ?, ?, 1)
		ON CONFLICT (session_key, namespace) DO UPDATE SET data = '', tombstone = 1, updated_at = excluded.updated_at,
			expires_at = CASE WHEN auth_sessions.expires_at > excluded.expires_at THEN auth_sessions.expires_at ELSE excluded.expires_at END`),
		r.Key, r.Namespace, r.ExpiresAt.UnixMilli(), now.UnixMilli(), r.Client); err != nil {
		return fmt.Errorf("sessionserver: invalidate: %w", err)
	}
	if _, err := tx.ExecContext(ctx, d.d.Rebind(`UPDATE auth_sessions SET data = '', tombstone = 1, updated_at = ?
		WHERE session_key = ? AND namespace <> ? AND tombstone = 0 AND expires_at > ?`),
		now.UnixMilli(), r.Key, r.Namespace, now.UnixMilli()); err != nil {
		return fmt.Errorf("sessionserver: invalidate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sessionserver: invalidate: %w", err)
	}
	return nil
}

// Update replaces the data of a live record.
func (d *DB) Update(ctx context.Context, r Record, now time.Time) error {
	res, err := d.db.ExecContext(ctx, d.d.Rebind(`UPDATE auth_sessions SET data = ?, updated_at = ?
		WHERE session_key = ? AND namespace = ? AND tombstone = 0 AND expires_at > ?`),
		r.Data, now.UnixMilli(), r.Key, r.Namespace, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("sessionserver: update: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNotFound
	}
	return nil
}

// StoredBytes sums the data of client's unexpired records.
func (d *DB) StoredBytes(ctx context.Context, client string, now time.Time) (int64, error) {
	var n int64
	err := d.db.QueryRowContext(ctx, d.d.Rebind(`SELECT COALESCE(SUM(LENGTH(data)), 0) FROM auth_sessions WHERE client = ? AND expires_at > ?`),
		client, now.UnixMilli()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sessionserver: stored bytes: %w", err)
	}
	return n, nil
}

// Get returns the data of an unexpired record.
func (d *DB) Get(ctx context.Context, key, namespace string, now time.Time) (string, error) {
	var data string
	err := d.db.QueryRowContext(ctx, d.d.Rebind(`SELECT data FROM auth_sessions WHERE session_key = ? AND namespace = ? AND expires_at > ? AND tombstone = 0`),
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
	res, err := d.db.ExecContext(ctx, d.d.Rebind(`DELETE FROM auth_sessions WHERE expires_at <= ?`), now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("sessionserver: delete expired: %w", err)
	}
	return res.RowsAffected()
}
