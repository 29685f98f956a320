package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/network"
)

// A request body, over either transport, goes through one pipeline of
// stages, each a method of pipeline below, in this order:
//
//   - decode parses the body into calls and holds a batch to its size;
//   - admit holds the calls to their key's own bounds on calls (in
//     flight, per second), as one unit;
//   - price checks each call (envelope, method, the key's allowlists,
//     params) and prices it;
//   - charge charges the priced calls as one unit, in the background
//     when the meter lets them run meanwhile;
//   - run serves the calls: a single one in place, a batch's in
//     parallel, under the memory budgets;
//   - settle makes the charge final once the answers are in: it waits
//     for a background charge, charges log queries by their answers,
//     gives back what a call does not cost and records the calls;
//   - encode builds the response and tells the transport what metering
//     and the cache said.

// pipeline is one request body on its way through the stages: what each
// stage leaves for the next. It is the request's one allocation of the
// gateway's own: a body of one call keeps its outcome and preparation
// here, without slices of their own.
type pipeline struct {
	g   *Gateway
	ctx context.Context
	rq  request
	w   *requestWatch // nil when nothing observes

	calls []jsonrpc.Call
	batch bool
	// outs and preps are each call's outcome and what its checks made of
	// it; for a body of one call they are oneOut and onePrep.
	outs    []outcome
	preps   []prepared
	oneOut  [1]outcome
	onePrep [1]prepared

	// release ends the calls' admission; nil when the key has no bounds
	// on calls. refused is the key's refusal: an error, not the
	// *QuotaError (a variable whose address went to errors.As would be
	// allocated on every request, refused or not).
	release func()
	refused error

	// items are the calls to charge; bill, chargeErr and quota what the
	// charge said; pending is a charge still on its way (see charge).
	items     []metering.Item
	bill      *metering.Bill
	chargeErr error
	quota     *portico.QuotaError
	pending   *pendingCharge

	// held is a batch's own memory bound (its response size).
	held *membudget.Budget
	// after is what each log query was charged for its answer (settle).
	after []int64
}

// pendingCharge is a charge made while its calls run.
type pendingCharge struct {
	done chan struct{}
	bill metering.Bill
	err  error
}

// handle answers a request body, appending the response to dst. It returns
// nil when nothing is to be sent (only notifications), the HTTP status the
// response should carry, and what metering said.
func (g *Gateway) handle(ctx context.Context, rq request, body, dst []byte) ([]byte, int, billing) {
	p := pipeline{g: g, ctx: ctx, rq: rq, w: g.obs.watch()}
	if err := p.decode(body); err != nil {
		e, status, _ := jsonrpc.ErrorFor(err)
		return jsonrpc.AppendError(dst, nil, e), status, billing{}
	}
	if p.admit(); p.release != nil {
		defer p.release()
	}
	p.price()
	p.charge()
	if p.run(dst); p.held != nil {
		held := p.held
		defer func() { held.Give(held.Used()) }() // the response is built by then
	}
	p.settle()
	return p.encode(dst)
}

// decode parses the body into its calls and refuses a batch of more calls
// than the limits allow.
func (p *pipeline) decode(body []byte) error {
	calls, batch, err := jsonrpc.DecodeBody(body, p.rq.st.limits.MaxBatch)
	if err != nil {
		return err
	}
	p.calls, p.batch = calls, batch
	if len(calls) == 1 {
		p.outs, p.preps = p.oneOut[:], p.onePrep[:]
	} else {
		p.outs, p.preps = make([]outcome, len(calls)), make([]prepared, len(calls))
	}
	return nil
}

// admit holds the body's calls to their key's own bounds on calls (in
// flight, per second) as one unit, before anything else is done for them:
// refused, every call gets the refusal.
func (p *pipeline) admit() {
	r := p.rq.id.Rules
	if r == nil || !r.Limited() {
		return
	}
	release, err := p.g.bounds.Calls(p.ctx, p.rq.id, len(p.calls))
	if err != nil {
		p.refused = err
		for i := range p.outs {
			p.outs[i].Err = err
		}
		return
	}
	p.release = release
}

// price checks every admitted call (envelope, method, the key's
// allowlists, params) and prices it (a log query by its range). The calls
// that pass and cost something are the items charge charges as one unit:
// a batch costs the sum of its calls, and bad calls cost nothing.
func (p *pipeline) price() {
	metered := p.g.meter != nil
	for i := range p.calls {
		if p.outs[i].Err != nil {
			continue
		}
		pr, err := p.g.prepare(p.rq, &p.calls[i])
		if err != nil {
			p.outs[i].Err = err
			continue
		}
		p.preps[i] = pr
		if metered && !pr.local && pr.m.Cost > 0 {
			p.items = append(p.items, metering.Item{Method: pr.m.Name, Cost: int64(pr.m.Cost)})
		}
	}
}

