// Package topics is a network's subscriptions (docs/architecture.md, the
// path of one notification): one upstream subscription per distinct
// (method, params), a topic, shared by its clients, each with its own id,
// its own bounded queue (its connection's) and its own credits; the
// topic's goroutine turns upstream notifications, polled heads and the
// chain view's switches into notifications in order, so that heads and
// logs streams stay true to the served chain through reorgs. The network
// gives it its nodes and the keys' prepaid credits (Accounts).
package topics

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/upstream"
)

// This file is the subscriptions' entry; topic.go runs a topic, heads.go
// keeps heads and logs streams true to the chain view.

// Upstream is what topics need of a network's nodes; the network's
// Upstream (*upstream.Pool) is one.
type Upstream interface {
	// Do sends a call to a node (a family's hook reading a head).
	Do(ctx context.Context, req upstream.Request, dst []byte) (jsontext.Value, error)
	// HeadsFresh returns the network's tracked heads.
	HeadsFresh() (portico.Heads, bool)
	// OnHeads registers a listener of new heads.
	OnHeads(func(portico.Heads)) (stop func())
	// View is the served chain, whose switches heads and logs topics
	// follow.
	View() *chainview.View
	// Subscribe opens a subscription on a node that can hold one.
	Subscribe(ctx context.Context, req upstream.SubRequest, notify func(method string, result jsontext.Value), ended func(error)) (cancel func(), node string, err error)
	// CanSubscribe reports whether any node can hold subscriptions.
	CanSubscribe() bool
	// Observe tells head tracking of a head a node sent on its own;
	// Poke has it catch up with the nodes now.
	Observe(node string, h portico.Header)
	Poke()
	// Header reads the header of the block with hash (number when known)
	// from the nodes: a resumed subscription's walk past the view.
	Header(ctx context.Context, number uint64, hash string) (portico.Header, error)
}

// Account is a key's prepaid credits for one kind of notification, as
// Accounts give it.
type Account any

// Accounts are the prepaid notification credits of a network's keys
// (the network's charging of notifications).
type Accounts interface {
	// Join returns the account of a client subscription of key to item
	// (its notification method and kind), made on first use.
	Join(key apikey.Identity, item string) Account
	// Leave ends a client subscription's use of its account.
	Leave(Account)
	// Pay charges the account's key for one notification of cost
	// credits.
	Pay(a Account, cost int64) error
}

// Config is what a Hub needs.
type Config struct {
	// Network names the network in logs and metrics.
	Network string
	// Upstream holds the upstream subscriptions.
	Upstream Upstream
	// Subs are the family's subscription rules.
	Subs portico.Subscriptions
	// Accounts charge the keys for their notifications.
	Accounts Accounts
	// Logger receives the topics' events; nil discards them.
	Logger *slog.Logger
	// Metrics records subscriptions and notifications; nil records
	// nothing.
	Metrics *metrics.Metrics
}

// network is what the topics of a network know of it.
type network struct {
	name    string
	up      Upstream
	log     *slog.Logger
	metrics *metrics.Metrics
}

// Hub holds a network's shared subscriptions.
type Hub struct {
	n      *network
	subs   portico.Subscriptions
	acc    Accounts
	mu     sync.Mutex
	topics map[topicKey]*topic
	next   atomic.Uint64 // ids of integer and string id families
	// logMem keeps the logs sent, for clients that resume from a block a
	// reorg dropped (resume.go).
	logMem *logMemory
}

// New builds a network's hub; it starts nothing.
func New(cfg Config) *Hub {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hub{n: &network{name: cfg.Network, up: cfg.Upstream, log: log, metrics: cfg.Metrics},
		subs: cfg.Subs, acc: cfg.Accounts, topics: map[topicKey]*topic{}, logMem: &logMemory{view: cfg.Upstream.View()}}
}

// pay charges c's key for one notification of cost credits.
func (h *Hub) pay(c *clientSub, cost int64) error { return h.acc.Pay(c.acct, cost) }

