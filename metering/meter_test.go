package metering_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

// clock is a settable clock for day rollover and rate limits.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func sqliteStore(t *testing.T) *store.Store {
	s, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newKey(t *testing.T, s *store.Store, name string, daily, rate int64) apikey.Identity {
	k, _, err := s.Create(context.Background(), store.KeySpec{Name: name, DailyCredits: daily, RatePerSecond: rate})
	if err != nil {
		t.Fatal(err)
	}
	return apikey.Identity{Name: k.Name, ID: k.ID, DailyCredits: k.DailyCredits, RatePerSecond: k.RatePerSecond}
}

func seeder(s *store.Store) metering.Seeder { return s.Spent }

func newRedis(t *testing.T) (*redis.Client, string) {
	url, prefix := testsvc.Redis(t)
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, prefix
}

// hammer charges from n goroutines until the balance is gone and returns
// the credits of the accepted charges.
func hammer(t *testing.T, meters []*metering.Ledger, id apikey.Identity, n int, items []metering.Item) (accepted int64) {
	t.Helper()
	var total atomic.Int64
	var wg sync.WaitGroup
	for g := range n {
		m := meters[g%len(meters)]
		wg.Go(func() {
			for {
				b, err := m.Charge(context.Background(), id, items)
				var q *portico.QuotaError
				switch {
				case errors.As(err, &q):
					if q.Limit != portico.QuotaDaily || b.Remaining() >= q.Cost {
						t.Errorf("refused with %v while %d remain", err, b.Remaining())
					}
					return
				case err != nil:
					t.Error(err)
					return
				}
				if b.Used > id.DailyCredits {
					t.Errorf("overspent: used %d of %d", b.Used, id.DailyCredits)
				}
				total.Add(b.Charged)
			}
		})
	}
	wg.Wait()
	return total.Load()
}

var batch = []metering.Item{{Method: "getBlock", Cost: 160}, {Method: "eth_getProof", Cost: 150}, {Method: "eth_chainId", Cost: 13}}

func TestExactOneInstance(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	id := newKey(t, s, "k", 1_000_003, 0)
	m, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(seeder(s), nil), Store: s,
		JournalDir: t.TempDir(), Instance: "a"})
	if err != nil {
		t.Fatal(err)
	}
	accepted := hammer(t, []*metering.Ledger{m}, id, 500, batch)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	day, _ := metering.BillingDay(time.Now())
	stored, _ := s.Spent(ctx, id.ID, day)
	if stored != accepted {
		t.Fatalf("stored %d credits, accepted calls cost %d", stored, accepted)
	}
	if left := id.DailyCredits - accepted; left < 0 || left >= 323 {
		t.Fatalf("%d credits left unspent, want 0 to 322 (less than one batch)", left)
	}
	rows, _ := s.Usage(ctx, store.UsageFilter{KeyID: id.ID})
	var calls int64
	for _, r := range rows {
		calls += r.Calls
	}
	if want := accepted / 323 * 3; calls != want {
		t.Fatalf("usage counts %d calls, want %d", calls, want)
	}
}

