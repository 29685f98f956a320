package topics

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/chainview"
)

// This file runs a resumed subscription (docs/subscriptions.md). The
// client joins its live topic first, whose notifications for it are held;
// its backfill (plan.go) is sent in order; then the held notifications
// follow, less those about blocks the backfill already told of, and the
// client is live: no gap and no duplicate at the seam. The backfill reads
// the chain as the view has it, which may be ahead of the topic's own
// stream (a node's notifications that lag its answers): until the live
// stream tells of a block the backfill did not, its notifications about
// blocks the backfill told of are dropped too. Each notification of the
// backfill is charged like a live one.

// resumer is a resumed client's state at the seam.
type resumer struct {
	mu   sync.Mutex
	live bool
	held []heldNote
	lost bool // more live notifications came than maxHeld: the client is cut off
	plan resumePlan
	// told are the blocks the backfill told of (blockKey), once the
	// client is live, until the live stream tells of another.
	told map[string]bool
}

// maxHeld bounds the live notifications held for a client while its
// backfill runs, as a topic's own queue is bounded.
const maxHeld = maxTopicQueue

// heldNote is a live notification held while the backfill runs.
type heldNote struct {
	method string
	result jsontext.Value
}

// hold keeps a live notification while the backfill runs, and reports
// whether it did (false once the client is live).
func (r *resumer) hold(method string, result jsontext.Value) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live {
		return false
	}
	if len(r.held) >= maxHeld {
		r.lost, r.held = true, nil
	}
	if !r.lost {
		r.held = append(r.held, heldNote{method, result})
	}
	return true
}

// take returns the notifications held so far; with none left it makes the
// client live, told being the blocks the backfill told of. lost reports
// that too many came to hold.
func (r *resumer) take(told map[string]bool) (held []heldNote, lost bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost {
		return nil, true
	}
	held = r.held
	r.held = nil
	if len(held) == 0 {
		r.live, r.told = true, told
	}
	return held, false
}

// toldOf reports whether a live notification is about a block the backfill
// told of (key, from blockKey; ok false when the notification names
// none), which is dropped; the first about another ends the check.
func (r *resumer) toldOf(key func() (string, bool)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		return false
	}
	if k, ok := key(); ok && r.told[k] {
		return true
	}
	r.told = nil
	return false
}

// roomFloor is how many messages a connection may have queued before a
// backfill waits for its client to read: a backfill is long, and a
// connection's queue is bounded (limits.max_notification_queue).
const roomFloor = 64

// waitRoom waits until c's connection has room for more of the backfill,
// and reports false when the subscription ended meanwhile.
func waitRoom(c *clientSub) bool {
	conn := c.sub.Conn()
	for conn.Queued() >= roomFloor {
		select {
		case <-c.sub.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case <-c.sub.Done():
		return false
	default:
		return true
	}
}

// startResume runs c's backfill once the answer with its id is queued.
func (t *topic) startResume(ctx context.Context, c *clientSub) {
	run := func() { go t.backfill(c) }
	if !jsonrpc.AfterAnswer(ctx, run) {
		run()
	}
}

// backfill sends c's backfill, then what was held, and makes it live.
func (t *topic) backfill(c *clientSub) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.sub.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	sent := map[string]bool{} // blocks the backfill told of, and of removals
	p := c.resume.plan
	if len(p.dropped) > 0 && t.subs.Reorg != nil {
		method, result := t.subs.Reorg(t.sp.Kind, p.dropped)
		if !t.deliver(c, method, result) {
			return
		}
	}
	if !t.sp.Heads {
		for _, d := range p.dropped {
			for _, l := range t.removedLogs(ctx, d) {
				if !t.deliver(c, t.rule.Notification, l) {
					return
				}
			}
			sent[blockKey(d, true)] = true
			sent[blockKey(chainview.Header{Number: d.Number}, true)] = true
		}
	}
	for results := range t.fetchAdded(ctx, p.added) {
		if results.err != nil {
			t.n.log.Warn("a resumed subscription's block could not be read: the client misses it", "network", t.n.name, "kind", t.sp.Kind, "block", results.b.Number, "err", results.err)
		}
		for _, res := range results.results {
			if !t.deliver(c, t.rule.Notification, res) {
				return
			}
		}
		if !t.sp.Heads && results.err == nil {
			for _, res := range results.results {
				t.hub.logMem.add(t.key.params, results.b.Hash, res)
			}
		}
		if results.err == nil {
			sent[blockKey(results.b, false)] = true
			sent[blockKey(chainview.Header{Number: results.b.Number}, false)] = true
		}
	}
	for {
		held, lost := c.resume.take(sent)
		if lost {
			t.refuse(c, ErrLost)
			return
		}
		if len(held) == 0 {
			return
		}
		for _, n := range held {
			if b, removed, ok := t.blockOf(n.result); ok && sent[blockKey(b, removed)] {
				continue // the backfill told of it
			}
			if !t.deliver(c, n.method, n.result) {
				return
			}
		}
	}
}

