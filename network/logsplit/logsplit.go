// Package logsplit is a network's care of log queries (docs/logs.md):
// bounds on what one query may ask (its range, addresses, topics and
// logs), its ends resolved on the network's heads, a range wider than a
// node takes cut into aligned chunks sent in parallel and merged in
// order, stopped as soon as the logs cap is passed, and a node's own "too
// large" answer read (Refusal) so that the range can be split around it.
// The network keeps the state (the width its nodes take, its cache) and
// sends the chunks.
package logsplit

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

// Range is the blocks From to To, both included.
type Range struct{ From, To uint64 }

// Blocks is how many blocks the range spans.
func (r Range) Blocks() uint64 { return r.To - r.From + 1 }

// Chunks cuts [from, to] into ranges of at most size blocks, aligned on
// multiples of size, so that two queries that start at different blocks
// share the chunks in the middle (and the cache's entries of them).
func Chunks(from, to, size uint64) []Range {
	if size == 0 {
		return []Range{{from, to}}
	}
	var out []Range
	for a := from; ; {
		b := (a/size+1)*size - 1
		if b >= to || b < a { // b < a: the end of the uint64 range
			return append(out, Range{a, to})
		}
		out = append(out, Range{a, b})
		a = b + 1
	}
}

// Resolve gives the number a log query's end names: a number as it is;
// a tag as the network's heads have it (tags are the family's, to the
// heads they name), the last ones known even when not fresh (for a
// bound, a head a poll old is still the head); pending (the rollup's
// pre_confirmed) as the head, since the block being built on it adds no
// range; a mark the heads do not know yet (safe or finalized on a chain
// that has not said) as 0 at the start of a range and as the head at its
// end, the widest it can be. ok is false only while the network knows no
// head at all.
func Resolve(b portico.Block, tags map[string]portico.Head, heads portico.Heads, end bool) (uint64, bool) {
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
		if h, ok := tags[b.Tag]; ok {
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

// QueryRange is the range a log query spans, its ends resolved on heads:
// known is false only while the network knows no head. A range that
// starts after it ends comes back as it is (From > To).
func QueryRange(q *portico.LogQuery, tags map[string]portico.Head, heads portico.Heads) (Range, bool) {
	from, ok1 := Resolve(q.From, tags, heads, false)
	to, ok2 := Resolve(q.To, tags, heads, true)
	if !ok1 || !ok2 {
		return Range{}, false
	}
	return Range{from, to}, true
}

// Bound holds a log query to lim: the block range it spans (known unless
// the network knows no head yet) and, when it asks for more, a
// *portico.LogsTooLargeError; when the served chain shows its range to
// be wrong (past the head, or its start after its end, once its tags are
// resolved), the family's refusal in a *portico.LogRangeError. Heads that
// are not fresh bound the range but refuse nothing as wrong: the nodes
// may be past them.
func Bound(q *portico.LogQuery, lim portico.LogLimits, tags map[string]portico.Head, heads portico.Heads, fresh bool) (r Range, known bool, err error) {
	if lim.MaxAddresses > 0 && q.Addresses > lim.MaxAddresses {
		return r, false, &portico.LogsTooLargeError{Bound: portico.LogBoundAddresses, Max: uint64(lim.MaxAddresses), Got: uint64(q.Addresses)}
	}
	if lim.MaxTopics > 0 && q.Topics > lim.MaxTopics {
		return r, false, &portico.LogsTooLargeError{Bound: portico.LogBoundTopics, Max: uint64(lim.MaxTopics), Got: uint64(q.Topics)}
	}
	r, known = QueryRange(q, tags, heads)
	if !known {
		return r, false, nil
	}
	if fresh && q.Wrong != nil {
		if err := q.Wrong(r.From, r.To, heads.Latest); err != nil {
			return r, false, &portico.LogRangeError{Err: err}
		}
	}
	if r.From > r.To {
		// Empty, and the family leaves it to the nodes: nothing to scan.
		return r, false, nil
	}
	if lim.MaxBlockRange > 0 && r.Blocks() > lim.MaxBlockRange {
		return r, known, &portico.LogsTooLargeError{Bound: portico.LogBoundRange, Max: lim.MaxBlockRange, Got: r.Blocks(),
			Suggest: true, From: r.From, To: r.From + lim.MaxBlockRange - 1}
	}
	return r, known, nil
}

// Cap counts the logs of a query's whole answer, and refuses it when
// they pass max (when max > 0); list is false when the answer is not a
// list of logs (passed on as it came).
func Cap(result jsontext.Value, max int, r Range, known bool) (count int, list bool, err error) {
	logs, err := Entries(result)
	if err != nil {
		return 0, false, nil
	}
	if max > 0 && len(logs) > max {
		from := r.From
		if !known {
			from, _ = LogBlock(logs[0])
		}
		return len(logs), true, OverCap(max, len(logs), from, logs[max])
	}
	return len(logs), true, nil
}

// OverCap is the refusal of an answer with more than max logs: over is
// the first log past the cap, and the range that fits ends before its
// block.
func OverCap(max, got int, from uint64, over jsontext.Value) error {
	e := &portico.LogsTooLargeError{Bound: portico.LogBoundLogs, Max: uint64(max), Got: uint64(got)}
	if b, ok := LogBlock(over); ok && b > from {
		e.Suggest, e.From, e.To = true, from, b-1
	}
	return e
}

// Width is how wide a range to send after a node refused range r: the
// width the node states (stated true: the network keeps it for its later
// queries), else that of the range it suggests, else half of r.
func (ref Refusal) Width(r Range) (size uint64, stated bool) {
	switch {
	case ref.max > 0 && ref.max < r.Blocks() && !ref.results:
		return ref.max, true
	case ref.suggest && ref.from == r.From && ref.to >= r.From && ref.to < r.To:
		return ref.to - ref.from + 1, false
	}
	return (r.Blocks() + 1) / 2, false
}

// Fetch answers one chunk of a split query with its logs, and names the
// node that served it in served.
type Fetch func(ctx context.Context, r Range, served *string) ([]jsontext.Value, error)

// Split asks for range r in chunks of size blocks, at most parallel at
// once (at least one), and merges their answers in order, holding the
// merged answer against budget (nil: none) while it grows. It stops once
// the logs pass max (when max > 0) and refuses the query with the range
// that stayed under it. answered is how many blocks the chunks whose
// answers were taken span, for the price of a query that failed part
// way; nodes are the nodes that answered, in order, each once in a row.
func Split(ctx context.Context, r Range, size uint64, parallel, max int, budget upstream.MemoryBudget, fetch Fetch) (res jsontext.Value, count int, answered uint64, nodes []string, err error) {
	parts := Chunks(r.From, r.To, size)
	par := parallel
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
			a.logs, a.err = fetch(ctx, parts[i], &a.node)
			done[i] <- a
		}()
	}
	for i := 0; i < par && i < len(parts); i++ {
		start(i)
	}
	out := []byte{'['}
	// The merged answer is held against the call's memory budget while
	// it grows, as each chunk was while it was read: with max_logs off,
	// the budget is what bounds it.
	var held int64
	if budget != nil {
		defer func() { budget.Give(held) }()
	}
	for i := range parts {
		a := <-done[i]
		if a.err != nil {
			return nil, 0, answered, nil, a.err
		}
		answered += parts[i].Blocks()
		if max > 0 && count+len(a.logs) > max {
			return nil, 0, answered, nil, OverCap(max, count+len(a.logs), r.From, a.logs[max-count])
		}
		if budget != nil {
			var size int64
			for _, l := range a.logs {
				size += int64(len(l)) + 1
			}
			if err := upstream.Take(budget, size); err != nil {
				return nil, 0, answered, nil, err
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
	return append(out, ']'), count, answered, nodes, nil
}

// errNotLogs is a node's answer to a log query that is not a list.
var errNotLogs = errors.New("network: a node's answer to a log query is not a list")

// Entries splits a list of logs into its elements, without copying.
func Entries(v jsontext.Value) ([]jsontext.Value, error) {
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

// LogBlock reads a log's block number (EVM "blockNumber", hex; the
// rollup's "block_number").
func LogBlock(l jsontext.Value) (uint64, bool) {
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
