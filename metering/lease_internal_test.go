package metering

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico/internal/testsvc"
)

// TestLeaseOpOnce: a lease op sent again (its answer lost) answers what
// it did the first time without doing it twice, and a late copy of an
// older op is not done at all.
func TestLeaseOpOnce(t *testing.T) {
	ctx := context.Background()
	url, prefix := testsvc.Redis(t)
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	r := NewRedis(rdb, prefix, nil).WithLeases(0)
	defer r.Close()
	k := leaseKey{keyID: 7, day: "2026-11-28"}
	entry := r.spendKey(k.keyID, k.day)
	if err := rdb.Set(ctx, entry, 100, 0).Err(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		op    leaseOp
		want  []int64
		entry int64
	}{
		{"take", leaseOp{seq: 10, cost: 5, want: 50, limit: 1000}, []int64{1, 150, 50}, 150},
		{"the take again", leaseOp{seq: 10, cost: 5, want: 50, limit: 1000}, []int64{1, 150, 50}, 150},
		{"an older op, late", leaseOp{seq: 9, held: 50, limit: 1000}, []int64{-2, 0, 0}, 150},
		{"give back", leaseOp{seq: 11, held: 50, limit: 1000}, []int64{1, 100, 0}, 100},
		{"the give-back again", leaseOp{seq: 11, held: 50, limit: 1000}, []int64{1, 100, 0}, 100},
		{"refused: gives back what it held", leaseOp{seq: 12, held: 0, cost: 950, want: 950, limit: 1000}, []int64{0, 100, 0}, 100},
		{"a sixteenth of what is left", leaseOp{seq: 13, cost: 5, want: 10_000, limit: 1000}, []int64{1, 156, 56}, 156},
	}
	for _, s := range steps {
		res, err := r.leases.send(ctx, k, &s.op)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !slices.Equal(res, s.want) {
			t.Errorf("%s: answered %v, want %v", s.name, res, s.want)
		}
		if n, _ := rdb.Get(ctx, entry).Int64(); n != s.entry {
			t.Errorf("%s: the entry holds %d, want %d", s.name, n, s.entry)
		}
	}
}
