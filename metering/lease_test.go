package metering_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/internal/testredis"
	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

// roundTrips counts what a client sends Redis: each command or pipeline
// is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// instances opens n meters sharing one PostgreSQL store and the Redis
// that open gives each, with leases on or off.
func instances(t *testing.T, n int, open func() redis.UniversalClient, prefix string, leases bool) ([]*metering.Ledger, []*store.Store, []*metering.Redis) {
	t.Helper()
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	var meters []*metering.Ledger
	var stores []*store.Store
	var counters []*metering.Redis
	for i := range n {
		s, err := store.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
		rdb := open()
		t.Cleanup(func() { _ = rdb.Close() })
		c := metering.NewRedis(rdb, prefix, seeder(s))
		if leases {
			c = c.WithLeases(0)
		}
		m, err := metering.New(ctx, metering.Config{Counter: c, Store: s, JournalDir: t.TempDir(),
			Instance: string(rune('a' + i))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		meters = append(meters, m)
		counters = append(counters, c)
	}
	return meters, stores, counters
}

// closeAll closes the meters and their counters, which gives the leases
// back.
func closeAll(t *testing.T, meters []*metering.Ledger, counters ...*metering.Redis) {
	t.Helper()
	for _, m := range meters {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range counters {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeasesExact: three instances with leases, on one Redis and on a
// Redis Cluster of three masters, spend a key's balance to the last
// batch that fits: never more, the usage history exactly what was
// charged, and Redis, once the leases are back, too.
func TestLeasesExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (func() redis.UniversalClient, string)
	}{
		{"one redis", func(t *testing.T) (func() redis.UniversalClient, string) {
			url, prefix := testsvc.Redis(t)
			return func() redis.UniversalClient {
				opts, _ := redis.ParseURL(url)
				return redis.NewClient(opts)
			}, prefix
		}},
		{"cluster", func(t *testing.T) (func() redis.UniversalClient, string) {
			addrs := testredis.Cluster(t)
			return func() redis.UniversalClient {
				return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})
			}, "portico:"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			open, prefix := tc.open(t)
			meters, stores, counters := instances(t, 3, open, prefix, true)
			id := newKey(t, stores[0], "shared", 700_000, 0)
			accepted := hammer(t, meters, id, 300, batch)
			closeAll(t, meters, counters...)
			day, _ := metering.BillingDay(time.Now())
			stored, _ := stores[0].Spent(ctx, id.ID, day)
			if stored != accepted {
				t.Fatalf("stored %d credits, accepted calls cost %d", stored, accepted)
			}
			if left := id.DailyCredits - accepted; left < 0 || left >= 323 {
				t.Fatalf("%d credits left unspent, want 0 to 322", left)
			}
			rdb := open()
			defer rdb.Close()
			c := metering.NewRedis(rdb, prefix, nil)
			defer c.Close()
			if live, _ := c.Used(ctx, id.ID, day); live != accepted {
				t.Fatalf("redis holds %d once the leases are back, accepted %d", live, accepted)
			}
		})
	}
}

// TestLeasesRoundTrips: a key with a large balance makes at most one
// round trip per ten calls with leases (exact mode: about one per call,
// less what concurrent calls share a pipeline).
func TestLeasesRoundTrips(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	s := sqliteStore(t)
	id := newKey(t, s, "big", 1<<50, 0)
	items := []metering.Item{{Method: "eth_chainId", Cost: 5}}
	const calls = 4000
	for _, leases := range []bool{false, true} {
		opts, _ := redis.ParseURL(url)
		rdb := redis.NewClient(opts)
		var rt roundTrips
		rdb.AddHook(&rt)
		c := metering.NewRedis(rdb, prefix, seeder(s))
		if leases {
			c = c.WithLeases(0)
		}
		m, err := metering.New(context.Background(), metering.Config{Counter: c, Store: s})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range calls / 8 {
					if _, err := m.Charge(context.Background(), id, items); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		closeAll(t, []*metering.Ledger{m}, c)
		_ = rdb.Close()
		per := float64(rt.n.Load()) / calls
		t.Logf("leases %v: %d round trips for %d calls (%.3f a call)", leases, rt.n.Load(), calls, per)
		if leases && per > 0.1 {
			t.Fatalf("leases: %.3f round trips a call, want at most 0.1", per)
		}
	}
}

// TestLeasesRedisKilled: Redis is killed while two instances spend a key
// with leases, and started again (from its append-only file). While it is
// down, calls are paid from the leases held, then refused as metering
// unavailable; once it is back the ops whose answers were lost are sent
// again (applied once) and the key is spent to its end. The balance is
// never passed, nothing is lost, and the usage history holds exactly what
// was charged.
func TestLeasesRedisKilled(t *testing.T) {
	ctx := context.Background()
	srv := testredis.Start(t)
	open := func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	}
	meters, stores, counters := instances(t, 2, open, "portico:", true)
	id := newKey(t, stores[0], "killed", 2_000_000, 0)
	var total, failed atomic.Int64
	var wg sync.WaitGroup
	for g := range 40 {
		m := meters[g%len(meters)]
		wg.Go(func() { spendThrough(t, m, id, &total, &failed) })
	}
	waitUntil(t, func() bool { return total.Load() > id.DailyCredits/3 })
	srv.Kill()
	waitUntil(t, func() bool { return failed.Load() > 20 })
	srv.Restart()
	wg.Wait()
	closeAll(t, meters, counters...)
	accepted := total.Load()
	day, _ := metering.BillingDay(time.Now())
	stored, _ := stores[0].Spent(ctx, id.ID, day)
	t.Logf("charged %d of %d; %d charges refused while redis was down", accepted, id.DailyCredits, failed.Load())
	if stored != accepted {
		t.Fatalf("stored %d credits, accepted calls cost %d", stored, accepted)
	}
	if accepted > id.DailyCredits {
		t.Fatalf("overspent: %d of %d", accepted, id.DailyCredits)
	}
	rdb := open()
	defer rdb.Close()
	c := metering.NewRedis(rdb, "portico:", nil)
	defer c.Close()
	// No lease was lost with Redis: what it counts is what was charged,
	// and the key was spent to its last batch.
	if live, _ := c.Used(ctx, id.ID, day); live != accepted {
		t.Fatalf("redis holds %d, %d were charged", live, accepted)
	}
	if left := id.DailyCredits - accepted; left >= 323 {
		t.Fatalf("%d credits left although clients kept asking", left)
	}
}

// spendThrough charges until the key's balance refuses, going on through
// metering failures.
func spendThrough(t *testing.T, m *metering.Ledger, id apikey.Identity, total, failed *atomic.Int64) {
	for {
		b, err := m.Charge(context.Background(), id, batch)
		var q *portico.QuotaError
		switch {
		case errors.As(err, &q):
			return
		case errors.Is(err, portico.ErrMeteringUnavailable):
			failed.Add(1)
			time.Sleep(10 * time.Millisecond)
			continue
		case err != nil:
			t.Error(err)
			return
		}
		total.Add(b.Charged)
	}
}

// waitUntil polls ok with a generous deadline.
func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 60s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLeaseComesBack: what an idle instance holds of a key goes back when
// its lease's life ends, so another instance refused meanwhile spends the
// key to its end.
func TestLeaseComesBack(t *testing.T) {
	ctx := context.Background()
	url, prefix := testsvc.Redis(t)
	s := sqliteStore(t)
	id := newKey(t, s, "back", 100_000, 0)
	item := []metering.Item{{Method: "getBlock", Cost: 100}}
	var meters []*metering.Ledger
	for range 2 {
		opts, _ := redis.ParseURL(url)
		rdb := redis.NewClient(opts)
		c := metering.NewRedis(rdb, prefix, seeder(s)).WithLeases(time.Second)
		m, err := metering.New(ctx, metering.Config{Counter: c, Store: s})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close(); _ = c.Close(); _ = rdb.Close() })
		meters = append(meters, m)
	}
	idle, busy := meters[0], meters[1]
	if _, err := idle.Charge(ctx, id, item); err != nil {
		t.Fatal(err)
	}
	spent := int64(100)
	for {
		_, err := busy.Charge(ctx, id, item)
		if err != nil {
			var q *portico.QuotaError
			if !errors.As(err, &q) {
				t.Fatal(err)
			}
			break
		}
		spent += 100
	}
	if spent == id.DailyCredits {
		// A machine slow enough for the busy instance to outlast the
		// idle one's lease: it came back before the refusal.
		t.Logf("the idle instance's lease came back before the busy one ran short")
		return
	}
	t.Logf("refused with %d of %d spent: the idle instance holds the rest", spent, id.DailyCredits)
	waitUntil(t, func() bool {
		_, err := busy.Charge(ctx, id, item)
		if err == nil {
			spent += 100
		}
		return err == nil
	})
	for {
		if _, err := busy.Charge(ctx, id, item); err != nil {
			break
		}
		spent += 100
	}
	if spent != id.DailyCredits {
		t.Fatalf("spent %d of %d once the lease came back", spent, id.DailyCredits)
	}
}