func TestExactTwoInstancesRedis(t *testing.T) {
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	rdb, prefix := newRedis(t)
	redisURL, _ := testsvc.Redis(t)
	var meters []*metering.Ledger
	var stores []*store.Store
	for i := range 2 {
		s, err := store.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
		// Each instance has its own client, journal and checkpoint.
		opts, _ := redis.ParseURL(redisURL)
		c := redis.NewClient(opts)
		defer c.Close()
		m, err := metering.New(ctx, metering.Config{Counter: metering.NewRedis(c, prefix, seeder(s)), Store: s,
			JournalDir: t.TempDir(), Instance: []string{"a", "b"}[i]})
		if err != nil {
			t.Fatal(err)
		}
		meters = append(meters, m)
	}
	id := newKey(t, stores[0], "shared", 500_000, 0)
	accepted := hammer(t, meters, id, 500, batch)
	for _, m := range meters {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	day, _ := metering.BillingDay(time.Now())
	stored, _ := stores[1].Spent(ctx, id.ID, day)
	if stored != accepted {
		t.Fatalf("stored %d credits, accepted calls cost %d", stored, accepted)
	}
	if left := id.DailyCredits - accepted; left < 0 || left >= 323 {
		t.Fatalf("%d credits left unspent, want 0 to 322", left)
	}
	live, _ := metering.NewRedis(rdb, prefix, nil).Used(ctx, id.ID, day)
	if live != accepted {
		t.Fatalf("redis holds %d, accepted %d", live, accepted)
	}
}

func TestRefund(t *testing.T) {
	ctx := context.Background()
	for name, counter := range map[string]func(s *store.Store) metering.Counter{
		"memory": func(s *store.Store) metering.Counter { return metering.NewMemory(seeder(s), nil) },
		"redis": func(s *store.Store) metering.Counter {
			rdb, prefix := newRedis(t)
			return metering.NewRedis(rdb, prefix, seeder(s))
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := sqliteStore(t)
			id := newKey(t, s, "k", 1000, 0)
			m, err := metering.New(ctx, metering.Config{Counter: counter(s), Store: s})
			if err != nil {
				t.Fatal(err)
			}
			b, err := m.Charge(ctx, id, batch)
			if err != nil || b.Charged != 323 || b.Used != 323 || b.Remaining() != 677 {
				t.Fatalf("Charge = %+v, %v", b, err)
			}
			if err := m.Refund(ctx, &b, batch[1]); err != nil {
				t.Fatal(err)
			}
			if b.Charged != 173 || b.Remaining() != 827 {
				t.Fatalf("after refund %+v", b)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			rows, _ := s.Usage(ctx, store.UsageFilter{})
			for _, r := range rows {
				if r.Method == "eth_getProof" && (r.Calls != 0 || r.Credits != 0) {
					t.Fatalf("refunded call still in usage: %+v", r)
				}
			}
			if n, _ := s.Spent(ctx, id.ID, b.Day); n != 173 {
				t.Fatalf("stored %d, want 173", n)
			}
		})
	}
}

func TestDayRollover(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	id := newKey(t, s, "k", 400, 0)
	clk := &clock{t: time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC)}
	m, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(seeder(s), clk.Now), Store: s, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	one := []metering.Item{{Method: "getBlock", Cost: 160}}
	for range 2 {
		if _, err := m.Charge(ctx, id, one); err != nil {
			t.Fatal(err)
		}
	}
	_, err = m.Charge(ctx, id, one)
	var q *portico.QuotaError
	if !errors.As(err, &q) || q.Remaining != 80 || !q.ResetAt.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("third charge: %v", err)
	}
	if q.RetryAfter != time.Second {
		t.Fatalf("RetryAfter = %v, want 1s to midnight", q.RetryAfter)
	}
	clk.Set(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	b, err := m.Charge(ctx, id, one)
	if err != nil || b.Day != "2026-11-23" || b.Used != 160 {
		t.Fatalf("after midnight: %+v, %v", b, err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for day, want := range map[string]int64{"2026-11-22": 320, "2026-11-23": 160} {
		if n, _ := s.Spent(ctx, id.ID, day); n != want {
			t.Errorf("Spent(%s) = %d, want %d", day, n, want)
		}
	}
}

func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	id := newKey(t, s, "k", 1e9, 300)
	clk := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	m, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(seeder(s), clk.Now), Store: s, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	one := []metering.Item{{Method: "getBlock", Cost: 160}}
	if _, err := m.Charge(ctx, id, one); err != nil {
		t.Fatal(err)
	}
	b, err := m.Charge(ctx, id, one)
	var q *portico.QuotaError
	if !errors.As(err, &q) || q.Limit != portico.QuotaRate || q.RetryAfter <= 0 || q.RetryAfter > time.Second {
		t.Fatalf("second charge in the same instant: %v", err)
	}
	if b.Used != 160 {
		t.Fatalf("a refused call was charged: used %d", b.Used)
	}
	clk.Set(clk.Now().Add(q.RetryAfter))
	if _, err := m.Charge(ctx, id, one); err != nil {
		t.Fatalf("after waiting RetryAfter: %v", err)
	}
	// A batch larger than the rate can still pass when the bucket is full.
	clk.Set(clk.Now().Add(10 * time.Second))
	if _, err := m.Charge(ctx, id, batch); err != nil {
		t.Fatalf("batch of 323 at rate 300: %v", err)
	}
}

func TestRateLimitRedis(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	rdb, prefix := newRedis(t)
	id := newKey(t, s, "k", 1e9, 100)
	m, err := metering.New(ctx, metering.Config{Counter: metering.NewRedis(rdb, prefix, seeder(s)), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	one := []metering.Item{{Method: "eth_chainId", Cost: 80}}
	if _, err := m.Charge(ctx, id, one); err != nil {
		t.Fatal(err)
	}
	_, err = m.Charge(ctx, id, one)
	var q *portico.QuotaError
	if !errors.As(err, &q) || q.Limit != portico.QuotaRate || q.RetryAfter <= 0 {
		t.Fatalf("second charge: %v", err)
	}
}

// TestJournalRecovery plays a crash: charges are journaled, the meter is
// dropped without a flush, and a torn line ends the segment. A new meter
// replays exactly the charges, once.
func TestJournalRecovery(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	id := newKey(t, s, "k", 1e9, 0)
	dir := t.TempDir()
	cfg := metering.Config{Counter: metering.NewMemory(seeder(s), nil), Store: s, JournalDir: dir, Instance: "a", FlushInterval: time.Hour}
	m1, err := metering.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for i := range 100 {
		b, err := m1.Charge(ctx, id, batch)
		if err != nil {
			t.Fatal(err)
		}
		want += b.Charged
		if i == 50 { // half of it reaches the store before the "crash"
			if err := m1.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 0 {
			if err := m1.Refund(ctx, &b, batch[2]); err != nil {
				t.Fatal(err)
			}
			want -= batch[2].Cost
		}
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "ledger-*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments: %v", segs)
	}
	// A write cut short, where the next line would have gone: after the
	// last line, before the NUL bytes of a mapped segment's unused rest.
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	end := bytes.IndexByte(data, 0)
	if end < 0 {
		end = len(data)
	}
	f, _ := os.OpenFile(segs[0], os.O_WRONLY, 0)
	_, _ = f.WriteAt([]byte("999999 c 2026-11-22 1 16"), int64(end))
	_ = f.Close()

	cfg.Counter = metering.NewMemory(seeder(s), nil)
	m2, err := metering.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	day, _ := metering.BillingDay(time.Now())
	if n, _ := s.Spent(ctx, id.ID, day); n != want {
		t.Fatalf("after recovery the store holds %d, want %d", n, want)
	}
	// The live balance starts from the store: exact too.
	b, err := m2.Balance(ctx, id)
	if err != nil || b.Used != want {
		t.Fatalf("Balance = %+v, %v; want used %d", b, err, want)
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	// A third start replays nothing twice.
	m3, err := metering.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = m3.Close()
	if n, _ := s.Spent(ctx, id.ID, day); n != want {
		t.Fatalf("after a clean restart the store holds %d, want %d", n, want)
	}
}

func TestJournalDamage(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ledger-00000000000000000001.log"), []byte("1 c 2026-11-22 1 x getBlock\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(nil, nil), Store: s, JournalDir: dir, Instance: "a"})
	if err == nil {
		t.Fatal("a damaged journal line was accepted")
	}
}

func TestCounterFailureRefuses(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	id := newKey(t, s, "k", 1000, 0)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	m, err := metering.New(ctx, metering.Config{Counter: metering.NewRedis(rdb, "x:", seeder(s)), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Charge(ctx, id, batch); !errors.Is(err, portico.ErrMeteringUnavailable) {
		t.Fatalf("Charge with Redis down: %v", err)
	}
}

func TestSpeculate(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	rdb, prefix := newRedis(t)
	id := newKey(t, s, "k", 10_000, 0)
	limited := newKey(t, s, "limited", 10_000, 1_000_000)
	mem, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(seeder(s), nil), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	red, err := metering.New(ctx, metering.Config{Counter: metering.NewRedis(rdb, prefix, seeder(s)), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer red.Close()
	if _, err := mem.Charge(ctx, id, batch); err != nil {
		t.Fatal(err)
	}
	if mem.Speculate(id, 10) {
		t.Fatal("memory counter speculates; its charge costs nothing to wait for")
	}
	if red.Speculate(id, 10) {
		t.Fatal("speculates before any charge told it the balance")
	}
	if _, err := red.Charge(ctx, id, batch); err != nil { // 323 of 10,000 used
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cost int64
		want bool
	}{{10, true}, {9677 / 16, true}, {9677/16 + 1, false}, {5000, false}} {
		if got := red.Speculate(id, tc.cost); got != tc.want {
			t.Errorf("Speculate(cost %d) with 9677 left = %v, want %v", tc.cost, got, tc.want)
		}
	}
	if _, err := red.Charge(ctx, limited, batch); err != nil {
		t.Fatal(err)
	}
	if red.Speculate(limited, 1) {
		t.Error("speculates for a rate-limited key, whose charge may be refused by the limiter")
	}
}

// TestRefundAfterMidnight: a refund of yesterday's charge that arrives
// after midnight goes to yesterday and leaves today's spend alone, so the
// next charges cannot overspend today's balance.
func TestRefundAfterMidnight(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	id := newKey(t, s, "k", 400, 0)
	clk := &clock{t: time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC)}
	m, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(seeder(s), clk.Now), Store: s, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	one := []metering.Item{{Method: "getBlock", Cost: 160}}
	yesterday, err := m.Charge(ctx, id, one)
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(time.Date(2026, 11, 23, 0, 0, 1, 0, time.UTC))
	if _, err := m.Charge(ctx, id, one); err != nil {
		t.Fatal(err)
	}
	// The call charged before midnight failed through the node: refunded.
	if err := m.Refund(ctx, &yesterday, one[0]); err != nil {
		t.Fatal(err)
	}
	b, err := m.Charge(ctx, id, one)
	if err != nil || b.Day != "2026-11-23" || b.Used != 320 {
		t.Fatalf("second charge today: %+v, %v", b, err)
	}
	_, err = m.Charge(ctx, id, one)
	var q *portico.QuotaError
	if !errors.As(err, &q) || q.Remaining != 80 {
		t.Fatalf("third charge today: %v, want refused with 80 left", err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for day, want := range map[string]int64{"2026-11-22": 0, "2026-11-23": 320} {
		if n, _ := s.Spent(ctx, id.ID, day); n != want {
			t.Errorf("Spent(%s) = %d, want %d", day, n, want)
		}
	}
}
