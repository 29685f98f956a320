package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// This file keeps a network's log filters (eth_newFilter) itself, rather
// than on a node: a filter's logs are read as the family's log query for
// them (eth_getLogs), so they are bounded, split, cached, priced and
// verified as that query is, and a filter over the whole chain cannot
// have a node scan it for the price of one call (docs/logs.md). A filter
// id this network did not make (a node's block or pending-transaction
// filter) is left to the nodes.

const (
	// filterTimeout is how long a filter nobody reads is kept:
	// go-ethereum's (eth/filters, the API's timeout) and anvil's default.
	filterTimeout = 5 * time.Minute
	// maxKeyFilters bounds the filters one key keeps on a network; each
	// holds its filter object (up to max_addresses and max_topics
	// values).
	maxKeyFilters = 256
	// filterSweep is how often expired filters are looked for.
	filterSweep = 30 * time.Second
)

// filterTable is a network's log filters by id.
type filterTable struct {
	mu     sync.Mutex
	byID   map[string]*logFilter
	perKey map[string]int
	swept  time.Time
}

// logFilter is one log filter.
type logFilter struct {
	id, key string
	// query reads the filter's logs with params (eth_getLogs, the
	// filter object as eth_newFilter got it).
	query  *portico.Method
	params jsontext.Value
	used   time.Time // guarded by the table's mu

	mu sync.Mutex // one poll at a time
	// next is the first block a poll reports; 0 with started false: the
	// network knew no head when the filter was made, so its first poll
	// starts at the head.
	next    uint64
	started bool
	// reported are the hashes of the blocks above finalized a poll
	// reported, by number: a reorg that replaces one sends the polls
	// back to it.
	reported map[uint64]string
}

// add keeps a new filter for key and returns its id: 16 random bytes in
// hex, as go-ethereum's and anvil's ids are.
func (t *filterTable) add(key string, f *logFilter, now time.Time) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	f.id, f.key, f.used = "0x"+hex.EncodeToString(b[:]), key, now
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	if t.perKey[key] >= maxKeyFilters {
		return "", &portico.LimitError{Limit: portico.LimitKeyFilters, Max: maxKeyFilters}
	}
	if t.byID == nil {
		t.byID, t.perKey = map[string]*logFilter{}, map[string]int{}
	}
	t.byID[f.id] = f
	t.perKey[key]++
	return f.id, nil
}

// get returns key's filter id, marked used now; nil when there is none.
func (t *filterTable) get(key, id string, now time.Time) *logFilter {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	f := t.byID[id]
	if f == nil || f.key != key {
		return nil
	}
	f.used = now
	return f
}

// remove forgets key's filter id and reports whether there was one.
func (t *filterTable) remove(key, id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.byID[id]
	if f == nil || f.key != key {
		return false
	}
	t.drop(f)
	return true
}

// sweep forgets the filters unused for filterTimeout, looking at most
// every filterSweep (a key at its bound cannot make every call scan the
// table); t.mu is held.
func (t *filterTable) sweep(now time.Time) {
	if now.Sub(t.swept) < filterSweep {
		return
	}
	t.swept = now
	for _, f := range t.byID {
		if now.Sub(f.used) > filterTimeout {
			t.drop(f)
		}
	}
}

// drop forgets f; t.mu is held.
func (t *filterTable) drop(f *logFilter) {
	delete(t.byID, f.id)
	if t.perKey[f.key]--; t.perKey[f.key] <= 0 {
		delete(t.perKey, f.key)
	}
}

// filterCall is the log query that reads f's logs with params, for the
// call c about f: the query's method at the price of c's.
func filterCall(c Call, f *logFilter, params jsontext.Value) (Call, error) {
	p, err := f.query.Params(params)
	if err != nil {
		return Call{}, err
	}
	m := *f.query
	m.Cost = c.Method.Cost
	lc := c
	lc.Method, lc.Params = &m, p
	return lc, nil
}

// priceFilter prices a call about a log filter as the log query it is,
// or refuses it before any node is asked (see Price).
func (n *Network) priceFilter(c Call) (int, error) {
	lf := c.Params.Filter
	switch lf.Op {
	case portico.FilterNew:
		if c.Params.Logs != nil {
			if _, _, _, err := n.boundLogs(c); err != nil {
				return 0, err
			}
		}
	case portico.FilterLogs:
		f := n.filters.get(c.Key.Name, lf.ID, n.now())
		if f == nil {
			return 0, portico.Answered(portico.ErrFilterNotFound)
		}
		lc, err := filterCall(c, f, f.params)
		if err != nil {
			return 0, err
		}
		return n.Price(lc)
	case portico.FilterChanges:
		f := n.filters.get(c.Key.Name, lf.ID, n.now())
		if f == nil {
			return c.Method.Cost, nil // a node's filter
		}
		f.mu.Lock()
		lc, ok, err := n.changesCall(c, f)
		f.mu.Unlock()
		if err != nil || !ok {
			return c.Method.Cost, err
		}
		return n.Price(lc)
	}
	return c.Method.Cost, nil
}

