// Package testsvc gives tests their own piece of the real PostgreSQL and
// Redis servers that run on development and CI machines: a fresh schema,
// dropped after the test, or a unique Redis key prefix, deleted after it.
//
// When a server is not reachable the test is skipped, unless
// PORTICO_TEST_STRICT=1 (set by `make test`), which makes it fail: CI must
// never pass by skipping.
package testsvc

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/redis/go-redis/v9"
)

// Default addresses; PORTICO_TEST_POSTGRES and PORTICO_TEST_REDIS override.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultRedis    = "redis://127.0.0.1:6379/0"
)

func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("PORTICO_TEST_STRICT") == "1" {
		t.Fatalf("%s is not reachable (PORTICO_TEST_STRICT=1): %v", what, err)
	}
	t.Skipf("%s is not reachable: %v", what, err)
}

// Suffix returns a random suffix for names private to one test.
func Suffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Postgres returns a DSN whose search_path is a new, empty schema, dropped
// when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	base := os.Getenv("PORTICO_TEST_POSTGRES")
	if base == "" {
		base = DefaultPostgres
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", base)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		unavailable(t, "PostgreSQL", err)
	}
	schema := "portico_test_" + Suffix()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		_ = db.Close()
	})
	sep := "?"
	for _, c := range base {
		if c == '?' {
			sep = "&"
		}
	}
	return base + sep + "search_path=" + schema
}

// Redis returns the Redis URL and a key prefix private to the test; keys
// under the prefix are deleted when the test ends.
func Redis(t testing.TB) (url, prefix string) {
	t.Helper()
	url = os.Getenv("PORTICO_TEST_REDIS")
	if url == "" {
		url = DefaultRedis
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("PORTICO_TEST_REDIS: %v", err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		unavailable(t, "Redis", err)
	}
	prefix = "portico-test-" + Suffix() + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		_ = c.Close()
	})
	return url, prefix
}
