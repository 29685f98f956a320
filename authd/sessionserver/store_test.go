package sessionserver

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/porticohq/portico/internal/testsvc"
)

// backends opens a fresh DB on every backend: an in-memory and a file
// SQLite, and PostgreSQL in a schema of its own.
func backends(t *testing.T) map[string]func(t *testing.T) *DB {
	return map[string]func(t *testing.T) *DB{
		"sqlite-memory": func(t *testing.T) *DB { return mustOpen(t)(OpenSQLite(context.Background(), "")) },
		"sqlite-file": func(t *testing.T) *DB {
			return mustOpen(t)(OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "sessions.db")))
		},
		"postgres": func(t *testing.T) *DB {
			return mustOpen(t)(OpenPostgres(context.Background(), testsvc.Postgres(t)))
		},
	}
}

func mustOpen(t *testing.T) func(*DB, error) *DB {
	return func(d *DB, err error) *DB {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
}

// TestStoreContract runs the same cases on every backend.
func TestStoreContract(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			d := open(t)
			now := time.UnixMilli(1_700_000_000_000)
			if v, err := d.Version(ctx); err != nil || v != len(migrations) {
				t.Fatalf("version %d %v", v, err)
			}
			if _, err := d.Get(ctx, "k", "", now); !errors.Is(err, ErrNotFound) {
				t.Fatalf("empty get: %v", err)
			}
			must(t, d.Put(ctx, Record{Key: "k", Data: "one", ExpiresAt: now.Add(10 * time.Second)}, now))
			must(t, d.Put(ctx, Record{Key: "k", Namespace: "ns", Data: "other", ExpiresAt: now.Add(time.Hour)}, now))
			if got, err := d.Get(ctx, "k", "", now); err != nil || got != "one" {
				t.Fatalf("get: %q %v", got, err)
			}
			if got, err := d.Get(ctx, "k", "ns", now); err != nil || got != "other" {
				t.Fatalf("namespace: %q %v", got, err)
			}
			// Replacing keeps one record with the new data and expiry.
			must(t, d.Put(ctx, Record{Key: "k", Data: "two", ExpiresAt: now.Add(time.Second)}, now))
			if got, err := d.Get(ctx, "k", "", now); err != nil || got != "two" {
				t.Fatalf("replaced: %q %v", got, err)
			}
			later := now.Add(time.Second)
			if _, err := d.Get(ctx, "k", "", later); !errors.Is(err, ErrNotFound) {
				t.Fatalf("expired record returned: %v", err)
			}
			n, err := d.DeleteExpired(ctx, later)
			if err != nil || n != 1 {
				t.Fatalf("sweep: %d %v", n, err)
			}
			if got, err := d.Get(ctx, "k", "ns", later); err != nil || got != "other" {
				t.Fatalf("unexpired record swept: %q %v", got, err)
			}
			// A record can be revived by a new write after expiry.
			must(t, d.Put(ctx, Record{Key: "k", Data: "three", ExpiresAt: later.Add(time.Minute)}, later))
			if got, err := d.Get(ctx, "k", "", later); err != nil || got != "three" {
				t.Fatalf("rewrite: %q %v", got, err)
			}
		})
	}
}

// Opening twice runs no migration twice.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	d := mustOpen(t)(OpenSQLite(ctx, path))
	must(t, d.Put(ctx, Record{Key: "k", Data: "x", ExpiresAt: time.Now().Add(time.Hour)}, time.Now()))
	_ = d.Close()
	d2 := mustOpen(t)(OpenSQLite(ctx, path))
	if got, err := d2.Get(ctx, "k", "", time.Now()); err != nil || got != "x" {
		t.Fatalf("%q %v", got, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
