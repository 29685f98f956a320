package gateway

import (
	"context"
	"errors"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/upstream"
)

// cacheState says what the cache did for a call.
type cacheState uint8

const (
	cacheNone cacheState = iota // the call cannot be served from cache
	cacheMiss
	cacheHit
)

// forward serves one prepared call: from the network's heads when the
// method answers from them, else from the cache when the family says the
// answer may be cached, else from a node, with a block tag pinned to the
// tracked head it names. With frame set, the result is appended to it and
// the outcome is framed (see outcome).
func (g *Gateway) forward(ctx context.Context, rq request, p prepared, frame []byte) outcome {
	m, params := p.m, p.params
	net := rq.net
	heads, fresh := net.Upstream.HeadsFresh()
	if m.FromHeads != nil && fresh {
		if res, ok := m.FromHeads(params, heads); ok {
			return framed(frame, res, cacheNone)
		}
	}
	req := upstream.Request{Method: m.Name, Params: params.Send, Write: m.Write, Block: params.Block, Served: p.served}
	if params.Pin != nil && params.Block.Kind == portico.BlockTag && fresh {
		if head, ok := net.Methods.chain.Tags[params.Block.Tag]; ok {
			if n, ok := heads.Of(head); ok {
				// Two calls in a row about "latest" are about the same
				// block or a newer one, whichever node answers.
				req.Params, req.Block = params.Pin(n), portico.Block{Kind: portico.BlockNumber, Number: n}
				req.Repin, req.Repinned = params.Pin, new(bool)
			}
		}
	}

	policy := params.Cache
	if g.cache == nil || m.Write {
		policy = portico.NotCacheable
	}
	var key string
	switch policy {
	case portico.Immutable, portico.FinalResult:
		key = cacheKey(net.Methods.keyForm, net.Name, m.Name, req.Params, 0)
	case portico.ByBlock:
		if req.Block.Kind == portico.BlockNumber {
			key = cacheKey(net.Methods.keyForm, net.Name, m.Name, req.Params, 0)
		}
	case portico.PerHead:
		if fresh && heads.Latest > 0 {
			key = cacheKey(net.Methods.keyForm, net.Name, m.Name, req.Params, heads.Latest)
		}
	}
	state := cacheNone
	if key != "" {
		final := policy == portico.Immutable || policy == portico.FinalResult ||
			(policy == portico.ByBlock && req.Block.Number <= heads.Finalized)
		if res, ok := g.cache.get(ctx, key, final); ok {
			return framed(frame, res, cacheHit)
		}
		state = cacheMiss
	}

	// An identical read in flight answers this one too: only a read whose
	// rule says its answer depends on nothing but its params and the
	// chain (what could be cached), never a call with effects on a node
	// such as creating a filter.
	var (
		lead   *flight
		flying string
	)
	if !m.Write && params.Cache != portico.NotCacheable && g.flights != nil {
		flying = key
		if flying == "" {
			flying = cacheKey(net.Methods.keyForm, net.Name, m.Name, req.Params, 0)
		}
		f, leader := g.flights.join(flying)
		if !leader {
			g.obs.metrics.Coalesced(net.Name, m.Name)
			res, err, node := f.wait(ctx)
			if p.served != nil {
				*p.served = node
			}
			if err != nil {
				return outcome{err: err}
			}
			return framed(frame, res, state)
		}
		lead = f
		// The node's answer is the waiters' too: the leader's client
		// going away does not end it (the pool's timeout does).
		ctx = context.WithoutCancel(ctx)
		if p.served == nil {
			req.Served = new(string)
		}
	}
	full, err := net.Upstream.Do(ctx, req, frame)
	if lead != nil {
		var res jsontext.Value
		if err == nil {
			res = full[len(frame):]
		}
		g.flights.land(flying, lead, res, err, *req.Served)
	}
	if err != nil {
		var up *portico.UpstreamError
		if errors.As(err, &up) {
			g.log.Warn("upstream call failed", "network", net.Name, "method", m.Name, "key", rq.id.Name, "err", err)
		}
		return outcome{err: err}
	}
	res := full[len(frame):]
	repinned := req.Repinned != nil && *req.Repinned
	if key != "" && len(res) > 0 && res.Kind() != 'n' && !repinned {
		// A null (a transaction or block not there yet) may still change.
		g.store(ctx, net.Name, key, policy, params, req.Block, heads, res)
	}
	if frame != nil {
		return outcome{result: res, framed: full, cache: state}
	}
	return outcome{result: res, cache: state}
}

// store keeps an answer as long as the family's rule allows, judged
// against the heads the call was made at.
func (g *Gateway) store(ctx context.Context, network, key string, policy portico.Cacheability, params portico.Params, block portico.Block, heads portico.Heads, res jsontext.Value) {
	switch policy {
	case portico.Immutable:
		g.cache.setFinal(ctx, key, res)
	case portico.ByBlock:
		if block.Number <= heads.Finalized {
			g.cache.setFinal(ctx, key, res)
		} else {
			g.cache.setUnfinal(network, block.Number, key, res)
		}
	case portico.PerHead:
		g.cache.setPerHead(network, heads.Latest, key, res)
	case portico.FinalResult:
		if params.ResultBlock == nil {
			return
		}
		if n, ok := params.ResultBlock(res); ok && heads.Finalized > 0 && n <= heads.Finalized {
			g.cache.setFinal(ctx, key, res)
		}
	}
}

// framed is the outcome of an answer the gateway holds itself.
func framed(frame []byte, res jsontext.Value, state cacheState) outcome {
	if frame != nil {
		return outcome{result: res, framed: append(frame, res...), cache: state}
	}
	return outcome{result: res, cache: state}
}
