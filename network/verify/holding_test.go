package verify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/verify"
)

// budget is a memory budget of max bytes.
type budget struct{ max, used int64 }

func (b *budget) Take(n int64) bool {
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) Give(n int64) { b.used -= n }

// TestHolding: what a verification holds is taken from the call's budget
// until its holding is released; a part's own holding gives back only
// its part; past the budget a take is refused as a memory limit; a
// context without a holding, or with it stripped, holds nothing.
func TestHolding(t *testing.T) {
	b := &budget{max: 100}
	ctx, h := verify.WithHolding(context.Background(), b)
	if err := verify.Hold(ctx, 40); err != nil || b.used != 40 {
		t.Fatalf("hold 40: %v, used %d", err, b.used)
	}
	sub, part := verify.SubHolding(ctx)
	if err := verify.Hold(sub, 50); err != nil || b.used != 90 {
		t.Fatalf("hold 50 more in a part: %v, used %d", err, b.used)
	}
	var limit *portico.LimitError
	if err := verify.Hold(sub, 20); !errors.As(err, &limit) || limit.Limit != portico.LimitMemory || b.used != 90 {
		t.Fatalf("past the budget: %v, used %d", err, b.used)
	}
	part.Release()
	if b.used != 40 {
		t.Fatalf("the part released: used %d, want 40", b.used)
	}
	h.Release()
	if b.used != 0 {
		t.Fatalf("released: used %d", b.used)
	}
	if err := verify.Hold(verify.WithoutHolding(ctx), 1000); err != nil || b.used != 0 {
		t.Fatalf("a stripped holding held: %v, used %d", err, b.used)
	}
	if err := verify.Hold(context.Background(), 1000); err != nil {
		t.Fatalf("no holding: %v", err)
	}
	if c, p := verify.SubHolding(context.Background()); p != nil || c == nil {
		t.Fatal("a part of no holding has one")
	}
}
