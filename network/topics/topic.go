package topics

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/upstream"
)

// topic is one upstream subscription (or, for heads, the chain view) and
// its clients. What reaches it (upstream notifications, switches of the
// chain view, polled heads) is queued without blocking whoever hands it
// over, and one goroutine per topic turns the queue into notifications,
// in order: the upstream's reader and the pool's head tracking never wait
// for a topic, and a topic never waits for a client (a connection's queue
// is bounded on its own).
type topic struct {
	hub  *Hub
	key  topicKey
	n    *network
	subs portico.Subscriptions
	rule *portico.Subscription
	sp   portico.SubParams
	// byView marks a heads topic whose notifications are made from the
	// chain view's switches; followsLogs a logs topic that follows them.
	byView, followsLogs bool

	ready chan struct{} // closed once the first open ended
	err   error         // of the first open

	mu      sync.Mutex
	clients map[*clientSub]struct{}
	cancel  func() // the upstream subscription, or the poller
	node    string // the node that holds the upstream subscription
	stops   []func()
	closed  bool

	qmu    sync.Mutex
	queue  []topicEvent
	qbytes int
	lost   bool          // the queue overflowed: its clients are told and cut off
	wake   chan struct{} // a new event is queued
	done   chan struct{} // closed when the topic ends

	// Kept by the topic's goroutine alone.
	heads headState
	logs  logState
}

// topicEvent is one thing a topic turns into notifications.
type topicEvent struct {
	method string // an upstream notification's method
	result jsontext.Value
	node   string // the node that sent it
	sw     *chainview.Switch
	polled uint64 // a tracked head (HTTP-only nodes, heads by number)
}

// Bounds of a topic's queue: a topic whose goroutine falls this far
// behind (a fetch that hangs, a flood of notifications) drops its clients
// with an error rather than hold more.
const (
	maxTopicQueue      = 4096
	maxTopicQueueBytes = 16 << 20
)

// ErrLost is the error a topic's clients get when the topic fell so far
// behind that it dropped notifications: their stream has a gap, so they
// must subscribe again.
var ErrLost = &jsonrpc.Error{Code: portico.CodeMemoryBusy, Message: "subscription dropped: notifications arrived faster than they could be sent; subscribe again"}

