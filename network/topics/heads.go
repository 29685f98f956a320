package topics

import (
	"context"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/chainview"
)

// This file keeps heads and logs streams true to the chain view. A heads
// topic of a family whose heads carry hashes (EVM newHeads, the rollup's
// new heads) sends what the view's switches say: every block of a new
// branch, in order, the first at or below the old head, and for the
// rollup the spec's reorg notice first; a client's stream always links by
// parent hash, whichever node the upstream subscription is on, and a
// node that goes silent costs no head (the view follows the others). The
// upstream subscription only brings the heads' results sooner and feeds
// the view. A logs topic sends a log once its block is on the served
// chain, and sends it again with "removed": true when a reorg drops its
// block, as geth does. Heads of the slot chain are kept in order by
// number: a slot or a root never goes back.

// headState is a heads topic's memory, kept by its goroutine.
type headState struct {
	last     chainview.Header          // the newest block sent (or the view's head when the topic began)
	results  map[string]jsontext.Value // recent heads' results from the upstream, by hash
	order    []string                  // their hashes, oldest first, to let the oldest go
	upNumber uint64                    // the newest head the upstream subscription sent
	seqLast  uint64                    // heads by number: the last sent
	seqSeen  bool
}

// maxHeadResults bounds the heads results a topic keeps; a reorg deeper
// than that fetches the rest.
const maxHeadResults = 256

// silentAfter is how many blocks the view may move on past the upstream
// subscription's last head before the subscription counts as silent (its
// node froze without closing its socket) and is moved.
const silentAfter = 3

// fetchTimeout bounds the fetch of one head's result.
const fetchTimeout = 5 * time.Second

// upstreamHead takes a heads notification from the upstream subscription:
// its result is kept for when the view reaches its block, and the pool
// learns of the node's head at once rather than at its next poll.
func (t *topic) upstreamHead(ev topicEvent) {
	h, ok := t.subs.HeadOf(t.sp.Kind, ev.result)
	if !ok {
		return
	}
	hs := &t.heads
	if hs.results == nil {
		hs.results = map[string]jsontext.Value{}
	}
	if _, ok := hs.results[h.Hash]; !ok {
		hs.results[h.Hash] = ev.result
		hs.order = append(hs.order, h.Hash)
		if len(hs.order) > maxHeadResults {
			delete(hs.results, hs.order[0])
			hs.order = hs.order[1:]
		}
	}
	hs.upNumber = max(hs.upNumber, h.Number)
	if ev.node != "" {
		t.n.up.Observe(ev.node, h)
	}
}

// viewHeads sends a switch of the served chain: the reorg notice when
// the family has one, then every added block.
func (t *topic) viewHeads(sw chainview.Switch) {
	hs := &t.heads
	if sw.Reorg() && t.subs.Reorg != nil && !sw.Reset {
		method, result := t.subs.Reorg(t.sp.Kind, sw.Dropped)
		t.send(method, result)
	}
	for _, b := range sw.Added {
		result := hs.results[b.Hash]
		if result == nil {
			var err error
			if result, err = t.fetchHead(b); err != nil {
				t.n.log.Warn("a head the chain view reached could not be fetched: clients miss it", "network", t.n.name, "block", b.Number, "hash", b.Hash, "err", err)
				continue
			}
		}
		t.send(t.rule.Notification, result)
		hs.last = b
	}
	// The upstream subscription's node froze if the chain moved on
	// without it.
	t.mu.Lock()
	subscribed := t.cancel != nil
	t.mu.Unlock()
	if subscribed && hs.last.Number >= hs.upNumber+silentAfter && hs.upNumber > 0 {
		hs.upNumber = hs.last.Number // moved once per silence
		t.moveSilent()
	}
}

// fetchHead asks the network's nodes for block b's heads result.
func (t *topic) fetchHead(b chainview.Header) (jsontext.Value, error) {
	if t.subs.Head == nil {
		return nil, errNoHeadHook
	}
	heads, _ := t.n.up.HeadsFresh()
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	return t.subs.Head(ctx, poolCaller{t.n.up}, t.sp.Kind, b, heads)
}

// errNoHeadHook is the error of a family that cannot make a head's
// result from a node.
var errNoHeadHook = &portico.UpstreamError{Err: portico.ErrUpstreamUnavailable}

// maxFill bounds the slots filled in after a heads-by-number subscription
// moved to another node; a longer gap is skipped (the client sees the
// jump).
const maxFill = 128