// charge charges the priced calls. When the meter says they may run while
// the charge is on its way (metering.Meter.Speculate), it is made in the
// background and settle waits for it; otherwise it is made now, and a
// refusal fails every charged call before any runs.
func (p *pipeline) charge() {
	g := p.g
	if g.meter == nil || len(p.items) == 0 {
		return
	}
	var total int64
	for _, it := range p.items {
		total += it.Cost
	}
	if g.meter.Speculate(p.rq.id, total) {
		c := &pendingCharge{done: make(chan struct{})}
		ctx, id, items := p.ctx, p.rq.id, p.items
		go func() {
			c.bill, c.err = g.meter.Charge(ctx, id, items)
			close(c.done)
		}()
		p.pending = c
		return
	}
	b, err := g.meter.Charge(p.ctx, p.rq.id, p.items)
	if p.charged(b, err); err != nil {
		p.failCharged()
	}
}

// charged keeps what the charge said.
func (p *pipeline) charged(b metering.Bill, err error) {
	p.bill, p.chargeErr = &b, err
	if err != nil {
		p.quota = quotaOf(err)
	}
}

// failCharged gives every charged call the charge's error.
func (p *pipeline) failCharged() {
	for i := range p.outs {
		if p.outs[i].Err == nil && !p.preps[i].local {
			p.outs[i] = outcome{Err: p.chargeErr}
			p.preps[i].m = nil
		}
	}
}

// quotaOf is the *portico.QuotaError in err's chain, or nil.
func quotaOf(err error) *portico.QuotaError {
	var q *portico.QuotaError
	if errors.As(err, &q) {
		return q
	}
	return nil
}

// run serves the calls that passed: a body of one call in place, its
// answer framed in dst; a batch's calls in parallel. The node's answers
// count against the call's connection's or key's memory budget while they
// are read; a batch's against its own bound (held), under that.
func (p *pipeline) run(dst []byte) {
	p.w.calls(len(p.calls))
	budget := p.g.memoryOf(p.ctx, p.rq)
	if p.batch {
		p.held = membudget.New("request", p.rq.st.limits.MaxBatchResponseBytes, budget)
		budget = p.held
	}
	if len(p.calls) != 1 {
		p.runBatch(budget)
		return
	}
	if p.outs[0].Err != nil {
		return
	}
	var frame []byte
	if c := &p.calls[0]; !c.IsNotification() {
		frame = jsonrpc.AppendResultStart(dst, c.ID)
	}
	p.outs[0] = p.g.runCall(p.ctx, p.rq, p.w, 0, &p.preps[0], budget, frame)
}

// runBatch serves a batch's calls, at most maxBatchParallel at once. The
// results share one bound, the batch's budget: a call whose result does
// not fit gets an error of its own, refused while it is read, and its
// bytes are let go.
func (p *pipeline) runBatch(budget *membudget.Budget) {
	g, ctx, rq, w, held, lim := p.g, p.ctx, p.rq, p.w, p.held, &p.rq.st.limits
	outs, preps := p.outs, p.preps
	sem := make(chan struct{}, maxBatchParallel)
	var wg sync.WaitGroup
	for i := range outs {
		if outs[i].Err != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			outs[i] = g.runCall(ctx, rq, w, i, &preps[i], budget, nil)
			if n := int64(len(outs[i].Result)); n > 0 {
				if err := held.TakeErr(n); err != nil {
					outs[i] = outcome{Err: err}
				}
			}
			if outs[i].Err != nil {
				outs[i].Err = batchRefusal(outs[i].Err, lim)
			}
			<-sem
		})
	}
	wg.Wait()
}

// runCall serves call i, which passed its checks: the key's balance, a
// subscription, an unsubscription, or a call its network answers, with
// a non-nil frame where its response starts (see network.Outcome's
// Framed).
func (g *Gateway) runCall(ctx context.Context, rq request, w *requestWatch, i int, p *prepared, budget *membudget.Budget, frame []byte) outcome {
	if w != nil {
		ctx = w.start(ctx, i, p)
		defer w.done(i)
	}
	switch {
	case p.local:
		return g.credits(ctx, rq)
	case p.sub != nil:
		return g.subscribe(ctx, rq, p)
	case p.unsub != nil:
		return rq.net.Served.Unsubscribe(ctx, p.unsub)
	}
	c := network.Call{Method: p.m, Params: p.params, Served: p.served, Budget: budget, Key: rq.id}
	if p.row != nil {
		c.Method = p.row
	}
	if g.meter != nil {
		c.Charged = p.m.Cost
	}
	if r := rq.id.Rules; r != nil {
		c.Logs = r.Logs
	}
	return rq.net.Served.Call(ctx, c, frame)
}

// settle makes the charge final now that the answers are in: it waits
// for a charge made in the background (the answers are released only if
// it passed), charges log queries by their answers, gives back what each
// call does not cost, and records the calls and the credits spent.
func (p *pipeline) settle() {
	if c := p.pending; c != nil {
		<-c.done
		if p.charged(c.bill, c.err); c.err != nil {
			p.failCharged()
		}
	}
	p.chargeAfter()
	var spent int64
	for i := range p.outs {
		spent += p.settleCall(i)
	}
	if m := p.g.obs.metrics; m != nil {
		m.Credits(p.rq.id.Name, spent)
		switch {
		case p.quota != nil:
			m.Refused(p.rq.id.Name, p.quota.Limit, len(p.items))
		case p.chargeErr != nil && !errors.Is(p.chargeErr, context.Canceled):
			m.MeteringFailure()
		}
	}
}