// blockKey names a block (by hash, or by number where the notification
// tells none: the backfill records both) and
// whether a notification about it tells of its removal.
func blockKey(b chainview.Header, removed bool) string {
	k := b.Hash
	if k == "" {
		k = "#" + strconv.FormatUint(b.Number, 10)
	}
	if removed {
		k += "/removed"
	}
	return k
}

// blockOf reads the block a notification of the topic is about.
func (t *topic) blockOf(result jsontext.Value) (chainview.Header, bool, bool) {
	s := t.subs
	switch {
	case t.sp.Heads && s.HeadOf != nil:
		h, ok := s.HeadOf(t.sp.Kind, result)
		return h, false, ok
	case t.sp.Heads && s.Seq != nil:
		n, ok := s.Seq(t.sp.Kind, result)
		return chainview.Header{Number: n}, false, ok
	case s.BlockOf != nil:
		return s.BlockOf(t.sp.Kind, result)
	case s.LogOf != nil:
		return s.LogOf(t.sp.Kind, result)
	}
	return chainview.Header{}, false, false
}

// removedLogs are the notifications that take back what the subscription
// sent about block d, which a reorg dropped: the logs the network's
// topics of these params sent (the nodes may have forgotten the block),
// else the nodes' own.
func (t *topic) removedLogs(ctx context.Context, d chainview.Header) []jsontext.Value {
	if t.subs.Removed != nil {
		if logs := t.hub.logMem.get(t.key.params, d.Hash); logs != nil {
			out := make([]jsontext.Value, len(logs))
			for i, l := range logs {
				out[i] = t.subs.Removed(l)
			}
			return out
		}
	}
	if t.subs.Backfill == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	out, err := t.subs.Backfill(ctx, poolCaller{t.n.up}, t.sp.Kind, t.sp.Send, d, true)
	if err != nil {
		t.n.log.Info("the removed notifications of a dropped block could not be read", "network", t.n.name, "kind", t.sp.Kind, "block", d.Number, "hash", d.Hash, "err", err)
	}
	return out
}

// blockResults are a backfilled block's notifications.
type blockResults struct {
	b       chainview.Header
	results []jsontext.Value
	err     error
}

// fetchWidth is how many blocks a backfill reads at once.
const fetchWidth = 8

// fetchAdded reads the notifications of blocks, a few at a time, and
// hands them over in order.
func (t *topic) fetchAdded(ctx context.Context, blocks []chainview.Header) func(yield func(blockResults) bool) {
	return func(yield func(blockResults) bool) {
		for i := 0; i < len(blocks); i += fetchWidth {
			batch := blocks[i:min(i+fetchWidth, len(blocks))]
			out := make([]blockResults, len(batch))
			var wg sync.WaitGroup
			for j, b := range batch {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out[j] = t.readBlock(ctx, b)
				}()
			}
			wg.Wait()
			for _, r := range out {
				if ctx.Err() != nil || !yield(r) {
					return
				}
			}
		}
	}
}

