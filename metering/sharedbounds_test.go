package metering_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
)

// boundsDial gives each instance of a test its own client of one Redis.
type boundsDial func(t *testing.T) redis.UniversalClient

// redisDial is boundsDial on the test Redis, with the test's prefix.
func redisDial(t *testing.T) (boundsDial, string) {
	url, prefix := testsvc.Redis(t)
	return func(t *testing.T) redis.UniversalClient {
		opts, _ := redis.ParseURL(url)
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}, prefix
}

// instances makes n SharedBounds on one Redis, each with its own client,
// as n gateway instances would have.
func boundsInstances(t *testing.T, dial boundsDial, prefix string, n int, cfg metering.SharedBoundsConfig) []*metering.SharedBounds {
	cfg.Prefix = prefix
	var out []*metering.SharedBounds
	for range n {
		b := metering.NewSharedBounds(dial(t), cfg)
		t.Cleanup(func() { _ = b.Close() })
		out = append(out, b)
	}
	return out
}

func limitedKey(id int64, rps, concurrent int) apikey.Identity {
	return apikey.Identity{ID: id, Name: "k", Rules: &apikey.Rules{RequestsPerSecond: rps, MaxConcurrent: concurrent}}
}

func quotaLimit(err error) string {
	var q *portico.QuotaError
	if errors.As(err, &q) {
		return q.Limit
	}
	return ""
}

// TestSharedBounds runs the shared bounds' contract on the test Redis.
func TestSharedBounds(t *testing.T) {
	dial, prefix := redisDial(t)
	testSharedBounds(t, dial, prefix)
}

