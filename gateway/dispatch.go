package gateway

import (
	"context"
	"errors"
	"fmt"
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
	release, err := g.bounds.Hold(ctx, metering.Subscriptions, rq.id, rq.st.limits.MaxSubscriptionsPerKey)
	if err != nil {
		return outcome{Err: err}
	}
	// An open subscription keeps its network.Network in use: a reload
	// that replaces it retires it only once the subscription ends.
	use := rq.net.use
	use.acquire()
	sp := p.subParams
	if sp.Resume != nil {
		r := *sp.Resume
		r.Max = rq.st.limits.MaxResumeBlocks
		sp.Resume = &r
	}
	return rq.net.Served.Subscribe(ctx, p.sub, sp, rq.id, func() {
		release()
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
	var params *portico.ParamsError
	switch {
	case errors.As(err, &params):
		return true // bad input, found once the call ran (a resume point): never charged
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
