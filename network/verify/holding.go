package verify

import (
	"context"
	"sync"

	"github.com/porticohq/portico/network/upstream"
)

// holdingKey carries a verified call's Holding in its context.
type holdingKey struct{}

// Holding is the bytes a verification holds for as long as its scope
// (the call, or one window of a log range) lasts, taken from the call's
// memory budget. A nil Holding holds nothing.
type Holding struct {
	budget upstream.MemoryBudget
	mu     sync.Mutex
	held   int64
}

// WithHolding returns ctx carrying a holding of budget (nil holds
// nothing), and the holding, whose Release ends it.
func WithHolding(ctx context.Context, budget upstream.MemoryBudget) (context.Context, *Holding) {
	h := &Holding{budget: budget}
	return context.WithValue(ctx, holdingKey{}, h), h
}

// WithoutHolding strips a call's holding from ctx: for what a verifier
// does for the network rather than for the call.
func WithoutHolding(ctx context.Context) context.Context {
	return context.WithValue(ctx, holdingKey{}, (*Holding)(nil))
}

// HoldingOf is the holding ctx carries, or nil.
func HoldingOf(ctx context.Context) *Holding {
	h, _ := ctx.Value(holdingKey{}).(*Holding)
	return h
}

// Budget is the memory budget the holding takes from, or nil.
func (h *Holding) Budget() upstream.MemoryBudget {
	if h == nil {
		return nil
	}
	return h.budget
}

// Take holds n more bytes, or returns the budget's refusal.
func (h *Holding) Take(n int64) error {
	if h == nil || h.budget == nil || n <= 0 {
		return nil
	}
	if err := upstream.Take(h.budget, n); err != nil {
		return err
	}
	h.mu.Lock()
	h.held += n
	h.mu.Unlock()
	return nil
}

// Release gives back everything held.
func (h *Holding) Release() {
	if h == nil || h.budget == nil {
		return
	}
	h.mu.Lock()
	n := h.held
	h.held = 0
	h.mu.Unlock()
	h.budget.Give(n)
}

// Hold holds n bytes in ctx's holding.
func Hold(ctx context.Context, n int64) error { return HoldingOf(ctx).Take(n) }

// SubHolding returns ctx with a holding of its own over the same budget,
// for what one part of a call holds only while that part runs.
func SubHolding(ctx context.Context) (context.Context, *Holding) {
	parent := HoldingOf(ctx)
	if parent == nil {
		return ctx, nil
	}
	return WithHolding(ctx, parent.budget)
}
