package network

import (
	"context"
	"errors"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// A verified call's work is priced and held to the budget as it is done
// (docs/metering.md, docs/verify.md):
//
//   - Node calls. The call's own charge pays for one node call per
//     VerifyConfig.CallCost credits of it; each node call the
//     verification makes past those costs the key CallCost credits more,
//     charged from its balance as the calls are made (in blocks, so the
//     meter is not asked once per node call; what a block paid for and
//     the call did not use is given back when it ends). So no verified
//     call has the nodes answer more than one call per CallCost credits
//     it was charged. A key that cannot pay for the next node call stops
//     the verification: the call fails with -32005, what it used stays
//     charged.
//   - Memory. Every node answer the verification takes, and every kept
//     block or receipts it uses, is held against the call's memory budget
//     (its connection's or its key's, under the process's) until the call
//     ends, or, for a log range checked window by window, until its
//     window is checked: past a bound the call fails with -32057.
//
// The background work of a verifying network (trusting each new head)
// belongs to no call: it is neither charged nor held.

// workKey carries a verified call's work in its context.
type workKey struct{}

// work is what one verified call spends on node calls.
type work struct {
	n      *Network
	key    apikey.Identity
	method string
	price  int64 // credits per node call; 0 charges nothing

	mu      sync.Mutex
	calls   int64 // node calls made
	paid    int64 // node calls paid for: the call's own charge, then blocks
	own     int64 // of which the call's own charge
	next    int64 // the node calls the next block pays for
	charged int64 // credits charged for blocks, less what was given back
	bill    metering.Bill
	dry     bool // a block was refused: pay call by call
}

// firstBlock and maxBlock bound the node calls one charge pays for: the
// first block is small, each next one twice the last.
const (
	firstBlock = 16
	maxBlock   = 1024
)

// startWork returns the work of verified call c, and ctx carrying it and
// a holding of the call's memory budget; done ends both and returns what
// was charged for node calls on top of the call's charge, and the part of
// that charge the node calls used.
func (n *Network) startWork(ctx context.Context, c Call) (context.Context, func() (charged int64, kept int)) {
	w := &work{n: n, key: c.Key, method: c.Method.Name, next: firstBlock}
	if p := n.verifyPrice.Load(); p > 0 && n.meter != nil {
		w.price = p
		w.own = int64(c.Charged) / w.price
		w.paid = w.own
	}
	ctx, h := verify.WithHolding(context.WithValue(ctx, workKey{}, w), c.Budget)
	return ctx, func() (int64, int) {
		h.Release()
		return w.finish()
	}
}

// workOf is the work a context carries, or nil.
func workOf(ctx context.Context) *work {
	w, _ := ctx.Value(workKey{}).(*work)
	return w
}

// unmetered strips a call's work and holding from ctx: for what the
// verifier does for the network rather than for the call (its chain
// rules, asked once).
func unmetered(ctx context.Context) context.Context {
	return verify.WithoutHolding(context.WithValue(ctx, workKey{}, (*work)(nil)))
}

// made is how many node calls the work made so far.
func (w *work) made() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls
}

// spend counts one node call about to be made and, past what is paid
// for, charges for it.
func (w *work) spend(ctx context.Context) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if w.price == 0 || w.calls <= w.paid {
		return nil
	}
	calls := w.next
	if w.dry {
		calls = 1
	}
	err := w.charge(ctx, calls)
	var quota *portico.QuotaError
	if errors.As(err, &quota) && calls > 1 {
		w.dry, calls = true, 1
		err = w.charge(ctx, 1)
	}
	if err != nil {
		w.calls--
		if errors.As(err, &quota) {
			w.n.metrics.Refused(w.key.Name, quota.Limit, 1)
		} else {
			w.n.metrics.MeteringFailure()
		}
		return &verify.SpendError{Err: err}
	}
	w.paid += calls
	w.next = min(w.next*2, maxBlock)
	return nil
}

// charge charges the key for calls node calls; w.mu is held.
func (w *work) charge(ctx context.Context, calls int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chargeTimeout)
	defer cancel()
	bill, err := w.n.meter.Charge(ctx, w.key, []metering.Item{{Method: w.method, Cost: calls * w.price}})
	if err != nil {
		return err
	}
	w.bill = bill
	w.charged += calls * w.price
	return nil
}

// finish gives back what blocks paid for and the call did not use, and
// returns the credits charged for node calls past the call's own charge,
// and those of its own charge the node calls used.
func (w *work) finish() (charged int64, kept int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept = int(min(w.calls, w.own) * w.price)
	unused := min(w.paid-max(w.calls, w.own), w.charged/max(w.price, 1))
	if unused > 0 && w.charged > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), chargeTimeout)
		defer cancel()
		credits := unused * w.price
		if err := w.n.meter.Refund(ctx, &w.bill, metering.Item{Method: w.method, Cost: credits}); err != nil {
			w.n.log.Error("refunding a verification's unused node calls failed", "key", w.key.Name, "method", w.method, "credits", credits, "err", err)
		} else {
			w.charged -= credits
			w.paid -= unused
		}
	}
	return w.charged, kept
}

// meteredUp is a verifier's way to the nodes: each node call a verified
// call makes is counted and charged as it is made (work.spend), its
// answer read against the call's memory budget and held until the
// call's (or its window's) work ends.
type meteredUp struct{ VerifyUpstream }

func (m meteredUp) Do(ctx context.Context, req upstream.Request, dst []byte) (jsontext.Value, error) {
	if err := workOf(ctx).spend(ctx); err != nil {
		return nil, err
	}
	h := verify.HoldingOf(ctx)
	if req.Budget == nil && h.Budget() != nil {
		req.Budget = h.Budget()
	}
	res, err := m.VerifyUpstream.Do(ctx, req, dst)
	if err == nil {
		if err := h.Take(int64(len(res) - len(dst))); err != nil {
			return nil, err
		}
	}
	return res, err
}

func (m meteredUp) Ask(ctx context.Context, node, method string, params jsontext.Value) (jsontext.Value, error) {
	if err := workOf(ctx).spend(ctx); err != nil {
		return nil, err
	}
	res, err := m.VerifyUpstream.Ask(ctx, node, method, params)
	if err == nil {
		if err := verify.Hold(ctx, int64(len(res))); err != nil {
			return nil, err
		}
	}
	return res, err
}
