package network

import (
	"context"
	"errors"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/network/upstream"
)

// CacheState says what the cache did for a call.
type CacheState uint8

// What the cache did.
const (
	CacheNone CacheState = iota // the call cannot be served from cache
	CacheMiss
	CacheHit
	// FromHeads: the call was answered from the tracked heads, without a
	// node.
	FromHeads
)

// String names a cache state for logs and traces.
func (s CacheState) String() string {
	switch s {
	case CacheHit:
		return "hit"
	case CacheMiss:
		return "miss"
	case FromHeads:
		return "heads"
	}
	return "none"
}

// Call is one call that passed the gateway's checks.
type Call struct {
	Method *portico.Method
	// Params is what the method's params rule learned.
	Params portico.Params
	// Served, when not nil, is set to the node that answered.
	Served *string
	// MaxResult and Budget bound the node's answer while it is read (see
	// upstream.Request): a batch's remaining room, the memory budget of
	// the call's connection or key.
	MaxResult int64
	Budget    upstream.MemoryBudget
	// Logs, when not nil, is the calling key's own bounds for log queries
	// (eth_getLogs, starknet_getEvents), which override the network's
	// field by field where set.
	Logs *portico.LogLimits
	// Key is the calling key: the owner of the log filters it makes, and
	// who pays for a verification's node calls past what the call's own
	// charge pays for (docs/metering.md).
	Key apikey.Identity
	// Charged is what the call was charged before it ran (its Price); 0
	// when calls are not metered.
	Charged int
}

// Outcome is the answer to one call: result bytes or an error.
type Outcome struct {
	Result jsontext.Value
	Err    error
	// Cache says whether the call could be served from cache and was.
	Cache CacheState
	// Framed, when set, is the whole response but its closing brace,
	// built in the frame given to Call with the result in place: a single
	// call's result is copied from the node's answer once, not twice.
	Framed []byte
	// Logs is how many logs the answer to a log query holds (for the
	// logs cost mode, see Network.CostAfter).
	Logs int
	// Verified says whether the answer was checked against a trusted
	// header (NotVerifying on a network with verify: off).
	Verified Verification
	// Refund is what the network gives back of the call's charge: a log
	// query priced by its range that failed pays only for the chunks the
	// nodes answered (docs/metering.md).
	Refund int
	// Charged is what the network charged the key while the call ran, on
	// top of its charge: a verification's node calls past what that pays
	// for (docs/metering.md).
	Charged int64
	// Kept is the part of the call's charge that its verification's node
	// calls used: it stays charged even when the call fails in a way that
	// is refunded.
	Kept int
}

// Call serves one call: from the network's heads when the method answers
// from them, else from the cache when the family says the answer may be
// cached, else from a node, with a block tag pinned to the block it names
// on the served chain. With frame set, the result is appended to it and
// the outcome is framed (see Outcome).
func (n *Network) Call(ctx context.Context, c Call, frame []byte) Outcome {
	if c.Params.Filter != nil {
		return n.callFilter(ctx, c, frame)
	}
	if c.Params.Wait != nil {
		return n.callWait(ctx, c, frame)
	}
	if n.verifier != nil {
		if c.Params.Logs == nil {
			return n.verifiedCall(ctx, c, frame)
		}
		// A log query is held to its bounds, then its logs are taken
		// from verified receipts, and counted and capped as a node's.
		lim, r, known, err := n.boundLogs(c)
		if err != nil {
			return Outcome{Err: err}
		}
		out := n.verifiedCall(ctx, c, frame)
		if out.Err != nil {
			return out
		}
		capped := n.capLogs(out, lim, r, known)
		capped.Verified, capped.Charged, capped.Kept = out.Verified, out.Charged, out.Kept
		return capped
	}
	if c.Params.Logs != nil {
		return n.callLogs(ctx, c, frame)
	}
	return n.call(ctx, c, frame)
}

