package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/apikey"
	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/store"
)

// backends opens a fresh store of each kind; every contract test runs on
// both.
func backends(t *testing.T, opts ...store.Option) map[string]func(t *testing.T) *store.Store {
	return map[string]func(t *testing.T) *store.Store{
		"sqlite": func(t *testing.T) *store.Store {
			s, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "portico.db"), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"postgres": func(t *testing.T) *store.Store {
			s, err := store.OpenPostgres(context.Background(), testsvc.Postgres(t), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

func contract(t *testing.T, name string, test func(t *testing.T, s *store.Store), opts ...store.Option) {
	t.Helper()
	for backend, open := range backends(t, opts...) {
		t.Run(name+"/"+backend, func(t *testing.T) {
			test(t, open(t))
		})
	}
}

func TestKeys(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	contract(t, "lifecycle", func(t *testing.T, s *store.Store) {
		k, secret, err := s.Create(ctx, store.NewKey{Name: "alice", DailyCredits: 1000, RatePerSecond: 50,
			AllowMethods: []string{"getBlock"}, AllowNetworks: []string{"solana-devnet"}, AllowOrigins: []string{"*.example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if apikey.Check(secret) != nil || k.Hash != apikey.Sum(secret) {
			t.Fatalf("secret %q does not match the stored digest", secret)
		}
		if !k.CreatedAt.Equal(clock) || !k.Active() {
			t.Fatalf("created %v active %v", k.CreatedAt, k.Active())
		}
		got, err := s.ByHash(ctx, apikey.Sum(secret))
		if err != nil {
			t.Fatal(err)
		}
		want := k
		if got.ID != want.ID || got.Name != "alice" || got.DailyCredits != 1000 || got.RatePerSecond != 50 ||
			!slices.Equal(got.AllowMethods, want.AllowMethods) || !slices.Equal(got.AllowNetworks, want.AllowNetworks) ||
			!slices.Equal(got.AllowOrigins, want.AllowOrigins) || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Fatalf("ByHash = %+v, want %+v", got, want)
		}
		if _, _, err := s.Create(ctx, store.NewKey{Name: "alice"}); !errors.Is(err, store.ErrNameTaken) {
			t.Fatalf("second alice: %v, want ErrNameTaken", err)
		}
		credits, rate, none := int64(5), int64(0), []string{}
		upd, err := s.Update(ctx, "alice", store.Patch{DailyCredits: &credits, RatePerSecond: &rate, AllowMethods: &none})
		if err != nil {
			t.Fatal(err)
		}
		if upd.DailyCredits != 5 || upd.RatePerSecond != 0 || upd.AllowMethods != nil || len(upd.AllowNetworks) != 1 {
			t.Fatalf("Update = %+v", upd)
		}
		rk, err := s.Revoke(ctx, "alice")
		if err != nil || rk.Active() {
			t.Fatalf("Revoke = %+v, %v", rk, err)
		}
		if _, err := s.Get(ctx, "alice"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after revoke: %v", err)
		}
		if k, err := s.ByHash(ctx, apikey.Sum(secret)); err != nil || k.Active() {
			t.Fatalf("ByHash after revoke: %+v %v (want the revoked key)", k, err)
		}
		if _, err := s.Revoke(ctx, "alice"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("second revoke: %v", err)
		}
		// The name is free again.
		if _, _, err := s.Create(ctx, store.NewKey{Name: "alice", DailyCredits: 1}); err != nil {
			t.Fatal(err)
		}
		active, _ := s.List(ctx, false)
		all, _ := s.List(ctx, true)
		if len(active) != 1 || len(all) != 2 {
			t.Fatalf("List: %d active, %d in all", len(active), len(all))
		}
	}, store.WithClock(func() time.Time { return clock }))

	contract(t, "bad input", func(t *testing.T, s *store.Store) {
		for _, nk := range []store.NewKey{
			{Name: ""}, {Name: "has space"}, {Name: string(make([]byte, 65))}, {Name: "neg", DailyCredits: -1},
			{Name: "short", Secret: "abc"},
		} {
			if _, _, err := s.Create(ctx, nk); err == nil {
				t.Errorf("Create(%+v) succeeded", nk)
			}
		}
		if _, _, err := s.Create(ctx, store.NewKey{Name: "imported", Secret: "0123456789abcdef0123456789abcdef"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Create(ctx, store.NewKey{Name: "again", Secret: "0123456789abcdef0123456789abcdef"}); err == nil {
			t.Error("the same secret stored twice")
		}
		if _, err := s.Update(ctx, "nobody", store.Patch{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Update(nobody): %v", err)
		}
	})

	contract(t, "concurrent creates", func(t *testing.T, s *store.Store) {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Go(func() {
				_, _, err := s.Create(ctx, store.NewKey{Name: "race", DailyCredits: 1})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		ok := 0
		for err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrNameTaken):
				t.Errorf("unexpected error: %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d creates of one name succeeded, want 1", ok)
		}
	})
}

func TestUsage(t *testing.T) {
	ctx := context.Background()
	contract(t, "sums and checkpoints", func(t *testing.T, s *store.Store) {
		a, _, _ := s.Create(ctx, store.NewKey{Name: "a", DailyCredits: 1e6})
		b, _, _ := s.Create(ctx, store.NewKey{Name: "b", DailyCredits: 1e6})
		if seq, err := s.Checkpoint(ctx, "i1"); err != nil || seq != 0 {
			t.Fatalf("Checkpoint = %d, %v", seq, err)
		}
		rows := []store.Usage{
			{Day: "2026-11-21", KeyID: a.ID, Method: "getBlock", Calls: 2, Credits: 320},
			{Day: "2026-11-22", KeyID: a.ID, Method: "getBlock", Calls: 1, Credits: 160},
			{Day: "2026-11-22", KeyID: b.ID, Method: "eth_getProof", Calls: 3, Credits: 450},
		}
		if err := s.AddUsage(ctx, rows, "i1", 7); err != nil {
			t.Fatal(err)
		}
		if err := s.AddUsage(ctx, rows[1:2], "i1", 9); err != nil {
			t.Fatal(err)
		}
		if err := s.AddUsage(ctx, []store.Usage{{Day: "2026-11-22", KeyID: a.ID, Method: "getBlock", Calls: -1, Credits: -160}}, "i2", 3); err != nil {
			t.Fatal(err)
		}
		if seq, _ := s.Checkpoint(ctx, "i1"); seq != 9 {
			t.Fatalf("checkpoint i1 = %d, want 9", seq)
		}
		if seq, _ := s.Checkpoint(ctx, "i2"); seq != 3 {
			t.Fatalf("checkpoint i2 = %d, want 3", seq)
		}
		if n, _ := s.Spent(ctx, a.ID, "2026-11-22"); n != 160 {
			t.Fatalf("Spent(a, 22nd) = %d, want 160", n)
		}
		if n, _ := s.Spent(ctx, a.ID, "2026-11-20"); n != 0 {
			t.Fatalf("Spent(a, 20th) = %d, want 0", n)
		}
		got, err := s.Usage(ctx, store.UsageFilter{KeyID: a.ID, From: "2026-11-22"})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.Usage{{Day: "2026-11-22", KeyID: a.ID, KeyName: "a", Method: "getBlock", Calls: 1, Credits: 160}}
		if !slices.Equal(got, want) {
			t.Fatalf("Usage = %+v, want %+v", got, want)
		}
		all, _ := s.Usage(ctx, store.UsageFilter{})
		if len(all) != 3 {
			t.Fatalf("all usage: %d rows, want 3", len(all))
		}
	})
}

func TestMigrationsIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "portico.db")
	for range 2 {
		s, err := store.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := s.Version(ctx); err != nil || v != 1 {
			t.Fatalf("Version = %d, %v", v, err)
		}
		_ = s.Close()
	}
	dsn := testsvc.Postgres(t)
	var wg sync.WaitGroup
	for range 4 { // instances starting together migrate once
		wg.Go(func() {
			s, err := store.OpenPostgres(ctx, dsn)
			if err != nil {
				t.Error(err)
				return
			}
			_ = s.Close()
		})
	}
	wg.Wait()
}

func TestMemory(t *testing.T) {
	ctx := context.Background()
	s, err := store.OpenSQLite(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k, _, err := s.Create(ctx, store.NewKey{Name: "m", DailyCredits: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, []store.Usage{{Day: "2026-11-22", KeyID: k.ID, Method: "x", Calls: 1, Credits: 1}}, "i", 1); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Spent(ctx, k.ID, "2026-11-22"); n != 1 {
		t.Fatalf("Spent = %d", n)
	}
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	contract(t, "import", func(t *testing.T, s *store.Store) {
		h := apikey.Sum("0123456789abcdef0123456789abcdef")
		k, err := s.Import(ctx, "cfg", h, 100, 0)
		if err != nil || k.Name != "cfg" || k.DailyCredits != 100 {
			t.Fatalf("Import = %+v, %v", k, err)
		}
		k2, err := s.Import(ctx, "renamed", h, 200, 5)
		if err != nil || k2.ID != k.ID || k2.Name != "renamed" || k2.DailyCredits != 200 || k2.RatePerSecond != 5 {
			t.Fatalf("second Import = %+v, %v", k2, err)
		}
		if _, err := s.Import(ctx, "renamed", apikey.Sum("another-key-another-key-another-key"), 1, 0); !errors.Is(err, store.ErrNameTaken) {
			t.Fatalf("Import under a taken name: %v", err)
		}
	})
}
