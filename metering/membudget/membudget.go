// Package membudget bounds the memory that clients and nodes can make the
// process hold: answers queued for a WebSocket client, notifications
// waiting for a slow subscriber, the results of a batch being assembled,
// a node's answer being read. Budgets form a tree (the process, then a
// key, then a connection or a request): bytes taken from a budget count
// against it and against every budget above it, so one bound holds per
// connection, per key and for the whole process at once.
//
// A budget does not allocate or free memory; the code that holds bytes
// takes them before (or, for bytes it cannot refuse, right after) holding
// them and gives them back when it lets them go.
package membudget

import (
	"sync"
	"sync/atomic"

	"github.com/porticohq/portico"
)

// Budget is a bound on the bytes held by one holder and its children.
// The zero value is not usable; make one with New.
type Budget struct {
	name   string
	limit  atomic.Int64 // <= 0: no bound of its own; SetLimit changes it
	parent *Budget
	used   atomic.Int64
}

// New returns a budget of limit bytes under parent (nil for the root).
// A limit of 0 or less bounds nothing by itself; the parent's bound still
// holds. name says what the budget is for ("process", "key",
// "connection", "request") in errors and metrics.
func New(name string, limit int64, parent *Budget) *Budget {
	b := &Budget{name: name, parent: parent}
	b.limit.Store(limit)
	return b
}

// SetLimit changes b's own limit (0 or less: none), as a config reload
// does. Bytes already held stay held: a smaller limit refuses takes from
// now on until enough is given back, it takes nothing away.
func (b *Budget) SetLimit(limit int64) {
	if b != nil {
		b.limit.Store(limit)
	}
}

// Take takes n bytes from b and every budget above it, or takes nothing
// and reports false when that would pass any of their limits.
func (b *Budget) Take(n int64) bool { return b.TakeErr(n) == nil }

// TakeErr is Take that says which budget refused: nil when the bytes were
// taken, else a *portico.LimitError (LimitMemory) whose Max is the limit
// of the budget that would have been passed.
func (b *Budget) TakeErr(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	for at := b; at != nil; at = at.parent {
		if u, limit := at.used.Add(n), at.limit.Load(); limit > 0 && u > limit {
			at.used.Add(-n)
			for undo := b; undo != at; undo = undo.parent {
				undo.used.Add(-n)
			}
			return &Refused{Budget: at.name, LimitError: portico.LimitError{Limit: portico.LimitMemory, Max: limit}}
		}
	}
	return nil
}

// Force takes n bytes from b and every budget above it even past their
// limits: for bytes already held that cannot be refused (an answer that
// was computed), so that they are counted and later takes see them.
func (b *Budget) Force(n int64) {
	if b == nil || n <= 0 {
		return
	}
	for at := b; at != nil; at = at.parent {
		at.used.Add(n)
	}
}

// Give gives back n bytes taken with Take, TakeErr or Force.
func (b *Budget) Give(n int64) {
	if b == nil || n <= 0 {
		return
	}
	for at := b; at != nil; at = at.parent {
		at.used.Add(-n)
	}
}

// Used returns the bytes held under b.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Limit returns b's own limit (0: none).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return max(b.limit.Load(), 0)
}

// Name returns what the budget is for.
func (b *Budget) Name() string { return b.name }

// Parent returns the budget above b, or nil.
func (b *Budget) Parent() *Budget { return b.parent }

// Over reports whether b or a budget above it holds more than its limit
// (which only Force can cause).
func (b *Budget) Over() bool {
	for at := b; at != nil; at = at.parent {
		if limit := at.limit.Load(); limit > 0 && at.used.Load() > limit {
			return true
		}
	}
	return false
}

// Refused is the error of a take that would pass a budget: a LimitError
// of kind LimitMemory that also names the budget (for logs and metrics;
// clients see the LimitError).
type Refused struct {
	// Budget names the budget that refused ("process", "key", ...).
	Budget string
	portico.LimitError
}

// Unwrap returns the LimitError, which jsonrpc.ErrorFor maps.
func (r *Refused) Unwrap() error { return &r.LimitError }

// Error describes the refusal as the LimitError does.
func (r *Refused) Error() string { return r.LimitError.Error() }

// Keys holds one budget per API key under a parent, made on first use.
// Entries are kept for the life of the process: keys are made by
// operators, not by clients (an unknown key is refused before it gets a
// budget), so their number is bounded by the store.
type Keys struct {
	parent *Budget
	mu     sync.Mutex // orders SetLimit with the making of a budget
	limit  atomic.Int64
	m      sync.Map // key name -> *Budget
}

// NewKeys returns per-key budgets of limit bytes each under parent.
func NewKeys(limit int64, parent *Budget) *Keys {
	k := &Keys{parent: parent}
	k.limit.Store(limit)
	return k
}

// SetLimit changes the limit of every key's budget, those made already
// and those made later (see Budget.SetLimit).
func (k *Keys) SetLimit(limit int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.limit.Store(limit)
	k.m.Range(func(_, b any) bool {
		b.(*Budget).SetLimit(limit)
		return true
	})
}

// Of returns the budget of the key called name.
func (k *Keys) Of(name string) *Budget {
	if k == nil {
		return nil
	}
	if b, ok := k.m.Load(name); ok {
		return b.(*Budget)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	b, _ := k.m.LoadOrStore(name, New("key", k.limit.Load(), k.parent))
	return b.(*Budget)
}
