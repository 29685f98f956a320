package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/network"
)

// maxBatchParallel bounds how many calls of one batch run at once, so that
// one client's batch cannot take every upstream connection.
const maxBatchParallel = 16

// request is one body being served, over either transport.
type request struct {
	net *Network
	id  apikey.Identity
	st  *state // the state the request started with: its limits
}

// outcome is the answer to one call: result bytes or an error.
type outcome = network.Outcome

// prepared is a call that passed every check and may be charged.
type prepared struct {
	m *portico.Method
	// params is what the method's params rule learned, in its one scan.
	params portico.Params
	// sub and subParams are set for a subscribe call, unsub for an
	// unsubscribe call (m then only carries the name and cost).
	sub       *portico.Subscription
	subParams portico.SubParams
	unsub     jsontext.Value
	// row is the method's own row when m is a copy priced for this call
	// (a log query priced by its range): what the network is given.
	row *portico.Method
	// local answers the call in the gateway (portico_getCredits).
	local bool
	// served, when set, is told which node answered.
	served *string
}

// MethodGetCredits answers the key's balance; it is free and is served on
// every network, over both transports.
const MethodGetCredits = "portico_getCredits"

// billing is what metering says about a request, for the transport.
type billing struct {
	// bill is nil when nothing was metered.
	bill *metering.Bill
	// retryAfter is set when the key's limits refused the calls.
	retryAfter time.Duration
	// cacheable and hits count the calls that could be served from cache
	// and those that were, for the X-Cache headers; batch says the body
	// was a batch.
	cacheable, hits int
	batch           bool
	// verifying and verified count the calls on a network that verifies
	// answers and those whose answer was checked, for the
	// X-Portico-Verified headers.
	verifying, verified int
}

