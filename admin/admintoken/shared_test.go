package admintoken_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico/admin/admintoken"
	"github.com/porticohq/portico/internal/testsvc"
)

// TestSharedAcrossInstances: wrong tokens from one address spread over
// two instances (each with its own Redis client) are slowed as if they
// had gone to one, and so is the ceiling of all addresses.
func TestSharedAcrossInstances(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	c := newClock()
	shared := func() admintoken.Shared {
		opts, _ := redis.ParseURL(url)
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		return admintoken.NewRedis(rdb, prefix)
	}
	lim := admintoken.Limits{Free: 4, GlobalFree: 6, Base: time.Second, Max: 30 * time.Second, Forget: time.Hour, MaxClients: 100}
	a := newChecker(t, c, func(cfg *admintoken.Config) { cfg.Shared, cfg.Limits = shared(), lim })
	b := newChecker(t, c, func(cfg *admintoken.Config) { cfg.Shared, cfg.Limits = shared(), lim })
	both := []*admintoken.Checker{a, b}
	for i := range 4 {
		if _, wait := check(t, both[i%2], addr(1), "wrong"); wait != 0 {
			t.Fatalf("free wrong token %d waited %v", i+1, wait)
		}
	}
	// Each instance saw two; together they saw the address's four free.
	for i, ck := range both {
		if _, wait := check(t, ck, addr(1), "wrong"); wait <= 0 {
			t.Fatalf("instance %d: a wrong token past the address's free ones was not slowed", i)
		}
	}
	if ok, wait := check(t, b, addr(1), token); !ok || wait <= 0 {
		t.Fatalf("the right token from a slowed address: %v after %v", ok, wait)
	}
	// The ceiling: two more addresses' free wrong tokens reach it.
	check(t, a, addr(2), "wrong")
	check(t, b, addr(3), "wrong")
	if _, wait := check(t, a, addr(4), "wrong"); wait <= 0 {
		t.Fatal("a new address past the ceiling of all was not slowed")
	}
}
