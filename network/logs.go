package network

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/upstream"
)

// This file is the room's care of log queries (docs/logs.md): bounds on
// what one query may ask (its range, addresses, topics and logs: the
// network's, each overridden by the calling key's), a range wider than a
// node takes split into chunks sent to the nodes in parallel and merged in
// order, stopped as soon as the logs cap is passed, and a node's own
// "too large" answer split around.

// blockRange is the blocks From to To, both included.
type blockRange struct{ from, to uint64 }

func (r blockRange) blocks() uint64 { return r.to - r.from + 1 }

// chunks cuts [from, to] into ranges of at most size blocks, aligned on
// multiples of size, so that two queries that start at different blocks
// share the chunks in the middle (and the cache's entries of them).
func chunks(from, to, size uint64) []blockRange {
	if size == 0 {
		return []blockRange{{from, to}}
	}
	var out []blockRange
	for a := from; ; {
		b := (a/size+1)*size - 1
		if b >= to || b < a { // b < a: the end of the uint64 range
			return append(out, blockRange{a, to})
		}
		out = append(out, blockRange{a, b})
		a = b + 1
	}
}

// logLimits are the bounds of a call: the network's, each overridden by
// the key's where it sets one.
func (n *Network) logLimits(c Call) portico.LogLimits { return n.logs.LogLimits.Over(c.Logs) }

// resolve gives the number a log query's end names: a number as it is;
// a tag as the network's heads have it, the last ones known even when not
// fresh (for a bound, a head a poll old is still the head); pending (the
// rollup's pre_confirmed) as the head, since the block being built on it
// adds no range; a mark the heads do not know yet (safe or finalized on a
// chain that has not said) as 0 at the start of a range and as the head
// at its end, the widest it can be. ok is false only while the network
// knows no head at all.
func (n *Network) resolve(b portico.Block, heads portico.Heads, end bool) (uint64, bool) {
	switch b.Kind {
	case portico.BlockNumber:
		return b.Number, true
	case portico.BlockTag:
		if b.Tag == "earliest" {
			return 0, true
		}
		if heads.Latest == 0 {
			return 0, false
		}
		if h, ok := n.tags[b.Tag]; ok {
			if num, ok := heads.Of(h); ok {
				return num, true
			}
			if end {
				return heads.Latest, true
			}
			return 0, true
		}
		return heads.Latest, true
	}
	return 0, false
}

