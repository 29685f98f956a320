package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/apikey"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/upstream"
)

// This file shares upstream subscriptions between the clients of an
// instance: one upstream subscription per distinct (network, method,
// params), each client with its own id, its own bounded queue (the
// connection's) and its own credits. A heads subscription survives its
// node: it is opened again elsewhere, and the blocks it missed are filled
// in and the ones it sees twice dropped.

// hub holds a network's shared subscriptions.
type hub struct {
	n      *Network
	subs   portico.Subscriptions
	meter  Meter
	mu     sync.Mutex
	topics map[topicKey]*topic
	next   atomic.Uint64 // ids of integer and string id families
}

func newHub(n *Network, subs portico.Subscriptions, meter Meter) *hub {
	return &hub{n: n, subs: subs, meter: meter, topics: map[topicKey]*topic{}}
}

// topicKey identifies what clients of a network can share.
type topicKey struct {
	method string
	params string // canonical; unique for a private subscription
}

// topic is one upstream subscription and its clients.
type topic struct {
	hub  *hub
	key  topicKey
	n    *Network
	subs portico.Subscriptions
	rule *portico.Subscription
	sp   portico.SubParams

	ready chan struct{} // closed once the first open ended
	err   error         // of the first open

	mu      sync.Mutex
	clients map[*clientSub]struct{}
	cancel  func() // the upstream subscription or the poller
	closed  bool
	last    uint64 // heads: the last block (slot) delivered
	seen    bool

	events chan subEvent
	done   chan struct{} // closed when the topic ends
}

type subEvent struct {
	method string
	result jsontext.Value
}

// clientSub is one client's subscription to a topic.
type clientSub struct {
	sub   *jsonrpc.Sub
	ident apikey.Identity
	t     *topic
}

// maxFill bounds the blocks filled in after a heads subscription moved to
// another node; a longer gap is skipped (the client sees the jump).
const maxFill = 128

// Subscribe serves a subscribe call that came over a WebSocket (ctx
// carries its connection): a client id on that connection, joined to the
// topic of its params, whose notifications key pays for. onEnd runs when
// the subscription ends, however it ends.
func (n *Network) Subscribe(ctx context.Context, rule *portico.Subscription, sp portico.SubParams, key apikey.Identity, onEnd func()) Outcome {
	if jsonrpc.ConnFrom(ctx) == nil {
		onEnd()
		return Outcome{Err: jsonrpc.ErrNoConnection}
	}
	h := n.hub
	id := h.newID(h.subs.IDs)
	s, err := jsonrpc.Subscribe(ctx, id)
	if err != nil {
		onEnd()
		return Outcome{Err: err}
	}
	c := &clientSub{sub: s, ident: key}
	t, err := h.join(ctx, rule, sp, c)
	if err != nil {
		s.End()
		onEnd()
		return Outcome{Err: err}
	}
	c.t = t
	// What the closure keeps for the subscription's life is named here,
	// so that it holds these strings and not the whole call.
	network, kind := n.name, sp.Kind
	n.metrics.Subscription(network, kind, 1)
	s.OnEnd(func() {
		t.leave(c)
		onEnd()
		n.metrics.Subscription(network, kind, -1)
	})
	return Outcome{Result: id}
}

// Unsubscribe serves an unsubscribe call: it ends the client's
// subscription with the id in the params, on the call's connection.
func (n *Network) Unsubscribe(ctx context.Context, raw jsontext.Value) Outcome {
	if jsonrpc.ConnFrom(ctx) == nil {
		return Outcome{Err: jsonrpc.ErrNoConnection}
	}
	if raw == nil {
		raw = jsontext.Value("[]")
	}
	id, err := subscriptionIDParam(raw)
	if err != nil {
		return Outcome{Err: err}
	}
	for _, form := range idForms(id) {
		if jsonrpc.Unsubscribe(ctx, form) {
			return Outcome{Result: jsontext.Value("true")}
		}
	}
	if e := n.hub.subs.UnknownID; e != nil {
		return Outcome{Err: e}
	}
	return Outcome{Result: jsontext.Value("false")}
}

// subscriptionIDParam reads the one id of an unsubscribe call: [id] or
// {"subscription_id": id}.
func subscriptionIDParam(raw jsontext.Value) (jsontext.Value, error) {
	var id jsontext.Value
	switch raw.Kind() {
	case '[':
		var items []jsontext.Value
		if err := json.Unmarshal(raw, &items); err != nil || len(items) != 1 {
			return nil, &portico.ParamsError{Position: 1, Field: "id", Reason: "want one subscription id"}
		}
		id = items[0]
	case '{':
		var m map[string]jsontext.Value
		if err := json.Unmarshal(raw, &m); err != nil || len(m) != 1 || m["subscription_id"] == nil {
			return nil, &portico.ParamsError{Field: "subscription_id", Reason: "want {\"subscription_id\": id}"}
		}
		id = m["subscription_id"]
	default:
		return nil, &portico.ParamsError{Position: 1, Field: "id", Reason: "want one subscription id"}
	}
	if k := id.Kind(); k != '"' && k != '0' {
		return nil, &portico.ParamsError{Position: 1, Field: "id", Reason: "want a subscription id, a string or a number"}
	}
	return id, nil
}