// topicKey identifies what clients of a network can share.
type topicKey struct {
	method string
	params string // canonical; unique for a private subscription
}

// clientSub is one client's subscription to a topic.
type clientSub struct {
	sub   *jsonrpc.Sub
	ident apikey.Identity
	acct  Account // its key's prepaid notifications of this kind
	t     *topic
	// resume is set for a resumed subscription until its backfill is
	// sent (resume.go).
	resume *resumer
}

// Subscribe serves a subscribe call that came over a WebSocket (ctx
// carries its connection): a client id on that connection, joined to the
// topic of its params, whose notifications key pays for. onEnd runs when
// the subscription ends, however it ends.
func (h *Hub) Subscribe(ctx context.Context, rule *portico.Subscription, sp portico.SubParams, key apikey.Identity, onEnd func()) (jsontext.Value, error) {
	if jsonrpc.ConnFrom(ctx) == nil {
		onEnd()
		return nil, jsonrpc.ErrNoConnection
	}
	n := h.n
	id := h.newID(h.subs.IDs)
	s, err := jsonrpc.Subscribe(ctx, id)
	if err != nil {
		onEnd()
		return nil, err
	}
	c := &clientSub{sub: s, ident: key, acct: h.acc.Join(key, rule.Notification+"."+sp.Kind)}
	if sp.Resume != nil {
		if err := h.resumable(sp); err != nil {
			h.acc.Leave(c.acct)
			s.End()
			onEnd()
			return nil, err
		}
		c.resume = &resumer{}
	}
	t, err := h.join(ctx, rule, sp, c)
	if err == nil && c.resume != nil {
		// Joined first, so that what the plan does not hold comes live.
		if !sp.Heads {
			h.settle(ctx)
		}
		if c.resume.plan, err = h.plan(ctx, sp.Resume); err != nil {
			t.leave(c)
		}
	}
	if err != nil {
		h.acc.Leave(c.acct)
		s.End()
		onEnd()
		return nil, err
	}
	c.t = t
	if c.resume != nil {
		t.startResume(ctx, c)
	}
	// What the closure keeps for the subscription's life is named here,
	// so that it holds these strings and not the whole call.
	network, kind := n.name, sp.Kind
	n.metrics.Subscription(network, kind, 1)
	s.OnEnd(func() {
		t.leave(c)
		h.acc.Leave(c.acct)
		onEnd()
		n.metrics.Subscription(network, kind, -1)
	})
	return id, nil
}

// Unsubscribe serves an unsubscribe call: it ends the client's
// subscription with the id in the params, on the call's connection.
func (h *Hub) Unsubscribe(ctx context.Context, raw jsontext.Value) (jsontext.Value, error) {
	if jsonrpc.ConnFrom(ctx) == nil {
		return nil, jsonrpc.ErrNoConnection
	}
	if raw == nil {
		raw = jsontext.Value("[]")
	}
	id, err := subscriptionIDParam(raw)
	if err != nil {
		return nil, err
	}
	for _, form := range idForms(id) {
		if jsonrpc.Unsubscribe(ctx, form) {
			return jsontext.Value("true"), nil
		}
	}
	if e := h.subs.UnknownID; e != nil {
		return nil, e
	}
	return jsontext.Value("false"), nil
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
func (h *Hub) newID(form portico.SubscriptionIDs) jsontext.Value {
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
func (h *Hub) join(ctx context.Context, rule *portico.Subscription, sp portico.SubParams, c *clientSub) (*topic, error) {
	key := topicKey{method: rule.Method, params: canonicalJSON(sp.Send)}
	if sp.Private {
		key.params += "\x00" + strconv.FormatUint(h.next.Add(1), 10)
	}
	for {
		h.mu.Lock()
		t := h.topics[key]
		fresh := t == nil
		if fresh {
			t = newTopic(h, key, rule, sp)
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
			go t.run()
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
