package clients

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/porticohq/portico/store/sqldb"
)

// DB is the registry in SQLite or PostgreSQL (table auth_clients, schema
// version in auth_clients_schema), shared by every auth server instance
// that uses the database.
type DB struct {
	db *sql.DB
	d  sqldb.Dialect
}

// OpenSQLite opens (creating it if needed) the SQLite database at path
// and migrates it; an empty path is a private in-memory database.
func OpenSQLite(ctx context.Context, path string) (*DB, error) {
	return open(ctx, sqldb.SQLiteFile(path, sqldb.SQLiteOptions{}))
}

// OpenPostgres opens the PostgreSQL database at dsn and migrates it. The
// registry is read rarely: a small pool.
func OpenPostgres(ctx context.Context, dsn string) (*DB, error) {
	return open(ctx, sqldb.PostgresDSN(dsn, 4))
}

func open(ctx context.Context, src sqldb.Source) (*DB, error) {
	schema := sqldb.Schema{Table: "auth_clients_schema", LockID: 5094415932877106217, Steps: sqldb.SQL(migrations...)}
	db, err := sqldb.Open(ctx, src, schema, time.Now())
	if err != nil {
		return nil, fmt.Errorf("clients: %w", err)
	}
	return &DB{db: db, d: src.Dialect()}, nil
}

// migrations are applied in order, each once; append, never edit.
var migrations = []string{
	`CREATE TABLE auth_clients (
		client_id TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		redirect_urls TEXT NOT NULL,
		origins TEXT NOT NULL,
		created_at BIGINT NOT NULL
	)`,
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

// Put registers c, replacing the client of the same id (its creation
// time is kept).
func (d *DB) Put(ctx context.Context, c Client) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("clients: %w", err)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	if c.Origins == nil {
		c.Origins = []string{}
	}
	redirects, _ := json.Marshal(c.RedirectURLs)
	origins, _ := json.Marshal(c.Origins)
	_, err := d.db.ExecContext(ctx, d.d.Rebind(`INSERT INTO auth_clients (client_id, name, redirect_urls, origins, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, redirect_urls = excluded.redirect_urls, origins = excluded.origins`),
		c.ID, c.Name, string(redirects), string(origins), c.CreatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("clients: put: %w", err)
	}
	return nil
}

// Client returns the client registered under id.
func (d *DB) Client(ctx context.Context, id string) (*Client, error) {
	rows, err := d.query(ctx, `WHERE client_id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	return &rows[0], nil
}

// List returns every client, by id.
func (d *DB) List(ctx context.Context) ([]Client, error) {
	return d.query(ctx, `ORDER BY client_id`)
}

// Delete removes a client; ErrNotFound if there is none.
func (d *DB) Delete(ctx context.Context, id string) error {
	res, err := d.db.ExecContext(ctx, d.d.Rebind(`DELETE FROM auth_clients WHERE client_id = ?`), id)
	if err != nil {
		return fmt.Errorf("clients: delete: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNotFound
	}
	return nil
}

func (d *DB) query(ctx context.Context, where string, args ...any) ([]Client, error) {
	rows, err := d.db.QueryContext(ctx, d.d.Rebind(`SELECT client_id, name, redirect_urls, origins, created_at FROM auth_clients `+where), args...)
	if err != nil {
		return nil, fmt.Errorf("clients: read: %w", err)
	}
	defer rows.Close()
	var out []Client
	for rows.Next() {
		var c Client
		var redirects, origins string
		var created int64
		if err := rows.Scan(&c.ID, &c.Name, &redirects, &origins, &created); err != nil {
			return nil, fmt.Errorf("clients: read: %w", err)
		}
		if json.Unmarshal([]byte(redirects), &c.RedirectURLs) != nil || json.Unmarshal([]byte(origins), &c.Origins) != nil {
			return nil, errors.New("clients: read: stored URLs do not decode")
		}
		c.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}