// handle answers a request body, appending the response to dst. It returns
// nil when nothing is to be sent (only notifications), the HTTP status the
// response should carry, and what metering said.
func (g *Gateway) handle(ctx context.Context, rq request, body, dst []byte) ([]byte, int, billing) {
	w := g.obs.watch() // nil when nothing observes
	calls, batch, derr := jsonrpc.Decode(body)
	if derr != nil {
		e, status, _ := jsonrpc.ErrorFor(derr)
		return jsonrpc.AppendError(dst, nil, e), status, billing{}
	}
	lim := &rq.st.limits
	if batch && len(calls) > lim.MaxBatch {
		e, status, _ := jsonrpc.ErrorFor(&portico.LimitError{Limit: portico.LimitBatch, Max: int64(lim.MaxBatch), Got: int64(len(calls))})
		return jsonrpc.AppendError(dst, nil, e), status, billing{}
	}

	// Check every call first, then charge the accepted ones as one unit:
	// a batch costs the sum of its calls, and bad calls cost nothing.
	outs := make([]outcome, len(calls))
	preps := make([]prepared, len(calls))
	var items []metering.Item
	// A key's own bounds on calls (in flight, per second) admit or refuse
	// the body's calls as one unit, before anything else is done for them.
	// (An error, not the *QuotaError: a variable whose address went to
	// errors.As would be allocated on every request, limited or not.)
	var refused error
	if r := rq.id.Rules; r != nil && r.Limited() {
		release, err := g.calls.take(rq.id.Name, r, len(calls), time.Now())
		if err != nil {
			refused = err
			for i := range calls {
				outs[i].Err = err
			}
		} else {
			defer release()
		}
	}
	for i := range calls {
		if outs[i].Err != nil {
			continue
		}
		p, err := g.prepare(rq, &calls[i])
		if err != nil {
			outs[i].Err = err
			continue
		}
		preps[i] = p
		if g.meter != nil && !p.local && p.m.Cost > 0 {
			items = append(items, metering.Item{Method: p.m.Name, Cost: int64(p.m.Cost)})
		}
	}
	var (
		bill      *metering.Bill
		quota     *portico.QuotaError
		chargeErr error
		charged   chan struct{}
	)
	charge := func() {
		b, err := g.meter.Charge(ctx, rq.id, items)
		bill, chargeErr = &b, err
		errors.As(err, &quota)
	}
	// failCharged gives every charged call the charge's error.
	failCharged := func() {
		for i := range calls {
			if outs[i].Err == nil && !preps[i].local {
				outs[i] = outcome{Err: chargeErr}
				preps[i].m = nil
			}
		}
	}
	if g.meter != nil && len(items) > 0 {
		var total int64
		for _, it := range items {
			total += it.Cost
		}
		if g.meter.Speculate(rq.id, total) {
			charged = make(chan struct{})
			go func() { charge(); close(charged) }()
		} else if charge(); chargeErr != nil {
			failCharged()
		}
	}

	w.calls(len(calls))
	// The node's answers count against the call's connection's or key's
	// memory budget while they are read; a batch's against its own
	// bound, under that.
	budget := g.memoryOf(ctx, rq)
	var held *membudget.Budget
	if batch {
		held = membudget.New("request", lim.MaxBatchResponseBytes, budget)
		budget = held
		defer func() { held.Give(held.Used()) }() // the response is built by then
	}
	// run serves call i; a non-nil frame is where its response starts
	// (see network.Outcome's Framed).
	run := func(i int, frame []byte) {
		if outs[i].Err != nil {
			return
		}
		ctx := ctx
		if w != nil {
			ctx = w.start(ctx, i, &preps[i])
			defer w.done(i)
		}
		switch p := &preps[i]; {
		case p.local:
			outs[i] = g.credits(ctx, rq)
		case p.sub != nil:
			outs[i] = g.subscribe(ctx, rq, p)
		case p.unsub != nil:
			outs[i] = rq.net.Served.Unsubscribe(ctx, p.unsub)
		default:
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
			outs[i] = rq.net.Served.Call(ctx, c, frame)
		}
	}
	if len(calls) == 1 {
		var frame []byte
		if c := &calls[0]; !c.IsNotification() {
			frame = jsonrpc.AppendResultStart(dst, c.ID)
		}
		run(0, frame)
	} else {
		// The results of a batch share one bound, the request's budget
		// (under the connection's or the key's): a call whose result does
		// not fit gets an error of its own, refused while it is read, and
		// its bytes are let go.
		sem := make(chan struct{}, maxBatchParallel)
		var wg sync.WaitGroup
		for i := range calls {
			if outs[i].Err != nil {
				continue
			}
			sem <- struct{}{}
			wg.Go(func() {
				run(i, nil)
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
	if charged != nil {
		// The answers are released only if the charge passed.
		<-charged
		if chargeErr != nil {
			failCharged()
		}
	}
	// A log query's answer may cost by its logs, charged once it is
	// there; an answer the key cannot pay for is withheld.
	var after []int64
	if g.meter != nil && chargeErr == nil && rq.net.Served != nil {
		for i := range outs {
			if preps[i].m == nil || preps[i].local || outs[i].Err != nil || (preps[i].params.Logs == nil && preps[i].params.Filter == nil) {
				continue
			}
			extra := int64(rq.net.Served.CostAfter(outs[i]))
			if extra == 0 {
				continue
			}
			b, err := g.meter.Charge(ctx, rq.id, []metering.Item{{Method: preps[i].m.Name, Cost: extra}})
			if err != nil {
				outs[i] = outcome{Err: err}
				continue
			}
			if bill != nil && b.Day == bill.Day {
				// The request's credit headers tell both charges.
				bill.Charged += extra
				bill.Used = max(bill.Used, b.Used)
			}
			if after == nil {
				after = make([]int64, len(outs))
			}
			after[i] = extra
		}
	}
	info := billing{bill: bill, batch: batch}
	var spent int64
	for i, o := range outs {
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
		if bill == nil || bill.Charged == 0 || preps[i].m == nil {
			if w != nil {
				w.record(ctx, rq, &calls[i], &preps[i], &outs[i], 0, i)
			}
			continue
		}
		// Failures through our fault or the node's are refunded; a cache
		// hit gives back what configuration says a hit does not cost; a
		// log query that failed part way gives back the price of the part
		// no node answered (network.Outcome.Refund).
		refund := int64(0)
		switch {
		case o.Err != nil && refundable(o.Err):
			// Less what its verification's node calls used, which stays.
			refund = max(int64(preps[i].m.Cost-o.Kept), 0)
		case o.Err == nil && o.Cache == network.CacheHit && rq.st.hitOff > 0:
			refund = int64(preps[i].m.Cost) * int64(rq.st.hitOff) / 100
		case o.Refund > 0:
			refund = min(int64(o.Refund), int64(preps[i].m.Cost))
		}
		if refund > 0 {
			if err := g.meter.Refund(ctx, bill, metering.Item{Method: preps[i].m.Name, Cost: refund}); err != nil {
				g.log.Error("refund failed", "key", rq.id.Name, "method", preps[i].m.Name, "err", err)
				refund = 0
			}
		}
		cost := int64(preps[i].m.Cost) - refund
		if after != nil {
			cost += after[i]
		}
		if o.Charged > 0 {
			// What the network charged while the call ran (a
			// verification's node calls): in the request's credit headers.
			cost += o.Charged
			bill.Charged += o.Charged
			bill.Used += o.Charged
		}
		spent += cost
		if w != nil {
			w.record(ctx, rq, &calls[i], &preps[i], &outs[i], cost, i)
		}
	}
	if m := g.obs.metrics; m != nil {
		m.Credits(rq.id.Name, spent)
		switch {
		case quota != nil:
			m.Refused(rq.id.Name, quota.Limit, len(items))
		case chargeErr != nil && !errors.Is(chargeErr, context.Canceled):
			m.MeteringFailure()
		}
	}
	if quota == nil && refused != nil {
		errors.As(refused, &quota)
	}
	if quota != nil {
		info.retryAfter = quota.RetryAfter
	}
	var limit *portico.LimitError
	if !batch && errors.As(outs[0].Err, &limit) && limit.Limit == portico.LimitMemory {
		info.retryAfter = time.Second
	}
	if !batch {
		c := calls[0]
		if c.IsNotification() && c.Err == nil {
			return nil, 204, info
		}
		out, status := g.appendOutcome(dst, c.ID, outs[0], true)
		return out, status, info
	}
	start := len(dst)
	dst = append(dst, '[')
	for i, c := range calls {
		if c.IsNotification() && c.Err == nil {
			continue
		}
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		dst, _ = g.appendOutcome(dst, c.ID, outs[i], false)
	}
	if len(dst) == start+1 {
		return dst[:start], 204, info // a batch of notifications gets no answer
	}
	status := 200
	if quota != nil {
		status = 429 // the whole batch was refused for its key's limits
	}
	return append(dst, ']'), status, info
}

// memoryOf is the budget a request's answers count against: its
// WebSocket connection's, or its key's for an HTTP request.
func (g *Gateway) memoryOf(ctx context.Context, rq request) *membudget.Budget {
	if c := jsonrpc.ConnFrom(ctx); c != nil && c.Memory() != nil {
		return c.Memory()
	}
	return g.keyMem.Of(rq.id.Name)
}

// batchRefusal turns the refusal of a batch's own budget (its size bound)
// into the batch-response error; a memory budget above it, and any other
// error, stays as it is.
func batchRefusal(err error, lim *Limits) error {
	var r *membudget.Refused
	if errors.As(err, &r) && r.Budget == "request" {
		return &portico.LimitError{Limit: portico.LimitBatchResponse, Max: lim.MaxBatchResponseBytes}
	}
	return err
}

// subscribe serves a subscribe call within the key's bound on
// subscriptions over every network.
func (g *Gateway) subscribe(ctx context.Context, rq request, p *prepared) outcome {
	key := rq.id.Name
	g.subsMu.Lock()
	if max := rq.st.limits.MaxSubscriptionsPerKey; max > 0 && g.perKey[key] >= max {
		g.subsMu.Unlock()
		return outcome{Err: &portico.LimitError{Limit: portico.LimitKeySubscriptions, Max: int64(max)}}
	}
	g.perKey[key]++
	g.subsMu.Unlock()
	// An open subscription keeps its network.Network in use: a reload
	// that replaces it retires it only once the subscription ends.
	use := rq.net.use
	use.acquire()
	return rq.net.Served.Subscribe(ctx, p.sub, p.subParams, rq.id, func() {
		g.subsMu.Lock()
		if g.perKey[key]--; g.perKey[key] <= 0 {
			delete(g.perKey, key)
		}
		g.subsMu.Unlock()
		use.release()
	})
}

// refundable reports whether a charged call failed through our fault or
// the upstream's, not the caller's: no upstream, a dead or slow upstream,
// a result withheld for the batch's size bound, an internal error. A node's JSON-RPC error is an answer and stays
// charged; so does a call whose client went away.
func refundable(err error) bool {
	var up *portico.UpstreamError
	var rpcErr *jsonrpc.Error
	var limit *portico.LimitError
	var logs *portico.LogsTooLargeError
	var wrong *portico.LogRangeError
	switch {
	case errors.As(err, &up), errors.Is(err, portico.ErrUnverified):
		return true
	case errors.As(err, &logs):
		return logs.BeforeWork() // refused before a node was asked
	case errors.As(err, &wrong):
		return true // refused before a node was asked
	case errors.As(err, &limit) && (limit.Limit == portico.LimitBatchResponse || limit.Limit == portico.LimitResult || limit.Limit == portico.LimitMemory):
		return true // answered by the node, withheld by us
	case errors.As(err, &rpcErr), errors.Is(err, context.Canceled):
		return false
	}
	_, _, known := jsonrpc.ErrorFor(err)
	return !known
}

// appendOutcome writes one response object. For a single call the status
// follows the error; inside a batch it is always 200.
func (g *Gateway) appendOutcome(dst []byte, id jsontext.Value, out outcome, single bool) ([]byte, int) {
	if out.Err == nil && out.Framed != nil {
		return jsonrpc.AppendResultEnd(out.Framed), 200
	}
	if out.Err == nil {
		return jsonrpc.AppendResult(dst, id, out.Result), 200
	}
	e, status, known := jsonrpc.ErrorFor(out.Err)
	if !known && !errors.Is(out.Err, context.Canceled) {
		g.log.Error("internal error", "err", out.Err)
	}
	if !single {
		status = 200
	}
	return jsonrpc.AppendError(dst, id, e), status
}

// prepare checks one call: envelope, method, the key's allowlist, params.
func (g *Gateway) prepare(rq request, c *jsonrpc.Call) (prepared, error) {
	if c.Err != nil {
		return prepared{}, c.Err
	}
	if c.Method == MethodGetCredits {
		return prepared{local: true}, nil
	}
	if s := rq.net.Methods.subByName[c.Method]; s != nil {
		if len(rq.id.Methods) > 0 && !rq.net.Methods.anySub(s, rq.id.Methods) {
			return prepared{}, &portico.ForbiddenError{What: portico.AllowMethod, Value: c.Method}
		}
		sp, err := s.Params(c.Params)
		if err != nil {
			return prepared{}, portico.Answered(err)
		}
		if r := rq.id.Rules; r != nil && len(r.Addresses) > 0 {
			// The kind the params name says where they name contracts.
			stmt := s.Contracts[sp.Kind]
			if err := checkContracts(r, c.Method, &stmt, c.Params); err != nil {
				return prepared{}, err
			}
		}
		return prepared{m: &portico.Method{Name: s.Method, Cost: s.Cost}, sub: s, subParams: sp}, nil
	}
	if s := rq.net.Methods.unsubByName[c.Method]; s != nil {
		params := c.Params
		if params == nil {
			params = jsontext.Value("[]")
		}
		return prepared{m: &portico.Method{Name: s.Unsubscribe}, unsub: params}, nil
	}
	m := rq.net.Methods.Lookup(c.Method)
	if m == nil {
		return prepared{}, portico.Answered(&portico.MethodNotFoundError{Method: c.Method})
	}
	if len(rq.id.Methods) > 0 && !rq.net.Methods.AnyOf(m, rq.id.Methods) {
		return prepared{}, &portico.ForbiddenError{What: portico.AllowMethod, Value: c.Method}
	}
	if r := rq.id.Rules; r != nil && len(r.Addresses) > 0 {
		if err := checkContracts(r, m.Name, &m.Contracts, c.Params); err != nil {
			return prepared{}, err
		}
	}
	params := portico.Params{Send: c.Params}
	if m.Params != nil {
		p, err := m.Params(c.Params)
		if err != nil {
			return prepared{}, portico.Answered(err)
		}
		params = p
	}
	if (params.Logs != nil || params.Filter != nil) && rq.net.Served != nil {
		// A log query may cost by its range, and is refused here, before
		// it is charged, when it passes its bounds or the served chain
		// shows its range to be wrong (docs/logs.md).
		lc := network.Call{Method: m, Params: params, Key: rq.id}
		if r := rq.id.Rules; r != nil {
			lc.Logs = r.Logs // the key's range bound prices the query too
		}
		cost, err := rq.net.Served.Price(lc)
		if err != nil {
			return prepared{}, err
		}
		if cost != m.Cost {
			priced := *m
			priced.Cost = cost
			return prepared{m: &priced, row: m, params: params}, nil
		}
	}
	return prepared{m: m, params: params}, nil
}

// credits answers portico_getCredits: the key's balance, without charge.
func (g *Gateway) credits(ctx context.Context, rq request) outcome {
	if g.meter == nil {
		return outcome{Result: jsontext.Value(`{"metered":false}`)}
	}
	b, err := g.meter.Balance(ctx, rq.id)
	if err != nil {
		return outcome{Err: err}
	}
	return outcome{Result: fmt.Appendf(nil, `{"metered":true,"daily":%d,"used":%d,"remaining":%d,"resetsAt":%q,"ratePerSecond":%d}`,
		b.Daily, b.Used, b.Remaining(), b.ResetAt.Format(time.RFC3339), rq.id.RatePerSecond)}
}
