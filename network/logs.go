package network

import (
	"context"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/logsplit"
	"github.com/porticohq/portico/network/upstream"
)

// This file is the network's side of log queries (docs/logs.md; the
// bounds, the chunks and their merge are logsplit's): the bounds of a
// call (the network's, each overridden by the calling key's), the width
// its nodes take (learned from their refusals), and the chunks sent
// through the network's cache and nodes.

// blockRange is the blocks from to to, both included.
type blockRange struct{ from, to uint64 }

func (r blockRange) blocks() uint64 { return r.to - r.from + 1 }

// split is r as logsplit has it.
func (r blockRange) split() logsplit.Range { return logsplit.Range{From: r.from, To: r.to} }

// rangeOf is a logsplit range as the network has it.
func rangeOf(r logsplit.Range) blockRange { return blockRange{r.From, r.To} }

// logLimits are the bounds of a call: the network's, each overridden by
// the key's where it sets one.
func (n *Network) logLimits(c Call) portico.LogLimits { return n.logs.LogLimits.Over(c.Logs) }

// resolve gives the number a log query's end names on heads
// (logsplit.Resolve with the family's tags).
func (n *Network) resolve(b portico.Block, heads portico.Heads, end bool) (uint64, bool) {
	return logsplit.Resolve(b, n.tags, heads, end)
}

// logRange is the range a log query spans, its ends resolved on heads
// (logsplit.QueryRange).
func (n *Network) logRange(q *portico.LogQuery, heads portico.Heads) (blockRange, bool) {
	r, ok := logsplit.QueryRange(q, n.tags, heads)
	return rangeOf(r), ok
}

// callLogs serves a log query within its bounds: refused before any node
// is asked when its filter or range passes them, or when the served chain
// shows its range to be wrong; sent whole (through the cache and
// coalescing, as any call) when a node takes its range; else, or when the
// node refuses it as too large, split into chunks. A query that failed
// after the nodes answered part of it gives back the price of the part
// they did not (Outcome.Refund).
func (n *Network) callLogs(ctx context.Context, c Call, frame []byte) Outcome {
	q := c.Params.Logs
	lim, r, known, err := n.boundLogs(c)
	if err != nil {
		return Outcome{Err: err}
	}
	heads, _ := n.up.HeadsFresh()
	size := n.nodeRange.Load()
	if !known || q.Range == nil || size == 0 || r.blocks() <= size {
		out := n.call(ctx, c, frame)
		if out.Err == nil {
			return n.capLogs(out, lim, r, known)
		}
		ref, refused := logsplit.NodeRefusal(out.Err)
		if !refused || !known || q.Range == nil || r.blocks() == 1 {
			out.Refund = n.unanswered(c, 0)
			return out
		}
		size = n.refused(ref, r)
	}
	res, count, answered, err := n.splitLogs(ctx, c, q, r, size, lim.MaxLogs, heads)
	if err != nil {
		return Outcome{Err: err, Refund: n.unanswered(c, answered)}
	}
	out := framed(frame, res, CacheNone)
	out.Logs = count
	return out
}

// boundLogs holds a log query to its bounds (the key's over the
// network's, logsplit.Bound on the network's heads): the limits, the
// block range it spans (known unless the network knows no head yet) and
// the refusal of a query that asks for more or whose range the served
// chain shows to be wrong.
func (n *Network) boundLogs(c Call) (lim portico.LogLimits, r blockRange, known bool, err error) {
	lim = n.logLimits(c)
	heads, fresh := n.up.HeadsFresh()
	sr, known, err := logsplit.Bound(c.Params.Logs, lim, n.tags, heads, fresh)
	return lim, rangeOf(sr), known, err
}

// capLogs counts the logs of a query's whole answer and refuses it when
// they pass the cap.
func (n *Network) capLogs(out Outcome, lim portico.LogLimits, r blockRange, known bool) Outcome {
	count, list, err := logsplit.Cap(out.Result, lim.MaxLogs, r.split(), known)
	if !list {
		return out // not a list of logs: the node's answer as it came
	}
	if err != nil {
		return Outcome{Err: err}
	}
	out.Logs = count
	return out
}

// refused learns from a node's refusal of range r how wide a range to
// send, and returns it (logsplit.Refusal.Width); a width the node states
// is kept for the network's later queries.
func (n *Network) refused(ref logsplit.Refusal, r blockRange) uint64 {
	size, stated := ref.Width(r.split())
	if stated {
		n.learnRange(size)
	}
	return size
}

// learnRange lowers the width of the chunks sent to nodes to what a node
// said it takes.
func (n *Network) learnRange(max uint64) {
	for {
		cur := n.nodeRange.Load()
		if cur != 0 && cur <= max {
			return
		}
		if n.nodeRange.CompareAndSwap(cur, max) {
			n.log.Info("a node takes narrower log ranges; chunks narrowed", "network", n.name, "blocks", max)
			return
		}
	}
}

// splitLogs asks for range r in chunks of size blocks, at most the
// network's Parallel at once, and merges their answers in order
// (logsplit.Split), stopped once the logs pass max (when max > 0).
// answered is how many blocks the chunks whose answers were taken span,
// for the price of a query that failed part way.
func (n *Network) splitLogs(ctx context.Context, c Call, q *portico.LogQuery, r blockRange, size uint64, max int, heads portico.Heads) (res jsontext.Value, count int, answered uint64, err error) {
	res, count, answered, nodes, err := logsplit.Split(ctx, r.split(), size, n.logs.Parallel, max, c.Budget,
		func(ctx context.Context, part logsplit.Range, served *string) ([]jsontext.Value, error) {
			return n.fetchLogs(ctx, c, q, rangeOf(part), heads, served)
		})
	if err != nil {
		return nil, 0, answered, err
	}
	if c.Served != nil {
		*c.Served = strings.Join(nodes, ",")
	}
	return res, count, answered, nil
}

// fetchLogs answers one chunk: from the cache when its blocks are final
// and it was asked before, else from a node, split further when the node
// refuses it as too large.
func (n *Network) fetchLogs(ctx context.Context, c Call, q *portico.LogQuery, r blockRange, heads portico.Heads, served *string) ([]jsontext.Value, error) {
	params := q.Range(r.from, r.to)
	var key string
	if n.cache != nil && heads.Finalized > 0 && r.to <= heads.Finalized {
		key = cacheKey(n.keyForm, n.name, c.Method.Name, params, 0)
		if res, ok := n.cache.get(ctx, key, true); ok {
			return logsplit.Entries(res)
		}
	}
	req := upstream.Request{Method: c.Method.Name, Params: params, Block: portico.Block{Kind: portico.BlockNumber, Number: r.to},
		Served: served, MaxResult: c.MaxResult, Budget: c.Budget}
	res, err := n.up.Do(ctx, req, nil)
	if err != nil {
		ref, refused := logsplit.NodeRefusal(err)
		if !refused || r.blocks() == 1 {
			return nil, err
		}
		var all []jsontext.Value
		for _, part := range logsplit.Chunks(r.from, r.to, n.refused(ref, r)) {
			logs, err := n.fetchLogs(ctx, c, q, rangeOf(part), heads, served)
			if err != nil {
				return nil, err
			}
			all = append(all, logs...)
		}
		return all, nil
	}
	logs, err := logsplit.Entries(res)
	if err != nil {
		return nil, err
	}
	if key != "" {
		n.cache.setFinal(ctx, key, res)
	}
	return logs, nil
}