// testSharedBounds is the contract of SharedBounds on the Redis dial
// reaches (a single server, or a cluster: every key of one API key is in
// one slot).
func testSharedBounds(t *testing.T, dial boundsDial, prefix string) {
	ctx := context.Background()
	t.Run("in flight is exact across instances", func(t *testing.T) {
		bs := boundsInstances(t, dial, prefix+"inflight:", 3, metering.SharedBoundsConfig{})
		id := limitedKey(1, 0, 4)
		var rels []func()
		for i := range 4 {
			rel, err := bs[i%3].Calls(ctx, id, 1)
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			rels = append(rels, rel)
		}
		for i, b := range bs {
			if _, err := b.Calls(ctx, id, 1); quotaLimit(err) != portico.QuotaConcurrent {
				t.Fatalf("instance %d admitted a fifth call in flight: %v", i, err)
			}
		}
		rels[0]()
		// The release is on its way; the next admission on the same
		// instance goes after it.
		rel, err := bs[0].Calls(ctx, id, 1)
		if err != nil {
			t.Fatalf("a call after a release: %v", err)
		}
		if _, err := bs[2].Calls(ctx, id, 2); quotaLimit(err) != portico.QuotaConcurrent {
			t.Fatalf("a batch of 2 over the bound: %v", err)
		}
		rel()
		for _, r := range rels[1:] {
			r()
		}
		// Every slot comes back: a batch of 4 fits, once the releases
		// reached Redis.
		waitFor(t, "the releases", func() bool {
			rel, err := bs[1].Calls(ctx, id, 4)
			if err == nil {
				rel()
			}
			return err == nil
		})
	})
	t.Run("calls per second across instances", func(t *testing.T) {
		bs := boundsInstances(t, dial, prefix+"rate:", 2, metering.SharedBoundsConfig{})
		id := limitedKey(2, 20, 0)
		admitted := 0
		start := time.Now()
		for i := range 60 {
			if rel, err := bs[i%2].Calls(ctx, id, 1); err == nil {
				admitted++
				rel()
			} else if quotaLimit(err) != portico.QuotaRequests {
				t.Fatal(err)
			}
		}
		// One second's bucket, and what refilled while the loop ran.
		if most := 20 + int(time.Since(start).Seconds()*20) + 1; admitted > most || admitted < 20 {
			t.Fatalf("%d calls admitted, want 20 to %d", admitted, most)
		}
		_, err := bs[0].Calls(ctx, limitedKey(2, 20, 0), 21)
		var q *portico.QuotaError
		if !errors.As(err, &q) || q.RetryAfter != time.Second {
			t.Fatalf("a batch larger than a second's calls: %v", err)
		}
	})
	t.Run("connections and subscriptions across instances", func(t *testing.T) {
		bs := boundsInstances(t, dial, prefix+"slots:", 2, metering.SharedBoundsConfig{})
		id := limitedKey(3, 0, 0)
		for _, kind := range []metering.Slot{metering.WebSockets, metering.Subscriptions} {
			a, err := bs[0].Hold(ctx, kind, id, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bs[1].Hold(ctx, kind, id, 2); err != nil {
				t.Fatal(err)
			}
			var l *portico.LimitError
			if _, err := bs[1].Hold(ctx, kind, id, 2); !errors.As(err, &l) || l.Max != 2 {
				t.Fatalf("a third slot of 2: %v", err)
			}
			a()
			waitFor(t, "the release", func() bool {
				_, err := bs[1].Hold(ctx, kind, id, 2)
				return err == nil
			})
		}
	})
	t.Run("a killed instance's slots come back within the lease", func(t *testing.T) {
		cfg := metering.SharedBoundsConfig{Lease: time.Second}
		bs := boundsInstances(t, dial, prefix+"killed:", 2, cfg)
		id := limitedKey(4, 0, 2)
		if _, err := bs[0].Calls(ctx, id, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := bs[0].Hold(ctx, metering.WebSockets, id, 1); err != nil {
			t.Fatal(err)
		}
		_ = bs[0].Close() // killed: its calls never end, its leases are not renewed
		if _, err := bs[1].Calls(ctx, id, 1); quotaLimit(err) != portico.QuotaConcurrent {
			t.Fatalf("the killed instance's calls do not count: %v", err)
		}
		waitFor(t, "the killed instance's calls", func() bool {
			rel, err := bs[1].Calls(ctx, id, 2)
			if err == nil {
				rel()
			}
			return err == nil
		})
		waitFor(t, "the killed instance's connection", func() bool {
			_, err := bs[1].Hold(ctx, metering.WebSockets, id, 1)
			return err == nil
		})
	})
	t.Run("a live instance's slots are renewed", func(t *testing.T) {
		cfg := metering.SharedBoundsConfig{Lease: 3 * time.Second}
		bs := boundsInstances(t, dial, prefix+"renewed:", 2, cfg)
		id := limitedKey(5, 0, 1)
		rel, err := bs[0].Hold(ctx, metering.Subscriptions, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		// Two leases later the slot still counts.
		deadline := time.Now().Add(7 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := bs[1].Hold(ctx, metering.Subscriptions, id, 1); err == nil {
				t.Fatal("a live instance's subscription was not renewed")
			}
			time.Sleep(200 * time.Millisecond)
		}
		rel()
	})
	t.Run("every key of one API key has its hash tag", func(t *testing.T) {
		p := prefix + "tags:"
		bs := boundsInstances(t, dial, p, 1, metering.SharedBoundsConfig{})
		id := limitedKey(77, 5, 5)
		rel, err := bs[0].Calls(ctx, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer rel()
		hold, err := bs[0].Hold(ctx, metering.WebSockets, id, 5)
		if err != nil {
			t.Fatal(err)
		}
		defer hold()
		rdb := dial(t)
		for _, part := range []string{"rate", "calls", "ws"} {
			key := p + "{k:77}:" + part
			if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Errorf("%s: %d, %v", key, n, err)
			}
		}
	})
}

// TestSharedBoundsRedisUnreachable: without Redis the bounds hold per
// instance (never unbounded), or refuse when told to.
func TestSharedBoundsRedisUnreachable(t *testing.T) {
	ctx := context.Background()
	dead := func() redis.UniversalClient {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	id := limitedKey(9, 100, 2)
	b := metering.NewSharedBounds(dead(), metering.SharedBoundsConfig{Prefix: "x:"})
	defer b.Close()
	for range 2 {
		if _, err := b.Calls(ctx, id, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Calls(ctx, id, 1); quotaLimit(err) != portico.QuotaConcurrent {
		t.Fatalf("per instance, a third call in flight: %v", err)
	}
	if _, err := b.Hold(ctx, metering.WebSockets, id, 1); err != nil {
		t.Fatal(err)
	}
	var l *portico.LimitError
	if _, err := b.Hold(ctx, metering.WebSockets, id, 1); !errors.As(err, &l) {
		t.Fatalf("per instance, a second connection of 1: %v", err)
	}

	closed := metering.NewSharedBounds(dead(), metering.SharedBoundsConfig{Prefix: "x:", Refuse: true})
	defer closed.Close()
	if _, err := closed.Calls(ctx, id, 1); !errors.Is(err, portico.ErrMeteringUnavailable) {
		t.Fatalf("refuse: %v", err)
	}
	if _, err := closed.Hold(ctx, metering.Subscriptions, id, 5); !errors.Is(err, portico.ErrMeteringUnavailable) {
		t.Fatalf("refuse: %v", err)
	}
	// A key without bounds is served as ever.
	if _, err := closed.Calls(ctx, apikey.Identity{ID: 9}, 1); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, with a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkSharedBounds admits and releases calls of one key with bounds
// (1,000,000 a second, 1,000 in flight: never refused) from parallel
// goroutines on one instance, and reports the Redis round trips per call.
func BenchmarkSharedBounds(b *testing.B) {
	for _, parallel := range []int{1, 8} {
		b.Run(fmt.Sprintf("callers=%dxGOMAXPROCS", parallel), func(b *testing.B) { benchSharedBounds(b, parallel) })
	}
}

func benchSharedBounds(b *testing.B, parallel int) {
	url, prefix := testsvc.Redis(b)
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	sb := metering.NewSharedBounds(rdb, metering.SharedBoundsConfig{Prefix: prefix})
	defer sb.Close()
	id := limitedKey(1, 1_000_000, 1000)
	ctx := context.Background()
	b.SetParallelism(parallel)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rel, err := sb.Calls(ctx, id, 1)
			if err != nil {
				b.Error(err)
				return
			}
			rel()
		}
	})
	st := sb.Stats()
	b.ReportMetric(float64(st.RoundTrips)/float64(b.N), "trips/call")
}