// idForms are the ways a client may write an id it was given: the rollup's
// spec writes ids as strings and its unsubscribe param as an integer.
func idForms(id jsontext.Value) []jsontext.Value {
	forms := []jsontext.Value{id}
	if s := string(id); len(s) > 2 && s[0] == '"' {
		if _, err := strconv.ParseUint(s[1:len(s)-1], 10, 64); err == nil {
			forms = append(forms, jsontext.Value(s[1:len(s)-1]))
		}
	} else if id.Kind() == '0' {
		forms = append(forms, jsontext.Value(`"`+s+`"`))
	}
	return forms
}

// newID makes a client subscription id in the family's form.
func (h *hub) newID(form portico.SubscriptionIDs) jsontext.Value {
	switch form {
	case portico.IDInteger:
		return jsontext.Value(strconv.FormatUint(h.next.Add(1)-1, 10))
	case portico.IDString:
		return jsontext.Value(`"` + strconv.FormatUint(h.next.Add(1)-1, 10) + `"`)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return jsontext.Value(`"0x` + hex.EncodeToString(b[:]) + `"`)
}

// join adds c to the topic of (network, rule, params), opening the
// upstream subscription when c is its first client.
func (h *hub) join(ctx context.Context, rule *portico.Subscription, sp portico.SubParams, c *clientSub) (*topic, error) {
	key := topicKey{method: rule.Method, params: canonicalJSON(sp.Send)}
	if sp.Private {
		key.params += "\x00" + strconv.FormatUint(h.next.Add(1), 10)
	}
	for {
		h.mu.Lock()
		t := h.topics[key]
		fresh := t == nil
		if fresh {
			t = &topic{hub: h, key: key, n: h.n, subs: h.subs, rule: rule, sp: sp, ready: make(chan struct{}),
				clients: map[*clientSub]struct{}{}, events: make(chan subEvent, 1024), done: make(chan struct{})}
			h.topics[key] = t
		}
		h.mu.Unlock()
		if fresh {
			t.err = t.open(ctx)
			close(t.ready)
			if t.err != nil {
				h.mu.Lock()
				delete(h.topics, key)
				h.mu.Unlock()
				close(t.done)
				return nil, t.err
			}
			go t.deliver()
		}
		select {
		case <-t.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if t.err != nil {
			return nil, t.err
		}
		t.mu.Lock()
		if t.closed { // its last client left meanwhile: a new topic
			t.mu.Unlock()
			continue
		}
		t.clients[c] = struct{}{}
		t.mu.Unlock()
		return t, nil
	}
}

// canonicalJSON is the form of params that makes equal subscriptions share.
func canonicalJSON(v jsontext.Value) string {
	c := append(jsontext.Value(nil), v...)
	if err := c.Canonicalize(); err != nil {
		return string(v)
	}
	return string(c)
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
	cancel := t.cancel
	t.cancel = nil
	t.mu.Unlock()
	t.hub.mu.Lock()
	if t.hub.topics[t.key] == t {
		delete(t.hub.topics, t.key)
	}
	t.hub.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	close(t.done)
}

// open starts the topic's upstream: a subscription on a node that takes
// them, or, for heads on a network whose nodes speak HTTP only, the
// network's tracked heads.
func (t *topic) open(ctx context.Context) error {
	up := t.n.up
	if !up.CanSubscribe() {
		if t.sp.Heads && t.subs.Head != nil {
			stop := up.OnHeads(t.polled)
			t.mu.Lock()
			t.cancel = stop
			t.mu.Unlock()
			return nil
		}
		return &portico.UpstreamError{Network: t.n.name, Err: errors.Join(portico.ErrUpstreamUnavailable,
			errors.New("no node of this network takes subscriptions"))}
	}
	req := upstream.SubRequest{Method: t.rule.Method, Params: t.sp.Send, Unsubscribe: t.rule.Unsubscribe,
		Notifications: append([]string{t.rule.Notification}, t.rule.Also...), IDMember: t.subs.IDMember}
	cancel, node, err := up.Subscribe(ctx, req, t.notify, t.ended)
	if err != nil {
		return err
	}
	t.n.log.Debug("upstream subscription", "network", t.n.name, "method", t.rule.Method, "kind", t.sp.Kind, "upstream", node)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		cancel()
		return nil
	}
	t.cancel = cancel
	t.mu.Unlock()
	return nil
}

// notify queues an upstream notification for delivery, in order.
func (t *topic) notify(method string, result jsontext.Value) {
	select {
	case t.events <- subEvent{method, result}:
	case <-t.done:
	}
}

// polled turns a new tracked head into heads notifications.
func (t *topic) polled(h portico.Heads) {
	if h.Latest == 0 {
		return
	}
	t.notify("", jsontext.Value(strconv.FormatUint(h.Latest, 10))) // "": a head number to make results of
}

// ended opens a subscription that ended (its node went away) again, on
// another node if need be, until it succeeds or the topic closes.
func (t *topic) ended(err error) {
	t.n.log.Warn("upstream subscription ended; opening it again", "network", t.n.name, "method", t.rule.Method, "kind", t.sp.Kind, "err", err)
	go func() {
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
			err := t.open(ctx)
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
	}()
}

// deliver sends the topic's notifications to its clients until it ends.
func (t *topic) deliver() {
	for {
		select {
		case <-t.done:
			return
		case ev := <-t.events:
			t.handle(ev)
		}
	}
}

// handle delivers one upstream notification, keeping heads in order: a
// block seen before is dropped, blocks missed are filled in.
func (t *topic) handle(ev subEvent) {
	if !t.sp.Heads || (ev.method != "" && ev.method != t.rule.Notification) {
		t.send(ev.method, ev.result)
		return
	}
	var n uint64
	var ok bool
	if ev.method == "" { // a polled head number
		n, ok = parseUint(ev.result)
		ev.result = nil
	} else {
		n, ok = t.subs.Seq(t.sp.Kind, ev.result)
	}
	if !ok {
		t.send(t.rule.Notification, ev.result)
		return
	}
	t.mu.Lock()
	last, seen := t.last, t.seen
	t.mu.Unlock()
	if seen && n <= last {
		return // a block the clients have
	}
	from := n
	if seen && n-last <= maxFill {
		from = last + 1
	}
	if ev.result == nil && !seen {
		from = n // polling starts at the head
	}
	for m := from; m <= n; m++ {
		res := ev.result
		if m != n || res == nil {
			if t.subs.Head == nil {
				continue
			}
			heads, _ := t.n.up.HeadsFresh()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := t.subs.Head(ctx, poolCaller{t.n.up}, t.sp.Kind, m, heads)
			cancel()
			if err != nil {
				t.n.log.Warn("filling a heads subscription", "network", t.n.name, "block", m, "err", err)
				continue
			}
			res = r
		}
		t.mu.Lock()
		t.last, t.seen = m, true
		t.mu.Unlock()
		t.send(t.rule.Notification, res)
	}
}

// poolCaller lets the family's Head hook ask the network's nodes.
type poolCaller struct{ up Upstream }

func (c poolCaller) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	return c.up.Do(ctx, upstream.Request{Method: method, Params: params}, dst)
}

