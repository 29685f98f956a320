package metering_test

import (
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering"
)

// TestLogPrice: in the range mode a query costs its method's cost once
// per CostBlocks blocks or part of them, and gives back what no node
// answered; in the logs mode an answer costs CostPerLog a log; in the call
// mode neither.
func TestLogPrice(t *testing.T) {
	s := portico.DefaultLogSettings() // range, 1,000 blocks a unit
	p := metering.LogPriceOf(s)
	for _, c := range []struct {
		blocks   uint64
		resolved bool
		want     int
	}{{1, true, 3}, {1000, true, 3}, {1001, true, 6}, {100_000, true, 300}, {5000, false, 3}} {
		if got := p.Range(3, c.blocks, c.resolved); got != c.want {
			t.Errorf("Range(3, %d, %v) = %d, want %d", c.blocks, c.resolved, got, c.want)
		}
	}
	if got := p.Unanswered(3, 30, 2500); got != 21 {
		t.Errorf("Unanswered(3, 30, 2500) = %d, want 21 (3 units of 10 paid)", got)
	}
	if got := p.Unanswered(3, 30, 0); got != 27 {
		t.Errorf("Unanswered(3, 30, 0) = %d, want 27 (the method's cost stays)", got)
	}
	if got := p.Unanswered(3, 3, 0); got != 0 {
		t.Errorf("Unanswered(3, 3, 0) = %d, want 0", got)
	}
	if got := p.After(50); got != 0 {
		t.Errorf("After(50) in the range mode = %d", got)
	}
	s.Cost = portico.LogCostLogs
	if got := metering.LogPriceOf(s).After(50); got != 50 {
		t.Errorf("After(50) in the logs mode = %d, want 50", got)
	}
	s.Cost = portico.LogCostCall
	if p := metering.LogPriceOf(s); p.Range(3, 100_000, true) != 3 || p.Unanswered(3, 30, 0) != 0 || p.After(50) != 0 {
		t.Error("the call mode prices by something else than the call")
	}
}

// TestUnspent: a failed call gives back its price less what its
// verification kept, a cache hit its discount, a log query that failed
// part way what no node answered, and anything else nothing.
func TestUnspent(t *testing.T) {
	for _, c := range []struct {
		name string
		s    metering.Settled
		want int64
	}{
		{"answered", metering.Settled{}, 0},
		{"failed", metering.Settled{Failed: true}, 10},
		{"failed, verification kept 4", metering.Settled{Failed: true, Kept: 4}, 6},
		{"failed, verification kept more", metering.Settled{Failed: true, Kept: 40}, 0},
		{"hit, no discount", metering.Settled{Hit: true}, 0},
		{"hit, 50%", metering.Settled{Hit: true, HitDiscount: 50}, 5},
		{"partial", metering.Settled{Partial: 7}, 7},
		{"partial over the price", metering.Settled{Partial: 70}, 10},
	} {
		if got := metering.Unspent(10, c.s); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