// chargeAfter charges a log query by its answer (the logs cost mode),
// once the answer is there; an answer the key cannot pay for is
// withheld.
func (p *pipeline) chargeAfter() {
	g, served := p.g, p.rq.net.Served
	if g.meter == nil || p.chargeErr != nil || served == nil {
		return
	}
	for i := range p.outs {
		pr := &p.preps[i]
		if pr.m == nil || pr.local || p.outs[i].Err != nil || (pr.params.Logs == nil && pr.params.Filter == nil) {
			continue
		}
		extra := int64(served.CostAfter(p.outs[i]))
		if extra == 0 {
			continue
		}
		b, err := g.meter.Charge(p.ctx, p.rq.id, []metering.Item{{Method: pr.m.Name, Cost: extra}})
		if err != nil {
			p.outs[i] = outcome{Err: err}
			continue
		}
		if bill := p.bill; bill != nil && b.Day == bill.Day {
			// The request's credit headers tell both charges.
			bill.Charged += extra
			bill.Used = max(bill.Used, b.Used)
		}
		if p.after == nil {
			p.after = make([]int64, len(p.outs))
		}
		p.after[i] = extra
	}
}

// settleCall gives back what call i does not cost (metering.Unspent)
// and returns what it cost, recorded for the observers.
func (p *pipeline) settleCall(i int) int64 {
	o, pr, bill := &p.outs[i], &p.preps[i], p.bill
	if bill == nil || bill.Charged == 0 || pr.m == nil {
		p.record(i, 0)
		return 0
	}
	price := int64(pr.m.Cost)
	refund := metering.Unspent(price, metering.Settled{Failed: o.Err != nil && refundable(o.Err), Kept: int64(o.Kept),
		Hit: o.Err == nil && o.Cache == network.CacheHit, HitDiscount: p.rq.st.hitOff, Partial: int64(o.Refund)})
	if refund > 0 {
		if err := p.g.meter.Refund(p.ctx, bill, metering.Item{Method: pr.m.Name, Cost: refund}); err != nil {
			p.g.log.Error("refund failed", "key", p.rq.id.Name, "method", pr.m.Name, "err", err)
			refund = 0
		}
	}
	cost := price - refund
	if p.after != nil {
		cost += p.after[i]
	}
	if o.Charged > 0 {
		// What the network charged while the call ran (a verification's
		// node calls): in the request's credit headers.
		cost += o.Charged
		bill.Charged += o.Charged
		bill.Used += o.Charged
	}
	p.record(i, cost)
	return cost
}

// record tells the observers of call i once its outcome and cost are
// final.
func (p *pipeline) record(i int, cost int64) {
	if p.w != nil {
		p.w.record(p.ctx, p.rq, &p.calls[i], &p.preps[i], &p.outs[i], cost, i)
	}
}

// encode builds the response in dst: a single call's answer, or a batch's
// in order without its notifications; nil with 204 when nothing is to be
// sent. It returns the HTTP status and what metering and the cache said,
// for the transport's headers.
func (p *pipeline) encode(dst []byte) ([]byte, int, billing) {
	info := p.billing()
	status := 200
	out, answered := jsonrpc.AppendAnswers(dst, p.calls, p.batch, func(dst []byte, i int) []byte {
		dst, status = p.g.appendOutcome(dst, p.calls[i].ID, p.outs[i], !p.batch)
		return dst
	})
	switch {
	case !answered:
		return nil, 204, info
	case p.batch && p.quota != nil:
		return out, 429, info // the whole batch was refused for its key's limits
	case p.batch:
		return out, 200, info
	}
	return out, status, info
}

// billing is what the transport's headers say of the request: its bill,
// its cache use and verification, and when to retry a refusal.
func (p *pipeline) billing() billing {
	info := billing{bill: p.bill, batch: p.batch}
	for i := range p.outs {
		o := &p.outs[i]
		if o.Cache == network.CacheHit || o.Cache == network.CacheMiss {
			info.cacheable++
		}
		if o.Cache == network.CacheHit {
			info.hits++
		}
		if o.Verified != network.NotVerifying {
			info.verifying++
			if o.Verified == network.Verified {
				info.verified++
			}
		}
	}
	if p.quota == nil && p.refused != nil {
		p.quota = quotaOf(p.refused)
	}
	if p.quota != nil {
		info.retryAfter = p.quota.RetryAfter
	}
	if !p.batch && memoryRefused(p.outs[0].Err) {
		info.retryAfter = time.Second
	}
	return info
}

// memoryRefused reports whether err is a memory budget's refusal.
func memoryRefused(err error) bool {
	if err == nil {
		return false
	}
	var limit *portico.LimitError
	return errors.As(err, &limit) && limit.Limit == portico.LimitMemory
}