// call serves one call (see Call) without checking its answer; a log
// query once its bounds are checked.
func (n *Network) call(ctx context.Context, c Call, frame []byte) Outcome {
	m, params := c.Method, c.Params
	heads, fresh := n.up.HeadsFresh()
	if m.FromHeads != nil && fresh {
		if res, ok := m.FromHeads(params, heads); ok {
			return framed(frame, res, FromHeads)
		}
	}
	if params.TxHash == "" && params.TxHashOn != nil {
		params.TxHash = n.txHashOn(params.TxHashOn)
	}
	req := upstream.Request{Method: m.Name, Params: params.Send, Write: m.Write, Block: params.Block, Data: m.Data, TxHash: params.TxHash, Served: c.Served,
		MaxResult: c.MaxResult, Budget: c.Budget, TxAnswer: params.TxAnswer, TxResult: params.TxResult}
	if params.Pin != nil && params.Block.Kind == portico.BlockTag && fresh {
		if head, ok := n.tags[params.Block.Tag]; ok {
			if n, ok := heads.Of(head); ok {
				// Two calls in a row about "latest" are about the same
				// block or a newer one, whichever node answers.
				req.Params, req.Block = params.Pin(n), portico.Block{Kind: portico.BlockNumber, Number: n}
				req.Repin, req.Repinned = params.Pin, new(bool)
			}
		}
	}

	policy, key, at := n.cachePlace(m, params.Cache, &req, &heads, fresh)
	state := CacheNone
	if key != "" {
		final := policy == portico.Immutable || policy == portico.FinalResult ||
			(policy == portico.ByBlock && req.Block.Number <= heads.Finalized)
		if res, ok := n.cache.get(ctx, key, final); ok {
			return framed(frame, res, CacheHit)
		}
		state = CacheMiss
	}

	// An identical read in flight answers this one too: only a read whose
	// rule says its answer depends on nothing but its params and the
	// chain (what could be cached), never a call with effects on a node
	// such as creating a filter.
	var (
		lead   *flight
		flying string
	)
	if !m.Write && params.Cache != portico.NotCacheable && n.flights != nil {
		flying = key
		if flying == "" {
			flying = cacheKey(n.keyForm, n.name, m.Name, req.Params, 0)
		}
		f, leader := n.flights.join(flying)
		if !leader {
			n.metrics.Coalesced(n.name, m.Name)
			res, err, node := f.wait(ctx)
			if c.Served != nil {
				*c.Served = node
			}
			if err != nil {
				return Outcome{Err: err}
			}
			return framed(frame, res, state)
		}
		lead = f
		// The node's answer is the waiters' too: the leader's client
		// going away does not end it (the pool's timeout does).
		ctx = context.WithoutCancel(ctx)
		if c.Served == nil {
			req.Served = new(string)
		}
	}
	full, err := n.up.Do(ctx, req, frame)
	if lead != nil {
		var res jsontext.Value
		if err == nil {
			res = full[len(frame):]
		}
		n.flights.land(flying, lead, res, err, *req.Served)
	}
	if err != nil {
		var up *portico.UpstreamError
		if errors.As(err, &up) {
			n.log.Warn("upstream call failed", "network", n.name, "method", m.Name, "err", err)
		}
		return Outcome{Err: err}
	}
	res := full[len(frame):]
	if m.Write && params.TxHash != "" {
		n.keep(c, params)
	}
	repinned := req.Repinned != nil && *req.Repinned
	if key != "" && len(res) > 0 && res.Kind() != 'n' && !repinned {
		// A null (a transaction or block not there yet) may still change.
		n.store(ctx, key, at, policy, params, req.Block, heads, res)
	}
	if frame != nil {
		return Outcome{Result: res, Framed: full, Cache: state}
	}
	return Outcome{Result: res, Cache: state}
}

// cachePlace says how a call's answer may be cached (its params' rule,
// none on a network without a cache or for a write) and under which key
// ("" when it is not cached). at is the hash of the block an answer that
// is not final is about, as the served chain has it when the call
// leaves: the answer is kept only if that block is still on the chain
// when it comes back.
func (n *Network) cachePlace(m *portico.Method, rule portico.Cacheability, req *upstream.Request, heads *portico.Heads, fresh bool) (policy portico.Cacheability, key, at string) {
	policy = rule
	if n.cache == nil || m.Write {
		policy = portico.NotCacheable
	}
	switch policy {
	case portico.Immutable, portico.FinalResult:
		key = cacheKey(n.keyForm, n.name, m.Name, req.Params, 0)
	case portico.ByBlock:
		if req.Block.Kind == portico.BlockNumber {
			key = cacheKey(n.keyForm, n.name, m.Name, req.Params, 0)
			if req.Block.Number > heads.Finalized {
				at, _ = n.up.View().Canonical(req.Block.Number)
			}
		}
	case portico.PerHead:
		if fresh && heads.Latest > 0 && heads.Head.Hash != "" {
			key = cacheKey(n.keyForm, n.name, m.Name, req.Params, heads.Latest)
			at = heads.Head.Hash
		}
	}
	return policy, key, at
}

// store keeps an answer as long as the family's rule allows, judged
// against the heads the call was made at.
func (n *Network) store(ctx context.Context, key, at string, policy portico.Cacheability, params portico.Params, block portico.Block, heads portico.Heads, res jsontext.Value) {
	switch policy {
	case portico.Immutable:
		n.cache.setFinal(ctx, key, res)
	case portico.ByBlock:
		if block.Number <= heads.Finalized {
			n.cache.setFinal(ctx, key, res)
		} else {
			n.cache.setUnfinal(n.name, block.Number, at, n.up.View().OnChain, key, res)
		}
	case portico.PerHead:
		n.cache.setPerHead(n.name, at, key, res)
	case portico.FinalResult:
		if params.ResultBlock == nil {
			return
		}
		if b, ok := params.ResultBlock(res); ok && heads.Finalized > 0 && b <= heads.Finalized {
			n.cache.setFinal(ctx, key, res)
		}
	}
}

// framed is the outcome of an answer the network holds itself.
func framed(frame []byte, res jsontext.Value, state CacheState) Outcome {
	if frame != nil {
		return Outcome{Result: res, Framed: append(frame, res...), Cache: state}
	}
	return Outcome{Result: res, Cache: state}
}