// logRange is the range a log query spans, its ends resolved on heads:
// known is false only while the network knows no head. A range that
// starts after it ends comes back as it is (from > to).
func (n *Network) logRange(q *portico.LogQuery, heads portico.Heads) (blockRange, bool) {
	from, ok1 := n.resolve(q.From, heads, false)
	to, ok2 := n.resolve(q.To, heads, true)
	if !ok1 || !ok2 {
		return blockRange{}, false
	}
	return blockRange{from, to}, true
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
		ref, refused := nodeRefusal(out.Err)
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
// network's): the limits, the block range it spans (known unless the
// network knows no head yet) and, when it asks for more, a
// *portico.LogsTooLargeError; when the served chain shows its range to
// be wrong (past the head, or its start after its end, once its tags are
// resolved), the family's refusal in a *portico.LogRangeError. Heads that
// are not fresh bound the range but refuse nothing as wrong: the nodes
// may be past them.
func (n *Network) boundLogs(c Call) (lim portico.LogLimits, r blockRange, known bool, err error) {
	q := c.Params.Logs
	lim = n.logLimits(c)
	if lim.MaxAddresses > 0 && q.Addresses > lim.MaxAddresses {
		return lim, r, false, &portico.LogsTooLargeError{Bound: portico.LogBoundAddresses, Max: uint64(lim.MaxAddresses), Got: uint64(q.Addresses)}
	}
	if lim.MaxTopics > 0 && q.Topics > lim.MaxTopics {
		return lim, r, false, &portico.LogsTooLargeError{Bound: portico.LogBoundTopics, Max: uint64(lim.MaxTopics), Got: uint64(q.Topics)}
	}
	heads, fresh := n.up.HeadsFresh()
	r, known = n.logRange(q, heads)
	if !known {
		return lim, r, false, nil
	}
	if fresh && q.Wrong != nil {
		if err := q.Wrong(r.from, r.to, heads.Latest); err != nil {
			return lim, r, false, &portico.LogRangeError{Err: err}
		}
	}
	if r.from > r.to {
		// Empty, and the family leaves it to the nodes: nothing to scan.
		return lim, r, false, nil
	}
	if lim.MaxBlockRange > 0 && r.blocks() > lim.MaxBlockRange {
		return lim, r, known, &portico.LogsTooLargeError{Bound: portico.LogBoundRange, Max: lim.MaxBlockRange, Got: r.blocks(),
			Suggest: true, From: r.from, To: r.from + lim.MaxBlockRange - 1}
	}
	return lim, r, known, nil
}

// capLogs counts the logs of a query's whole answer and refuses it when
// they pass the cap.
func (n *Network) capLogs(out Outcome, lim portico.LogLimits, r blockRange, known bool) Outcome {
	logs, err := logEntries(out.Result)
	if err != nil {
		return out // not a list of logs: the node's answer as it came
	}
	out.Logs = len(logs)
	if lim.MaxLogs > 0 && len(logs) > lim.MaxLogs {
		from := r.from
		if !known {
			from, _ = logBlock(logs[0])
		}
		return Outcome{Err: overCap(lim.MaxLogs, len(logs), from, logs[lim.MaxLogs])}
	}
	return out
}

// overCap is the refusal of an answer with more than max logs: over is
// the first log past the cap, and the range that fits ends before its
// block.
func overCap(max, got int, from uint64, over jsontext.Value) error {
	e := &portico.LogsTooLargeError{Bound: portico.LogBoundLogs, Max: uint64(max), Got: uint64(got)}
	if b, ok := logBlock(over); ok && b > from {
		e.Suggest, e.From, e.To = true, from, b-1
	}
	return e
}

// refused learns from a node's refusal of range r how wide a range to
// send, and returns it: the width the node states (kept for the
// network's later queries), else that of the range it suggests, else half
// of r.
func (n *Network) refused(ref refusal, r blockRange) uint64 {
	switch {
	case ref.max > 0 && ref.max < r.blocks() && !ref.results:
		n.learnRange(ref.max)
		return ref.max
	case ref.suggest && ref.from == r.from && ref.to >= r.from && ref.to < r.to:
		return ref.to - ref.from + 1
	}
	return (r.blocks() + 1) / 2
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

// splitLogs asks for range r in chunks of size blocks, at most
// Parallel at once, and merges their answers in order. It stops once the
// logs pass max (when max > 0) and refuses the query with the range that
// stayed under it.
// answered is how many blocks the chunks whose answers were taken span,
// for the price of a query that failed part way.
func (n *Network) splitLogs(ctx context.Context, c Call, q *portico.LogQuery, r blockRange, size uint64, max int, heads portico.Heads) (res jsontext.Value, count int, answered uint64, err error) {
	parts := chunks(r.from, r.to, size)
	par := n.logs.Parallel
	if par < 1 {
		par = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		logs []jsontext.Value
		node string
		err  error
	}
	done := make([]chan answer, len(parts))
	start := func(i int) {
		done[i] = make(chan answer, 1) // a chunk left behind still ends
		go func() {
			var a answer
			a.logs, a.err = n.fetchLogs(ctx, c, q, parts[i], heads, &a.node)
			done[i] <- a
		}()
	}
	for i := 0; i < par && i < len(parts); i++ {
		start(i)
	}
	out := []byte{'['}
	var nodes []string
	// The merged answer is held against the call's memory budget while
	// it grows, as each chunk was while it was read: with max_logs off,
	// the budget is what bounds it.
	var held int64
	if c.Budget != nil {
		defer func() { c.Budget.Give(held) }()
	}
	for i := range parts {
		a := <-done[i]
		if a.err != nil {
			return nil, 0, answered, a.err
		}
		answered += parts[i].blocks()
		if max > 0 && count+len(a.logs) > max {
			return nil, 0, answered, overCap(max, count+len(a.logs), r.from, a.logs[max-count])
		}
		if c.Budget != nil {
			var size int64
			for _, l := range a.logs {
				size += int64(len(l)) + 1
			}
			if err := upstream.Take(c.Budget, size); err != nil {
				return nil, 0, answered, err
			}
			held += size
		}
		for _, l := range a.logs {
			if count > 0 {
				out = append(out, ',')
			}
			out = append(out, l...)
			count++
		}
		if a.node != "" && (len(nodes) == 0 || nodes[len(nodes)-1] != a.node) {
			nodes = append(nodes, a.node)
		}
		if next := i + par; next < len(parts) {
			start(next)
		}
	}
	if c.Served != nil {
		*c.Served = strings.Join(nodes, ",")
	}
	return append(out, ']'), count, answered, nil
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
			return logEntries(res)
		}
	}
	req := upstream.Request{Method: c.Method.Name, Params: params, Block: portico.Block{Kind: portico.BlockNumber, Number: r.to},
		Served: served, MaxResult: c.MaxResult, Budget: c.Budget}
	res, err := n.up.Do(ctx, req, nil)
	if err != nil {
		ref, refused := nodeRefusal(err)
		if !refused || r.blocks() == 1 {
			return nil, err
		}
		var all []jsontext.Value
		for _, part := range chunks(r.from, r.to, n.refused(ref, r)) {
			logs, err := n.fetchLogs(ctx, c, q, part, heads, served)
			if err != nil {
				return nil, err
			}
			all = append(all, logs...)
		}
		return all, nil
	}
	logs, err := logEntries(res)
	if err != nil {
		return nil, err
	}
	if key != "" {
		n.cache.setFinal(ctx, key, res)
	}
	return logs, nil
}

// errNotLogs is a node's answer to a log query that is not a list.
var errNotLogs = errors.New("network: a node's answer to a log query is not a list")

// logEntries splits a list of logs into its elements, without copying.
func logEntries(v jsontext.Value) ([]jsontext.Value, error) {
	d := jsontext.NewDecoder(bytes.NewReader(v))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, errNotLogs
	}
	var out []jsontext.Value
	for d.PeekKind() != ']' {
		start := d.InputOffset()
		if err := d.SkipValue(); err != nil {
			return nil, errNotLogs
		}
		out = append(out, trimSpace(v[start:d.InputOffset()]))
	}
	return out, nil
}

// trimSpace drops the separators the decoder leaves before a value.
func trimSpace(v jsontext.Value) jsontext.Value {
	for len(v) > 0 && (v[0] == ',' || v[0] == ' ' || v[0] == '\n' || v[0] == '\t' || v[0] == '\r') {
		v = v[1:]
	}
	return v
}

// logBlock reads a log's block number (EVM "blockNumber", hex; the
// rollup's "block_number").
func logBlock(l jsontext.Value) (uint64, bool) {
	var v struct {
		BlockNumber string `json:"blockNumber"`
	}
	if json.Unmarshal(l, &v, json.RejectUnknownMembers(false)) != nil || !strings.HasPrefix(v.BlockNumber, "0x") {
		return 0, false
	}
	var n uint64
	for _, c := range v.BlockNumber[2:] {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		n = n<<4 | d
	}
	return n, len(v.BlockNumber) > 2
}