func newTopic(h *Hub, key topicKey, rule *portico.Subscription, sp portico.SubParams) *topic {
	t := &topic{hub: h, key: key, n: h.n, subs: h.subs, rule: rule, sp: sp, ready: make(chan struct{}),
		clients: map[*clientSub]struct{}{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	t.byView = sp.Heads && h.subs.HeadOf != nil
	t.followsLogs = h.subs.LogOf != nil && h.subs.Removed != nil && sp.Kind == "logs"
	return t
}

// leave removes c; the topic's last client closes it.
func (t *topic) leave(c *clientSub) {
	t.mu.Lock()
	delete(t.clients, c)
	if len(t.clients) > 0 || t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	cancel, stops := t.cancel, t.stops
	t.cancel, t.stops = nil, nil
	t.mu.Unlock()
	t.hub.mu.Lock()
	if t.hub.topics[t.key] == t {
		delete(t.hub.topics, t.key)
	}
	t.hub.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	for _, stop := range stops {
		stop()
	}
	close(t.done)
}

// open starts what feeds the topic: the chain view's switches for heads
// and logs topics, and an upstream subscription on a node that takes
// them; for heads on a network whose nodes speak HTTP only, the tracked
// heads (or the view alone).
func (t *topic) open(ctx context.Context) error {
	up := t.n.up
	if t.byView || t.followsLogs {
		stop := up.View().OnSwitch(func(sw chainview.Switch) { t.push(topicEvent{sw: &sw}) })
		t.mu.Lock()
		t.stops = append(t.stops, stop)
		t.mu.Unlock()
		if head, ok := up.View().Head(); ok {
			t.heads.last = head // the stream starts after the head of now
		}
	}
	if !up.CanSubscribe() {
		switch {
		case t.byView:
			return nil // the view follows the polled heads
		case t.sp.Heads && t.subs.Head != nil:
			stop := up.OnHeads(func(h portico.Heads) {
				if h.Latest > 0 {
					t.push(topicEvent{polled: h.Latest})
				}
			})
			t.mu.Lock()
			t.stops = append(t.stops, stop)
			t.mu.Unlock()
			return nil
		}
		return &portico.UpstreamError{Network: t.n.name, Err: errors.Join(portico.ErrUpstreamUnavailable,
			errors.New("no node of this network takes subscriptions"))}
	}
	return t.subscribe(ctx, "")
}

// subscribe opens the upstream subscription, on another node than avoid
// when one can hold it.
func (t *topic) subscribe(ctx context.Context, avoid string) error {
	req := upstream.SubRequest{Method: t.rule.Method, Params: t.sp.Send, Unsubscribe: t.rule.Unsubscribe,
		Notifications: append([]string{t.rule.Notification}, t.rule.Also...), IDMember: t.subs.IDMember, Avoid: avoid}
	// The node is known once Subscribe returns, and notifications may
	// come before: those are not credited to a node (heads.go).
	var from atomic.Pointer[string]
	notify := func(method string, result jsontext.Value) {
		ev := topicEvent{method: method, result: result}
		if n := from.Load(); n != nil {
			ev.node = *n
		}
		t.push(ev)
	}
	cancel, node, err := t.n.up.Subscribe(ctx, req, notify, t.ended)
	if err != nil {
		return err
	}
	from.Store(&node)
	t.n.log.Debug("upstream subscription", "network", t.n.name, "method", t.rule.Method, "kind", t.sp.Kind, "upstream", node)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		cancel()
		return nil
	}
	t.cancel, t.node = cancel, node
	t.mu.Unlock()
	return nil
}

// push queues an event without blocking. A queue past its bounds cuts
// the topic's clients off with ErrLost: their streams would have a gap.
func (t *topic) push(ev topicEvent) {
	t.qmu.Lock()
	if t.lost {
		t.qmu.Unlock()
		return
	}
	if len(t.queue) >= maxTopicQueue || t.qbytes+len(ev.result) > maxTopicQueueBytes {
		t.lost, t.queue, t.qbytes = true, nil, 0
		t.qmu.Unlock()
		t.n.log.Error("subscription topic fell behind: its clients are cut off", "network", t.n.name, "method", t.rule.Method, "kind", t.sp.Kind)
		t.signal()
		return
	}
	t.queue = append(t.queue, ev)
	t.qbytes += len(ev.result)
	t.qmu.Unlock()
	t.signal()
}

func (t *topic) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// ended opens a subscription that ended (its node went away, or went
// silent) again, on another node if need be, until it succeeds or the
// topic closes. Heads keep coming from the chain view meanwhile.
func (t *topic) ended(err error) {
	t.n.log.Warn("upstream subscription ended; opening it again", "network", t.n.name, "method", t.rule.Method, "kind", t.sp.Kind, "err", err)
	t.mu.Lock()
	avoid := t.node
	t.mu.Unlock()
	go t.reopen(avoid)
}

// reopen opens the upstream subscription again, avoiding the node that
// held it when another can.
func (t *topic) reopen(avoid string) {
	wait := 50 * time.Millisecond
	for {
		t.mu.Lock()
		closed := t.closed
		t.cancel = nil
		t.mu.Unlock()
		if closed {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := t.subscribe(ctx, avoid)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-t.done:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// moveSilent ends the upstream subscription that went silent (its node
// stopped answering without closing its socket) and opens it elsewhere.
func (t *topic) moveSilent() {
	t.mu.Lock()
	cancel, node := t.cancel, t.node
	t.cancel = nil
	closed := t.closed
	t.mu.Unlock()
	if closed || cancel == nil {
		return
	}
	t.n.log.Warn("upstream subscription silent while the chain moves on: moving it", "network", t.n.name, "method", t.rule.Method, "kind", t.sp.Kind, "upstream", node)
	go cancel() // the unsubscribe may wait on the silent node
	go t.reopen(node)
}

// run turns the topic's events into notifications until it ends.
func (t *topic) run() {
	for {
		select {
		case <-t.done:
			return
		case <-t.wake:
		}
		for {
			t.qmu.Lock()
			if t.lost {
				t.qmu.Unlock()
				t.dropAll(ErrLost)
				return
			}
			if len(t.queue) == 0 {
				t.queue = nil // let a burst's array go
				t.qmu.Unlock()
				break
			}
			ev := t.queue[0]
			t.queue[0] = topicEvent{}
			t.queue = t.queue[1:]
			t.qbytes -= len(ev.result)
			t.qmu.Unlock()
			t.handle(ev)
		}
	}
}

// handle turns one event into notifications.
func (t *topic) handle(ev topicEvent) {
	switch {
	case ev.sw != nil:
		if t.byView {
			t.viewHeads(*ev.sw)
		}
		if t.followsLogs {
			t.viewLogs(*ev.sw)
		}
	case ev.polled > 0:
		t.seqHeads("", nil, ev.polled)
	case t.byView && ev.method == t.rule.Notification:
		t.upstreamHead(ev)
	case t.byView:
		// The node's own reorg notices: the view makes them.
	case t.followsLogs && ev.method == t.rule.Notification:
		t.upstreamLog(ev.result)
	case t.sp.Heads && t.subs.Seq != nil && ev.method == t.rule.Notification:
		if n, ok := t.subs.Seq(t.sp.Kind, ev.result); ok {
			t.seqHeads(ev.method, ev.result, n)
			return
		}
		t.send(ev.method, ev.result)
	default:
		t.send(ev.method, ev.result)
	}
}

// poolCaller lets the family's hooks ask the network's nodes.
type poolCaller struct{ up Upstream }

func (c poolCaller) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	return c.up.Do(ctx, upstream.Request{Method: method, Params: params}, dst)
}

// send charges each client's key for its notification and queues it on
// its connection; a key that cannot pay has its clients told why and
// their connections closed.
func (t *topic) send(method string, result jsontext.Value) {
	t.mu.Lock()
	clients := make([]*clientSub, 0, len(t.clients))
	for c := range t.clients {
		clients = append(clients, c)
	}
	t.mu.Unlock()
	if len(clients) == 0 {
		return
	}
	prefix, suffix := t.envelope(method, result)
	parts := min(runtime.GOMAXPROCS(0), (len(clients)+fanOutShare-1)/fanOutShare)
	if parts <= 1 {
		t.n.metrics.Notifications(t.n.name, t.sp.Kind, t.sendTo(clients, method, result, prefix, suffix))
		return
	}
	// Many clients: served by one goroutine per core, each client by
	// one, so that each still gets its notifications in order.
	var sent atomic.Int64
	var wg sync.WaitGroup
	for i := range parts {
		share := clients[i*len(clients)/parts : (i+1)*len(clients)/parts]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent.Add(int64(t.sendTo(share, method, result, prefix, suffix)))
		}()
	}
	wg.Wait()
	t.n.metrics.Notifications(t.n.name, t.sp.Kind, int(sent.Load()))
}

// fanOutShare is how many clients of a notification one goroutine serves
// before the notification is served by one goroutine per core.
const fanOutShare = 1024

// sendTo charges and queues one notification, encoded once (prefix + id +
// suffix), for each of clients, and returns how many it was queued for.
func (t *topic) sendTo(clients []*clientSub, method string, result jsontext.Value, prefix, suffix []byte) int {
	cost := t.cost()
	sent := 0
	var key string
	var keyed, hasKey bool
	blockKeyOf := func() (string, bool) { // once for every client
		if !keyed {
			b, removed, ok := t.blockOf(result)
			key, hasKey, keyed = blockKey(b, removed), ok, true
		}
		return key, hasKey
	}
	for _, c := range clients {
		if c.resume != nil && (c.resume.hold(method, result) || c.resume.toldOf(blockKeyOf)) {
			continue // sent after its backfill, or by it (resume.go)
		}
		if err := t.hub.pay(c, cost); err != nil {
			t.refuse(c, err)
			continue
		}
		sent++
		// One encoding for every client.
		if t.sp.Ends {
			c.sub.NotifySplicedLast(prefix, suffix)
		} else {
			c.sub.NotifySpliced(prefix, suffix)
		}
	}
	return sent
}

// envelope is a notification around its id: prefix + id + suffix.
func (t *topic) envelope(method string, result jsontext.Value) (prefix, suffix []byte) {
	prefix = append(prefix, `{"jsonrpc":"2.0","method":`...)
	prefix, _ = jsontext.AppendQuote(prefix, method)
	prefix = append(prefix, `,"params":{`...)
	if t.subs.ResultFirst {
		prefix = append(append(append(prefix, `"result":`...), result...), ',')
		prefix, _ = jsontext.AppendQuote(prefix, t.subs.IDMember)
		prefix = append(prefix, ':')
		return prefix, []byte("}}")
	}
	prefix, _ = jsontext.AppendQuote(prefix, t.subs.IDMember)
	prefix = append(prefix, ':')
	suffix = append(append(append(suffix, `,"result":`...), result...), "}}"...)
	return prefix, suffix
}

// refuse tells a client why its subscriptions stop (the error a call
// would get), ends them and closes its connection with that reason, once
// the error is out.
func (t *topic) refuse(c *clientSub, err error) {
	e, _, _ := jsonrpc.ErrorFor(err)
	conn := c.sub.Conn()
	conn.Notify(jsonrpc.AppendError(nil, nil, e))
	c.sub.End()
	reason := e.Message
	if len(reason) > 120 {
		reason = reason[:120]
	}
	conn.CloseAfterQueued(websocket.StatusPolicyViolation, reason)
}

// dropAll refuses every client of the topic with err.
func (t *topic) dropAll(err error) {
	t.mu.Lock()
	clients := make([]*clientSub, 0, len(t.clients))
	for c := range t.clients {
		clients = append(clients, c)
	}
	t.mu.Unlock()
	for _, c := range clients {
		t.refuse(c, err)
	}
}

func parseUint(v jsontext.Value) (uint64, bool) {
	n, err := strconv.ParseUint(string(v), 10, 64)
	return n, err == nil
}
