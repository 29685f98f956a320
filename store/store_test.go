package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/metering/apikey"
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
		k, secret, err := s.Create(ctx, store.KeySpec{Name: "alice", DailyCredits: 1000, RatePerSecond: 50,
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
		if _, _, err := s.Create(ctx, store.KeySpec{Name: "alice"}); !errors.Is(err, store.ErrNameTaken) {
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
		if _, _, err := s.Create(ctx, store.KeySpec{Name: "alice", DailyCredits: 1}); err != nil {
			t.Fatal(err)
		}
		active, _ := s.List(ctx, false)
		all, _ := s.List(ctx, true)
		if len(active) != 1 || len(all) != 2 {
			t.Fatalf("List: %d active, %d in all", len(active), len(all))
		}
	}, store.WithClock(func() time.Time { return clock }))

	contract(t, "bad input", func(t *testing.T, s *store.Store) {
		for _, nk := range []store.KeySpec{
			{Name: ""}, {Name: "has space"}, {Name: string(make([]byte, 65))}, {Name: "neg", DailyCredits: -1},
			{Name: "short", Secret: "abc"},
		} {
			if _, _, err := s.Create(ctx, nk); err == nil {
				t.Errorf("Create(%+v) succeeded", nk)
			}
		}
		if _, _, err := s.Create(ctx, store.KeySpec{Name: "imported", Secret: "0123456789abcdef0123456789abcdef"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Create(ctx, store.KeySpec{Name: "again", Secret: "0123456789abcdef0123456789abcdef"}); err == nil {
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
				_, _, err := s.Create(ctx, store.KeySpec{Name: "race", DailyCredits: 1})
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
		a, _, _ := s.Create(ctx, store.KeySpec{Name: "a", DailyCredits: 1e6})
		b, _, _ := s.Create(ctx, store.KeySpec{Name: "b", DailyCredits: 1e6})
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
		if v, err := s.Version(ctx); err != nil || v != 3 {
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
	k, _, err := s.Create(ctx, store.KeySpec{Name: "m", DailyCredits: 1})
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

// twoInstances opens two stores on one database of each kind, as two
// Portico instances sharing a store do. They are closed when t ends.
func twoInstances(t *testing.T) map[string]func(t *testing.T) (*store.Store, *store.Store) {
	open := func(t *testing.T, o func() (*store.Store, error)) *store.Store {
		s, err := o()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	ctx := context.Background()
	return map[string]func(t *testing.T) (*store.Store, *store.Store){
		"sqlite": func(t *testing.T) (*store.Store, *store.Store) {
			path := filepath.Join(t.TempDir(), "portico.db")
			o := func() (*store.Store, error) { return store.OpenSQLite(ctx, path) }
			return open(t, o), open(t, o)
		},
		"postgres": func(t *testing.T) (*store.Store, *store.Store) {
			dsn := testsvc.Postgres(t)
			o := func() (*store.Store, error) { return store.OpenPostgres(ctx, dsn) }
			return open(t, o), open(t, o)
		},
	}
}

// onBoth runs each of test's rounds on a fresh pair of instances of each
// backend.
func onBoth(t *testing.T, rounds int, test func(t *testing.T, a, b *store.Store, round int)) {
	for backend, pair := range twoInstances(t) {
		for round := range rounds {
			t.Run(fmt.Sprintf("%s/%d", backend, round), func(t *testing.T) {
				a, b := pair(t)
				test(t, a, b, round)
			})
		}
	}
}

// TestImportRace: instances that start at the same moment on a fresh
// shared store with the same keys all succeed, and each key is stored once.
func TestImportRace(t *testing.T) {
	ctx := context.Background()
	onBoth(t, 10, func(t *testing.T, a, b *store.Store, round int) {
		h := apikey.Sum(fmt.Sprintf("race-key-%02d-0123456789abcdef0123456789", round))
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() { _, errs[i] = s.Import(ctx, "ci", h, 100, 0) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("import %d: %v", i, err)
			}
		}
		if keys, err := a.List(ctx, true); err != nil || len(keys) != 1 {
			t.Fatalf("%d keys stored, %v", len(keys), err)
		}
	})
}

// TestCreateFirst: the dev key is made for an empty store only, and once
// when instances race on it.
func TestCreateFirst(t *testing.T) {
	ctx := context.Background()
	onBoth(t, 10, func(t *testing.T, a, b *store.Store, round int) {
		var wg sync.WaitGroup
		created := make([]bool, 6)
		for i := range created {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				var err error
				created[i], err = s.CreateFirst(ctx, "dev", apikey.Sum(fmt.Sprintf("dev-key-%d-0123456789abcdef0123456789ab", i)), 1e12, 0)
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := len(slices.DeleteFunc(created, func(c bool) bool { return !c })); n != 1 {
			t.Fatalf("%d instances created a dev key, want 1", n)
		}
		if keys, _ := a.List(ctx, true); len(keys) != 1 {
			t.Fatalf("%d keys", len(keys))
		}
		// A store that holds a key, even a revoked one, gets no dev key.
		if _, err := a.Revoke(ctx, "dev"); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.CreateFirst(ctx, "dev", apikey.Sum("another-dev-key-0123456789abcdef0123"), 1e12, 0); ok || err != nil {
			t.Fatalf("created on a non-empty store: %v %v", ok, err)
		}
	})
}
