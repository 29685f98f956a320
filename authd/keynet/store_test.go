package keynet

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/store/sqldb"
)

// backends are a fresh database of each kind; the contract runs on both.
func backends(t *testing.T) map[string]sqldb.Source {
	return map[string]sqldb.Source{
		"sqlite":   sqldb.SQLiteFile(filepath.Join(t.TempDir(), "node.db"), sqldb.SQLiteOptions{FullSync: true}),
		"postgres": sqldb.PostgresDSN(testsvc.Postgres(t), 8),
	}
}

func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, src := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s, err := openStore(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			clock := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			s.now = func() time.Time { return clock }
			if v, err := s.Version(ctx); err != nil || v != 1 {
				t.Fatalf("version %d, %v", v, err)
			}
			if again, err := openStore(ctx, src); err != nil {
				t.Fatalf("migrating twice: %v", err)
			} else {
				_ = again.Close()
			}

			// Keys: first write wins, rows are per network and node.
			k := StoredKey{Network: "testnet", Node: 2, Verifier: "v", VerifierID: "alice", Commitments: []string{"02aa", "03bb"}}
			k.Share[31] = 7
			if _, err := s.Key(ctx, "testnet", 2, "v", "alice"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing key: %v", err)
			}
			if err := s.PutKey(ctx, k); err != nil {
				t.Fatal(err)
			}
			if err := s.PutKey(ctx, k); !errors.Is(err, ErrKeyExists) {
				t.Fatalf("second PutKey: %v", err)
			}
			got, err := s.Key(ctx, "testnet", 2, "v", "alice")
			if err != nil || got.Share != k.Share || strings.Join(got.Commitments, ",") != "02aa,03bb" || !got.CreatedAt.Equal(clock) {
				t.Fatalf("got %+v, %v", got, err)
			}
			for _, other := range []struct {
				net  string
				node int
				v    string
				id   string
			}{{"cyan", 2, "v", "alice"}, {"testnet", 3, "v", "alice"}, {"testnet", 2, "w", "alice"}, {"testnet", 2, "v", "Alice"}} {
				if _, err := s.Key(ctx, other.net, other.node, other.v, other.id); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%+v: %v", other, err)
				}
			}

			// Used tokens: refused until they expire.
			if err := s.UseToken(ctx, "testnet", 2, "c1", clock.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := s.UseToken(ctx, "testnet", 2, "c1", clock.Add(time.Hour)); !errors.Is(err, ErrTokenReused) {
				t.Fatalf("reuse: %v", err)
			}
			if err := s.UseToken(ctx, "testnet", 3, "c1", clock.Add(time.Hour)); err != nil {
				t.Fatalf("another node: %v", err)
			}
			clock = clock.Add(2 * time.Hour)
			if err := s.UseToken(ctx, "testnet", 2, "c1", clock.Add(time.Hour)); err != nil {
				t.Fatalf("after expiry: %v", err)
			}

			// Metadata: only newer versions replace.
			m := SignedMetadata{Network: "testnet", Node: 2, Owner: "02ab", Version: 1, Data: "one", Signature: "{}"}
			if _, err := s.Metadata(ctx, "testnet", 2, "02ab"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing metadata: %v", err)
			}
			if err := s.PutMetadata(ctx, m); err != nil {
				t.Fatal(err)
			}
			m.Data = "replayed"
			if err := s.PutMetadata(ctx, m); !errors.Is(err, ErrStaleMetadata) {
				t.Fatalf("same version: %v", err)
			}
			m.Version, m.Data = 2, "two"
			if err := s.PutMetadata(ctx, m); err != nil {
				t.Fatal(err)
			}
			m.Version, m.Data = 1, "old"
			if err := s.PutMetadata(ctx, m); !errors.Is(err, ErrStaleMetadata) {
				t.Fatalf("older version: %v", err)
			}
			gm, err := s.Metadata(ctx, "testnet", 2, "02ab")
			if err != nil || gm.Version != 2 || gm.Data != "two" {
				t.Fatalf("metadata %+v, %v", gm, err)
			}
		})
	}
}
