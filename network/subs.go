package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
)

// This file is the subscriptions' entry: one upstream subscription per
// distinct (method, params) per network, each client with its own id, its
// own bounded queue (its connection's) and its own credits. topic.go runs
// a topic, heads.go keeps heads and logs streams true to the chain view,
// charge.go charges notifications.

// hub holds a network's shared subscriptions.
type hub struct {
	n      *Network
	subs   portico.Subscriptions
	acc    accounts
	mu     sync.Mutex
	topics map[topicKey]*topic
	next   atomic.Uint64 // ids of integer and string id families
}

func newHub(n *Network, subs portico.Subscriptions, meter Meter) *hub {
	return &hub{n: n, subs: subs, acc: newAccounts(meter, n), topics: map[topicKey]*topic{}}
}

// pay charges c's key for one notification of cost credits.
func (h *hub) pay(c *clientSub, cost int64) error { return h.acc.pay(c.acct, cost) }

// topicKey identifies what clients of a network can share.
type topicKey struct {
	method string
	params string // canonical; unique for a private subscription
}

// clientSub is one client's subscription to a topic.
type clientSub struct {
	sub   *jsonrpc.Sub
	ident apikey.Identity
	acct  *account // its key's prepaid notifications of this kind
	t     *topic
}

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
	c := &clientSub{sub: s, ident: key, acct: h.acc.join(key, rule.Notification+"."+sp.Kind)}
	t, err := h.join(ctx, rule, sp, c)
	if err != nil {
		h.acc.leave(c.acct)
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
		h.acc.leave(c.acct)
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