// callFilter serves a call about a log filter.
func (n *Network) callFilter(ctx context.Context, c Call, frame []byte) Outcome {
	lf := c.Params.Filter
	switch lf.Op {
	case portico.FilterNew:
		return n.newFilter(c, frame)
	case portico.FilterUninstall:
		if n.filters.remove(c.Key.Name, lf.ID) {
			return framed(frame, jsontext.Value("true"), CacheNone)
		}
		return n.call(ctx, c, frame) // a node's filter, or its false
	case portico.FilterLogs:
		f := n.filters.get(c.Key.Name, lf.ID, n.now())
		if f == nil {
			return Outcome{Err: portico.Answered(portico.ErrFilterNotFound)}
		}
		lc, err := filterCall(c, f, f.params)
		if err != nil {
			return Outcome{Err: err}
		}
		return n.Call(ctx, lc, frame)
	case portico.FilterChanges:
		f := n.filters.get(c.Key.Name, lf.ID, n.now())
		if f == nil {
			return n.call(ctx, c, frame) // a node's block or transaction filter
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		lc, ok, err := n.changesCall(c, f)
		if err != nil {
			return Outcome{Err: err}
		}
		if !ok {
			return framed(frame, jsontext.Value("[]"), CacheNone)
		}
		out := n.Call(ctx, lc, frame)
		if out.Err == nil {
			n.reported(f, lc.Params.Logs)
		}
		return out
	}
	return Outcome{Err: portico.Answered(portico.ErrFilterNotFound)}
}

// newFilter keeps the filter a call makes, once its bounds hold: its
// polls report the blocks after the head (or from its fromBlock, when
// that is later), as a node's filter does.
func (n *Network) newFilter(c Call, frame []byte) Outcome {
	f := &logFilter{query: c.Params.Filter.Query, params: c.Params.Filter.Params}
	if q := c.Params.Logs; q != nil {
		if _, _, _, err := n.boundLogs(c); err != nil {
			return Outcome{Err: err}
		}
		if heads, _ := n.up.HeadsFresh(); heads.Latest > 0 {
			f.next, f.started = heads.Latest+1, true
			if q.From.Kind == portico.BlockNumber && q.From.Number > f.next {
				f.next = q.From.Number
			}
		}
	}
	id, err := n.filters.add(c.Key.Name, f, n.now())
	if err != nil {
		return Outcome{Err: err}
	}
	return framed(frame, jsontext.Value(`"`+id+`"`), CacheNone)
}

// changesCall is the log query a poll of f makes now: the blocks from
// the first one not reported to the head (or the filter's own end), at
// most the bound of a log query's range (the rest is for the next poll);
// ok false when there is nothing to ask. f.mu is held.
func (n *Network) changesCall(c Call, f *logFilter) (Call, bool, error) {
	p, err := f.query.Params(f.params)
	if err != nil {
		return Call{}, false, err
	}
	q := p.Logs
	heads, _ := n.up.HeadsFresh()
	if q == nil || q.Range == nil || heads.Latest == 0 {
		return Call{}, false, nil // a filter by block hash has no changes
	}
	if !f.started {
		f.next, f.started = heads.Latest+1, true
		return Call{}, false, nil
	}
	n.rewind(f)
	end := heads.Latest
	if to, ok := n.resolve(q.To, heads, true); ok && to < end {
		end = to
	}
	if f.next > end {
		return Call{}, false, nil
	}
	if max := n.logLimits(c).MaxBlockRange; max > 0 && end-f.next+1 > max {
		end = f.next + max - 1
	}
	lc, err := filterCall(c, f, q.Range(f.next, end))
	return lc, err == nil, err
}

// reported moves f past the blocks a poll answered (the range of q, a
// poll's query) and notes the hashes of those above finalized.
func (n *Network) reported(f *logFilter, q *portico.LogQuery) {
	if q == nil || q.To.Kind != portico.BlockNumber {
		return
	}
	f.next = q.To.Number + 1
	heads, _ := n.up.HeadsFresh()
	view := n.up.View()
	if f.reported == nil {
		f.reported = map[uint64]string{}
	}
	// Only the blocks the view still has can be replaced (it keeps them
	// back to finalized).
	low := max(heads.Finalized+1, view.Oldest())
	for b := max(q.From.Number, low); b <= q.To.Number; b++ {
		if h, ok := view.Canonical(b); ok {
			f.reported[b] = h
		}
	}
	for b := range f.reported {
		if b < low {
			delete(f.reported, b)
		}
	}
}

// rewind sends f's polls back to the lowest reported block a reorg
// replaced, so that the new branch's logs are reported. (A node's filter
// would also send the replaced logs again, marked removed; these are
// not kept: a logs subscription sends them.) f.mu is held.
func (n *Network) rewind(f *logFilter) {
	view := n.up.View()
	low := f.next
	for b, h := range f.reported {
		if cur, ok := view.Canonical(b); ok && cur != h && b < low {
			low = b
		}
	}
	if low == f.next {
		return
	}
	for b := range f.reported {
		if b >= low {
			delete(f.reported, b)
		}
	}
	f.next = low
}