// seqHeads keeps a heads stream by number in order (the slot chain's
// slots): a head seen before is dropped. result is nil for a polled head
// (nodes that speak HTTP only), whose results are made, the heads between
// polls too. A gap between two notifications of the node is not filled:
// on the slot chain it is a skipped slot, which has no notification, and
// a made-up one would carry a root older than the node's last.
func (t *topic) seqHeads(method string, result jsontext.Value, n uint64) {
	hs := &t.heads
	if hs.seqSeen && n <= hs.seqLast {
		return // a head the clients have
	}
	from := n
	if result == nil && hs.seqSeen && n-hs.seqLast <= maxFill {
		from = hs.seqLast + 1
	}
	for m := from; m <= n; m++ {
		res := result
		if m != n || res == nil {
			if t.subs.Head == nil {
				continue
			}
			heads, _ := t.n.up.HeadsFresh()
			ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
			r, err := t.subs.Head(ctx, poolCaller{t.n.up}, t.sp.Kind, portico.Header{Number: m}, heads)
			cancel()
			if err != nil {
				t.n.log.Warn("filling a heads subscription", "network", t.n.name, "block", m, "err", err)
				continue
			}
			res = r
		}
		hs.seqLast, hs.seqSeen = m, true
		t.send(t.rule.Notification, res)
	}
}

// logState is a logs topic's memory, kept by its goroutine: the logs sent
// per block still above finality (to send again as removed), and the logs
// held until their block is on the served chain.
type logState struct {
	sent map[string][]jsontext.Value
	held map[string]heldLogs
	n    int // logs kept in sent and held
}

// heldLogs are logs of a block the view has not reached yet.
type heldLogs struct {
	number uint64
	at     time.Time
	logs   []jsontext.Value
}

// maxKeptLogs bounds the logs a topic keeps for reorgs; past it, the
// oldest blocks' logs are let go (a reorg that deep sends no removal for
// them).
const maxKeptLogs = 1 << 14

// heldFor is how long a log waits for its block to reach the view before
// it is let go: a block that long off the chain was on a branch the
// chain did not take.
const heldFor = 30 * time.Second

// upstreamLog takes a log from the upstream subscription.
func (t *topic) upstreamLog(result jsontext.Value) {
	b, removed, ok := t.subs.LogOf(t.sp.Kind, result)
	if !ok {
		t.send(t.rule.Notification, result)
		return
	}
	if removed {
		return // the view's switches send removals, once
	}
	ls := &t.logs
	if ls.sent == nil {
		ls.sent, ls.held = map[string][]jsontext.Value{}, map[string]heldLogs{}
	}
	view := t.n.up.View()
	_, final := view.Marks()
	switch {
	case b.Number <= final && final > 0:
		t.send(t.rule.Notification, result) // final: it cannot be removed
	case view.OnChain(b.Hash):
		t.send(t.rule.Notification, result)
		ls.keep(b.Hash, result)
		t.hub.logMem.add(t.key.params, b.Hash, result)
	default:
		h := ls.held[b.Hash]
		if h.logs == nil {
			h = heldLogs{number: b.Number, at: time.Now()}
		}
		h.logs = append(h.logs, result)
		ls.held[b.Hash] = h
		ls.n++
		ls.expire(time.Now())
		t.n.up.Poke() // the view learns of the block sooner
	}
}

// viewLogs follows a switch of the served chain: the logs of dropped
// blocks go out again as removed, newest block last as they were sent,
// then the held logs of added blocks.
func (t *topic) viewLogs(sw chainview.Switch) {
	ls := &t.logs
	if ls.sent == nil {
		return
	}
	for _, d := range sw.Dropped {
		for _, l := range ls.sent[d.Hash] {
			t.send(t.rule.Notification, t.subs.Removed(l))
		}
		ls.n -= len(ls.sent[d.Hash])
		delete(ls.sent, d.Hash)
	}
	for _, a := range sw.Added {
		h, ok := ls.held[a.Hash]
		if !ok {
			continue
		}
		delete(ls.held, a.Hash)
		for _, l := range h.logs {
			t.send(t.rule.Notification, l)
		}
		ls.sent[a.Hash] = append(ls.sent[a.Hash], h.logs...)
		for _, l := range h.logs {
			t.hub.logMem.add(t.key.params, a.Hash, l)
		}
	}
	// Blocks the view let go (final, or older than it keeps) cannot be
	// removed any more: their logs go.
	view := t.n.up.View()
	for hash, logs := range ls.sent {
		if !view.OnChain(hash) {
			ls.n -= len(logs)
			delete(ls.sent, hash)
		}
	}
	ls.expire(time.Now())
}

// keep records a sent log for a later removal, within maxKeptLogs.
func (ls *logState) keep(hash string, l jsontext.Value) {
	if ls.n >= maxKeptLogs {
		return
	}
	ls.sent[hash] = append(ls.sent[hash], l)
	ls.n++
}

// expire lets go of held logs whose block never reached the chain.
func (ls *logState) expire(now time.Time) {
	for hash, h := range ls.held {
		if now.Sub(h.at) > heldFor || ls.n > maxKeptLogs {
			ls.n -= len(h.logs)
			delete(ls.held, hash)
		}
	}
}
