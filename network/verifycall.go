package network

import (
	"context"
	"errors"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network/verify"
)

// verifiedCall serves a call on a network that verifies answers
// (docs/verify.md). A method the verifier knows is answered from checked
// node answers, through the cache (which holds only verified answers of
// those methods); its answer is never shared with an identical call in
// flight. Any other method is refused in strict, and passed on marked
// unverified with verify: on; so is, with on, a verified method's call
// that nothing can check (pending state, a transaction no node knows).
// Writes pass in both modes: the client signed what they carry.
func (n *Network) verifiedCall(ctx context.Context, c Call, frame []byte) Outcome {
	v, m := n.verifier, c.Method
	handler, ok := v.Method(m.Name)
	if !ok {
		if n.verifyMode == VerifyStrict && !m.Write {
			return n.refuseUnverified(m.Name, "the method's answers cannot be checked against a header")
		}
		out := n.call(ctx, c, frame)
		out.Verified = Unverified
		n.metrics.Verified(n.name, m.Name, metrics.VerifyUnverified)
		return out
	}
	if err := v.Ready(unmetered(ctx)); err != nil {
		return n.unverified(ctx, c, frame, err)
	}
	ctx, done := n.startWork(ctx, c)
	out := n.verifiedAnswer(ctx, c, frame, handler)
	out.Charged, out.Kept = done()
	return out
}

// verifiedAnswer answers a verified method's call from checked node
// answers (see verifiedCall); ctx carries the call's work.
func (n *Network) verifiedAnswer(ctx context.Context, c Call, frame []byte, handler verify.Handler) Outcome {
	m := c.Method
	params := c.Params.Send
	heads, fresh := n.up.HeadsFresh()
	block := c.Params.Block
	if c.Params.Pin != nil && block.Kind == portico.BlockTag && fresh {
		if head, ok := n.tags[block.Tag]; ok {
			if num, ok := heads.Of(head); ok {
				params, block = c.Params.Pin(num), portico.Block{Kind: portico.BlockNumber, Number: num}
			}
		}
	}
	// Only answers that can never change are cached here: by hash, or
	// about a block at or below the finalized one.
	var key string
	if n.cache != nil {
		switch c.Params.Cache {
		case portico.Immutable:
			key = cacheKey(n.keyForm, n.name, m.Name, params, 0)
		case portico.ByBlock:
			if block.Kind == portico.BlockNumber && heads.Finalized > 0 && block.Number <= heads.Finalized {
				key = cacheKey(n.keyForm, n.name, m.Name, params, 0)
			}
		}
	}
	state := CacheNone
	if key != "" {
		if res, ok := n.cache.get(ctx, key, true); ok {
			n.metrics.Verified(n.name, m.Name, metrics.VerifyVerified)
			out := framed(frame, res, CacheHit)
			out.Verified = Verified
			return out
		}
		state = CacheMiss
	}
	res, err := handler(ctx, params)
	var local *verify.LocalAnswer
	switch {
	case err == nil:
		if key != "" && res.Kind() != 'n' {
			n.cache.setFinal(ctx, key, res)
		}
		n.metrics.Verified(n.name, m.Name, metrics.VerifyVerified)
		out := framed(frame, res, state)
		out.Verified = Verified
		return out
	case errors.As(err, &local):
		// A revert computed over verified state: the answer, verified.
		n.metrics.Verified(n.name, m.Name, metrics.VerifyVerified)
		return Outcome{Err: local.RPC, Verified: Verified}
	}
	return n.unverified(ctx, c, frame, err)
}

// unverified handles a verified method's call whose check did not pass.
func (n *Network) unverified(ctx context.Context, c Call, frame []byte, err error) Outcome {
	m := c.Method
	var (
		spent *verify.SpendError
		limit *portico.LimitError
	)
	switch {
	case errors.As(err, &spent):
		// The key cannot pay for the verification's next node call.
		return Outcome{Err: spent.Err, Verified: Unverified}
	case errors.As(err, &limit) && limit.Limit == portico.LimitMemory:
		// What it holds passes the call's memory budget: not a gap in
		// the nodes' data, whatever wraps it.
		return Outcome{Err: err, Verified: Unverified}
	case errors.Is(err, verify.ErrMismatch), errors.Is(err, verify.ErrMalformed):
		// Every node asked answered wrong: nothing is sent.
		return n.refuseUnverified(m.Name, "every node's answer failed its check")
	case errors.Is(err, verify.ErrUnverifiable), verify.IsMissingOnly(err):
		if n.verifyMode == VerifyStrict {
			return n.refuseUnverified(m.Name, reasonOf(err))
		}
		// Passed on as the node answers, never cached: the cache holds
		// verified answers of these methods only. After a verification
		// that asked the nodes, the call passed on is one more node call
		// of its work; a log query keeps its bounds and chunks.
		if w := workOf(ctx); w != nil && w.made() > 0 {
			if err := w.spend(ctx); err != nil {
				return Outcome{Err: err.(*verify.SpendError).Err, Verified: Unverified}
			}
		}
		c.Params.Cache = portico.NotCacheable
		var out Outcome
		if c.Params.Logs != nil {
			out = n.callLogs(ctx, c, frame)
		} else {
			out = n.call(ctx, c, frame)
		}
		out.Verified = Unverified
		n.metrics.Verified(n.name, m.Name, metrics.VerifyUnverified)
		return out
	case errors.Is(err, verify.ErrFetch):
		var fe *verify.FetchError
		if errors.As(err, &fe) && fe.Err != nil {
			err = fe.Err
		}
	}
	n.log.Warn("verified call failed", "network", n.name, "method", m.Name, "err", err)
	return Outcome{Err: err, Verified: Unverified}
}

// refuseUnverified answers -32058.
func (n *Network) refuseUnverified(method, reason string) Outcome {
	n.metrics.Verified(n.name, method, metrics.VerifyRefused)
	return Outcome{Err: &portico.UnverifiedError{Network: n.name, Method: method, Reason: reason}, Verified: Unverified}
}

// reasonOf is the part of a verification error a client may read: what
// could not be checked and why, never a node's name.
func reasonOf(err error) string {
	var ue *verify.UnverifiableError
	if errors.As(err, &ue) {
		return ue.Error()
	}
	return "no node had the data"
}
