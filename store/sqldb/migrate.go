package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Schema is one package's migrations.
type Schema struct {
	// Table records the applied versions (version, applied_at). Each
	// package has its own, so several can share one database.
	Table string
	// LockID is the PostgreSQL advisory lock that serializes concurrent
	// migrations of this schema; any number fixed for the schema.
	LockID int64
	// Steps are the migrations; version v is Steps[v-1]. Append new
	// steps; never edit one that has shipped.
	Steps []Step
}

// Step is one migration: SQL statements, Go code for what SQL cannot say
// (rows rewritten by a function of the program), or both, the SQL first.
// Both run in the migration's transaction.
type Step struct {
	// SQL holds one or more statements separated by ";\n".
	SQL string
	// Go runs after SQL, in the same transaction.
	Go func(ctx context.Context, tx *sql.Tx, d Dialect) error
}

// SQL makes one step of each text, for the packages whose migrations are
// all SQL.
func SQL(texts ...string) []Step {
	steps := make([]Step, len(texts))
	for i, t := range texts {
		steps[i].SQL = t
	}
	return steps
}

// Error is a database that would not open or migrate. It names the
// database (Source.String: no password) and the migration, so an operator
// running several databases (the key store, the auth server's, each key
// network node's) knows which one to look at.
type Error struct {
	// Database names the database, as Source.String does.
	Database string
	// Schema is the schema's version table.
	Schema string
	// Migration is the version that failed; 0 when the failure came before
	// any migration ran (opening, locking, reading the version).
	Migration int
	// Err is the cause.
	Err error
}

// Error says where, then what.
func (e *Error) Error() string {
	if e.Migration > 0 {
		return fmt.Sprintf("%s: migration %d of %s: %v", e.Database, e.Migration, e.Schema, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Database, e.Schema, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrNewer is the cause when the database's schema is newer than the
// running binary's: an older Portico must not write to it.
var ErrNewer = errors.New("the schema is newer than this portico: upgrade portico")

// migrate brings the schema up to date in one transaction. Concurrent
// starts are safe: on PostgreSQL the advisory lock serializes them, on
// SQLite the immediate transaction does. A database newer than Steps is
// ErrNewer. now stamps the applied versions. The error's Database is left
// for Open to fill in.
func migrate(ctx context.Context, db *sql.DB, d Dialect, s Schema, now time.Time) *Error {
	fail := func(v int, err error) *Error { return &Error{Schema: s.Table, Migration: v, Err: err} }
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fail(0, err)
	}
	defer func() { _ = tx.Rollback() }()
	if d.Name == "postgres" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, s.LockID); err != nil {
			return fail(0, fmt.Errorf("lock: %w", err))
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+s.Table+` (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fail(0, err)
	}
	var have sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM `+s.Table).Scan(&have); err != nil {
		return fail(0, err)
	}
	if int(have.Int64) > len(s.Steps) {
		return fail(0, fmt.Errorf("%w (version %d, this portico knows %d)", ErrNewer, have.Int64, len(s.Steps)))
	}
	for v := int(have.Int64) + 1; v <= len(s.Steps); v++ {
		step := s.Steps[v-1]
		if step.SQL == "" && step.Go == nil {
			return fail(v, errors.New("the step is empty"))
		}
		if step.SQL != "" {
			for _, stmt := range strings.Split(step.SQL, ";\n") {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fail(v, err)
				}
			}
		}
		if step.Go != nil {
			if err := step.Go(ctx, tx, d); err != nil {
				return fail(v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, d.Rebind(`INSERT INTO `+s.Table+` (version, applied_at) VALUES (?, ?)`), v, now.UnixMilli()); err != nil {
			return fail(v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(0, err)
	}
	return nil
}
