package store

import (
	"context"
	"fmt"
	"time"

	"github.com/porticohq/portico/store/sqldb"
)

// OpenSQLite opens (creating it if needed) the SQLite store at path and
// migrates it. An empty path opens a private in-memory store, gone when it
// is closed. The file is in WAL mode with a busy timeout, so `portico keys`
// can write to it while `portico serve` runs.
func OpenSQLite(ctx context.Context, path string, opts ...Option) (*Store, error) {
	return open(ctx, sqldb.SQLiteFile(path, sqldb.SQLiteOptions{ForeignKeys: true}), opts)
}

// OpenPostgres opens the PostgreSQL store at dsn (a postgres:// URL or a
// key=value string, as pgx reads it) and migrates it.
func OpenPostgres(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	return open(ctx, sqldb.PostgresDSN(dsn, 0), opts)
}

// open opens src through sqldb.Open (concurrent starts are safe on both
// backends) with the store's migrations.
func open(ctx context.Context, src sqldb.Source, opts []Option) (*Store, error) {
	s := &Store{dialect: src.Dialect(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	// The lock id is any number shared by all instances: "portico" in ASCII.
	schema := sqldb.Schema{Table: "schema_migrations", LockID: 31647734761612143, Steps: sqldb.SQL(migrations(s.dialect)...)}
	db, err := sqldb.Open(ctx, src, schema, s.now())
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s.db = db
	return s, nil
}

// migrations are applied in order, each once, in a transaction of its own.
// Append new steps; never edit a released one.
func migrations(d sqldb.Dialect) []string {
	return []string{
		`CREATE TABLE api_keys (
			id ` + d.Serial + `,
			name TEXT NOT NULL,
			hash TEXT NOT NULL UNIQUE,
			daily_credits BIGINT NOT NULL,
			rate_per_second BIGINT NOT NULL DEFAULT 0,
			allow_methods TEXT NOT NULL DEFAULT '',
			allow_networks TEXT NOT NULL DEFAULT '',
			allow_origins TEXT NOT NULL DEFAULT '',
			created_at BIGINT NOT NULL,
			revoked_at BIGINT
		);
		CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;
		CREATE TABLE usage (
			day TEXT NOT NULL,
			key_id BIGINT NOT NULL REFERENCES api_keys (id),
			method TEXT NOT NULL,
			calls BIGINT NOT NULL,
			credits BIGINT NOT NULL,
			PRIMARY KEY (day, key_id, method)
		);
		CREATE INDEX usage_key_day ON usage (key_id, day);
		CREATE TABLE ledger_checkpoints (
			instance TEXT PRIMARY KEY,
			seq BIGINT NOT NULL,
			updated_at BIGINT NOT NULL
		)`,
		// Issue 26: a key's own settings beyond credits (secret digests,
		// JWT public keys, more allowlists, bounds on calls), as JSON;
		// '' for a key without any.
		`ALTER TABLE api_keys ADD COLUMN rules TEXT NOT NULL DEFAULT ''`,
		// Issue 38: webhooks, their outbox and the blocks each was sent
		// (store/webhooks.go).
		`CREATE TABLE webhooks (
			id TEXT PRIMARY KEY,
			key_id BIGINT NOT NULL REFERENCES api_keys (id),
			network TEXT NOT NULL,
			event TEXT NOT NULL,
			filter TEXT NOT NULL DEFAULT '',
			url TEXT NOT NULL,
			secret TEXT NOT NULL,
			state TEXT NOT NULL,
			paused_reason TEXT NOT NULL DEFAULT '',
			cursor_number BIGINT NOT NULL DEFAULT 0,
			cursor_hash TEXT NOT NULL DEFAULT '',
			delivered BIGINT NOT NULL DEFAULT 0,
			lease_owner TEXT NOT NULL DEFAULT '',
			lease_until BIGINT NOT NULL DEFAULT 0,
			created_at BIGINT NOT NULL
		);
		CREATE INDEX webhooks_key ON webhooks (key_id);
		CREATE TABLE webhook_deliveries (
			webhook_id TEXT NOT NULL,
			seq BIGINT NOT NULL,
			id TEXT NOT NULL,
			block_number BIGINT NOT NULL,
			block_hash TEXT NOT NULL,
			parent_hash TEXT NOT NULL,
			removed INTEGER NOT NULL,
			body TEXT NOT NULL,
			acked INTEGER NOT NULL,
			PRIMARY KEY (webhook_id, seq)
		);
		CREATE UNIQUE INDEX webhook_deliveries_id ON webhook_deliveries (webhook_id, id);
		CREATE TABLE webhook_blocks (
			webhook_id TEXT NOT NULL,
			number BIGINT NOT NULL,
			hash TEXT NOT NULL,
			parent_hash TEXT NOT NULL,
			silent INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (webhook_id, hash)
		)`,
	}
}

// Version returns the schema version.
func (s *Store) Version(ctx context.Context) (int, error) {
	return sqldb.Version(ctx, s.db, "schema_migrations")
}