// send charges each key for its clients' notification and queues it on
// their connections; a key that cannot pay has its clients told why and
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
	cost := int64(t.subs.DefaultNotificationCost)
	if c, ok := t.rule.NotificationCost[t.sp.Kind]; ok {
		cost = int64(c)
	}
	refused := map[string]error{}
	if m := t.hub.meter; m != nil && cost > 0 {
		byKey := map[string][]*clientSub{}
		for _, c := range clients {
			byKey[c.ident.Name] = append(byKey[c.ident.Name], c)
		}
		item := t.rule.Notification + "." + t.sp.Kind
		for name, cs := range byKey {
			if _, err := m.Charge(context.Background(), cs[0].ident, []metering.Item{{Method: item, Cost: cost * int64(len(cs))}}); err != nil {
				refused[name] = err
				var quota *portico.QuotaError
				if errors.As(err, &quota) {
					t.n.metrics.Refused(name, quota.Limit, len(cs))
				} else {
					t.n.metrics.MeteringFailure()
				}
			} else {
				t.n.metrics.Credits(name, cost*int64(len(cs)))
			}
		}
	}
	prefix, suffix := t.envelope(method, result)
	sent := 0
	defer func() { t.n.metrics.Notifications(t.n.name, t.sp.Kind, sent) }()
	for _, c := range clients {
		if err := refused[c.ident.Name]; err != nil {
			t.refuse(c, err)
			continue
		}
		sent++
		msg := make([]byte, 0, len(prefix)+len(c.sub.ID())+len(suffix))
		msg = append(append(append(msg, prefix...), c.sub.ID()...), suffix...)
		c.sub.Notify(msg)
		if t.sp.Ends {
			c.sub.End()
		}
	}
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
// would get), ends them and closes its connection with that reason.
func (t *topic) refuse(c *clientSub, err error) {
	e, _, _ := jsonrpc.ErrorFor(err)
	conn := c.sub.Conn()
	conn.Notify(jsonrpc.AppendError(nil, nil, e))
	c.sub.End()
	reason := e.Message
	if len(reason) > 120 {
		reason = reason[:120]
	}
	go func() {
		// The error goes out before the close.
		time.Sleep(50 * time.Millisecond)
		conn.Close(websocket.StatusPolicyViolation, reason)
	}()
}

func parseUint(v jsontext.Value) (uint64, bool) {
	n, err := strconv.ParseUint(string(v), 10, 64)
	return n, err == nil
}