// readBlock makes block b's notifications for the topic.
func (t *topic) readBlock(ctx context.Context, b chainview.Header) blockResults {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	out := blockResults{b: b}
	if t.sp.Heads {
		if t.subs.Head == nil {
			out.err = errNoHeadHook
			return out
		}
		heads, _ := t.n.up.HeadsFresh()
		res, err := t.subs.Head(ctx, poolCaller{t.n.up}, t.sp.Kind, b, heads)
		if res != nil {
			out.results = []jsontext.Value{res}
		}
		out.err = err
		return out
	}
	out.results, out.err = t.subs.Backfill(ctx, poolCaller{t.n.up}, t.sp.Kind, t.sp.Send, b, false)
	return out
}

// deliver charges c's key for one notification and queues it, once its
// connection has room; false when c is gone or its key cannot pay.
func (t *topic) deliver(c *clientSub, method string, result jsontext.Value) bool {
	if !waitRoom(c) {
		return false
	}
	if err := t.hub.pay(c, t.cost()); err != nil {
		t.refuse(c, err)
		return false
	}
	prefix, suffix := t.envelope(method, result)
	msg := make([]byte, 0, len(prefix)+len(c.sub.ID())+len(suffix))
	msg = append(append(append(msg, prefix...), c.sub.ID()...), suffix...)
	if !c.sub.Notify(msg) {
		return false
	}
	t.n.metrics.Notifications(t.n.name, t.sp.Kind, 1)
	return true
}

// cost is the credits one notification of the topic costs.
func (t *topic) cost() int64 {
	if c, ok := t.rule.NotificationCost[t.sp.Kind]; ok {
		return int64(c)
	}
	return int64(t.subs.DefaultNotificationCost)
}

// logMemory keeps the logs the network's logs topics sent, by params and
// block, while the chain view knows the block (on its chain or dropped
// from it): a client that resumes from a block a reorg dropped gets them
// back as removed even when the nodes forgot the block (anvil does).
type logMemory struct {
	mu   sync.Mutex
	logs map[string]map[string][]jsontext.Value // params -> block hash -> logs
	n    int
	view *chainview.View
}

// maxRememberedLogs bounds the logs a network remembers for resumes.
const maxRememberedLogs = 1 << 14

func (m *logMemory) add(params, hash string, l jsontext.Value) {
	if hash == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n >= maxRememberedLogs {
		m.prune()
		if m.n >= maxRememberedLogs {
			return
		}
	}
	if m.logs == nil {
		m.logs = map[string]map[string][]jsontext.Value{}
	}
	byBlock := m.logs[params]
	if byBlock == nil {
		byBlock = map[string][]jsontext.Value{}
		m.logs[params] = byBlock
	}
	byBlock[hash] = append(byBlock[hash], l)
	m.n++
}

func (m *logMemory) get(params, hash string) []jsontext.Value {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs[params][hash]
}

// prune lets go of the logs of blocks the view no longer knows. m.mu is
// held.
func (m *logMemory) prune() {
	for params, byBlock := range m.logs {
		for hash, logs := range byBlock {
			if _, _, ok := m.view.Lookup(hash); !ok {
				m.n -= len(logs)
				delete(byBlock, hash)
			}
		}
		if len(byBlock) == 0 {
			delete(m.logs, params)
		}
	}
}

// resumable refuses a resume the family's rules cannot serve.
func (h *Hub) resumable(sp portico.SubParams) error {
	r := sp.Resume
	switch {
	case sp.Heads && h.subs.Head == nil, !sp.Heads && h.subs.Backfill == nil:
		return r.Error("this subscription cannot resume")
	}
	return nil
}
