package upstream

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// SubRequest is one subscription to open on a node.
type SubRequest struct {
	// Method and Params are the subscribe call ("eth_subscribe",
	// ["newHeads"]).
	Method string
	Params jsontext.Value
	// Unsubscribe is the method that ends it; Notifications the method
	// names of its notifications (a rollup subscription also gets reorg
	// notifications); IDMember the member of their params that holds the
	// subscription id.
	Unsubscribe   string
	Notifications []string
	IDMember      string
	// Avoid names a node not to use when another can hold the
	// subscription: the one it was on when it went silent.
	Avoid string
}

// Subscriber opens subscriptions on one node.
type Subscriber interface {
	// Subscribe opens a subscription. notify gets each notification's
	// method and result, in order, on one goroutine; ended is called once if the
	// subscription ends without cancel (the connection broke, the node
	// ended it). cancel ends it and unsubscribes on the node.
	Subscribe(ctx context.Context, req SubRequest, notify func(method string, result jsontext.Value), ended func(error)) (cancel func(), err error)
}

var _ Subscriber = (*WebSocket)(nil)

// wsSub is one subscription on a WebSocket connection.
type wsSub struct {
	req    SubRequest
	notify func(string, jsontext.Value)
	ended  func(error)
	id     string // the node's id, raw JSON
	once   sync.Once
}

func (s *wsSub) end(err error) {
	s.once.Do(func() { s.ended(err) })
}

// Subscribe implements Subscriber over the node's shared connection.
func (w *WebSocket) Subscribe(ctx context.Context, req SubRequest, notify func(string, jsontext.Value), ended func(error)) (func(), error) {
	conn, id, err := w.connect(ctx)
	if err != nil {
		return nil, classify(ctx, err)
	}
	s := &wsSub{req: req, notify: notify, ended: ended}
	ch := make(chan wsReply, 1)
	conn.mu.Lock()
	if conn.err != nil {
		conn.mu.Unlock()
		return nil, unavailable(conn.err)
	}
	conn.pending[id] = &wsWaiter{ch: ch}
	conn.subscribing[id] = s
	conn.mu.Unlock()
	msg := jsonrpc.AppendRequest(nil, strconv.AppendUint(nil, id, 10), req.Method, req.Params)
	if err := conn.c.Write(ctx, websocket.MessageText, msg); err != nil {
		conn.forget(id)
		w.drop(conn)
		return nil, classify(ctx, scrub(err, w.url))
	}
	var r wsReply
	select {
	case r = <-ch:
	case <-ctx.Done():
		conn.forget(id)
		conn.mu.Lock()
		delete(conn.subscribing, id)
		conn.mu.Unlock()
		return nil, classify(ctx, ctx.Err())
	}
	if r.err != nil {
		return nil, r.err
	}
	cancel := func() {
		s.once.Do(func() {}) // a cancelled subscription does not report its end
		conn.mu.Lock()
		delete(conn.subs, s.id)
		conn.mu.Unlock()
		w.mu.Lock()
		w.nextID++
		uid := w.nextID
		w.mu.Unlock()
		unsub := jsonrpc.AppendRequest(nil, strconv.AppendUint(nil, uid, 10), req.Unsubscribe, []byte("["+s.id+"]"))
		wctx, stop := context.WithTimeout(context.Background(), subWriteTimeout)
		defer stop()
		_ = conn.c.Write(wctx, websocket.MessageText, unsub) // the answer is not waited for
	}
	return cancel, nil
}

// notification hands a notification message to its subscription; other
// messages are ignored.
func (c *wsConn) notification(data []byte) {
	var n struct {
		Method string                    `json:"method"`
		Params map[string]jsontext.Value `json:"params"`
	}
	if !bytes.Contains(data, []byte(`"method"`)) || json.Unmarshal(data, &n, json.RejectUnknownMembers(false)) != nil {
		return
	}
	c.mu.Lock()
	var s *wsSub
	for _, member := range []string{"subscription", "subscription_id"} {
		if id, ok := n.Params[member]; ok {
			s = c.subs[string(id)]
			break
		}
	}
	c.mu.Unlock()
	if s == nil || !slices.Contains(s.req.Notifications, n.Method) {
		return
	}
	if res, ok := n.Params["result"]; ok {
		s.notify(n.Method, res)
	}
}

// subWriteTimeout bounds an unsubscribe write.
const subWriteTimeout = 5 * time.Second

// RPCSubscriber opens subscriptions through a go-ethereum rpc.Client's
// Subscribe: how the gateway subscribes to an embedded go-ethereum devnet
// in-process. Only methods named <namespace>_subscribe are served.
type RPCSubscriber struct {
	// Subscribe is the client's Subscribe method (rpc.Client.Subscribe),
	// taken as a function so that this package does not link the node.
	Sub func(ctx context.Context, namespace string, channel any, args ...any) (ClientSubscription, error)
}

// ClientSubscription is what rpc.Client.Subscribe returns.
type ClientSubscription interface {
	Err() <-chan error
	Unsubscribe()
}

// Subscribe implements Subscriber.
func (r *RPCSubscriber) Subscribe(ctx context.Context, req SubRequest, notify func(string, jsontext.Value), ended func(error)) (func(), error) {
	ns, ok := strings.CutSuffix(req.Method, "_subscribe")
	if !ok {
		return nil, errors.New("upstream: in-process subscriptions need a <namespace>_subscribe method")
	}
	var args []jsontext.Value
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &args); err != nil {
			return nil, err
		}
	}
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = stdjson.RawMessage(a)
	}
	// The client decodes each notification into the channel's element
	// type with encoding/json: a RawMessage keeps the bytes.
	ch := make(chan stdjson.RawMessage, 64)
	sub, err := r.Sub(ctx, ns, ch, anyArgs...)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	var once sync.Once
	go func() {
		for {
			select {
			case res := <-ch:
				notify(req.Notifications[0], jsontext.Value(res))
			case err := <-sub.Err():
				once.Do(func() { ended(unavailable(errors.Join(errors.New("subscription ended"), err))) })
				return
			case <-stop:
				return
			}
		}
	}()
	return func() {
		once.Do(func() {})
		close(stop)
		sub.Unsubscribe()
	}, nil
}

// subscriber returns how to open subscriptions on m, or nil.
func (m *member) subscriber() Subscriber {
	if m.Subs != nil {
		return m.Subs
	}
	if s, ok := m.Node.(Subscriber); ok {
		return s
	}
	return nil
}

// CanSubscribe reports whether any node of the pool can hold
// subscriptions.
func (p *Pool) CanSubscribe() bool {
	for _, m := range p.members {
		if m.subscriber() != nil {
			return true
		}
	}
	return false
}

// Subscribe opens a subscription on the best node that can hold one (see
// Pool for the order), trying the next on failure, and returns how to
// cancel it and the node's name. A subscription that ends (its node's
// connection broke) calls ended; the caller opens it again, elsewhere if
// the node is gone.
func (p *Pool) Subscribe(ctx context.Context, req SubRequest, notify func(string, jsontext.Value), ended func(error)) (cancel func(), node string, err error) {
	var last error
	order, _ := p.order(Request{Method: req.Method})
	if req.Avoid != "" {
		// The node to avoid goes last: still there when it is the only one.
		slices.SortStableFunc(order, func(a, b *member) int {
			switch {
			case a.Name == req.Avoid && b.Name != req.Avoid:
				return 1
			case b.Name == req.Avoid && a.Name != req.Avoid:
				return -1
			}
			return 0
		})
	}
	for _, m := range order {
		s := m.subscriber()
		if s == nil {
			continue
		}
		actx, acancel := context.WithTimeout(ctx, p.attempt)
		cancel, err := s.Subscribe(actx, req, notify, func(err error) {
			m.fail(p.now(), false)
			ended(err)
		})
		acancel()
		if err == nil {
			return cancel, m.Name, nil
		}
		if isAnswer(err) {
			return nil, m.Name, err // the node refused the params: so would the others
		}
		m.fail(p.now(), false)
		p.log.Warn("upstream subscribe failed", "network", p.network, "upstream", m.Name, "method", req.Method, "err", err)
		last = err
	}
	if last == nil {
		return nil, "", &portico.UpstreamError{Network: p.network, Err: errors.Join(portico.ErrUpstreamUnavailable, errors.New("no node of this network takes subscriptions: configure a ws:// URL"))}
	}
	return nil, "", &portico.UpstreamError{Network: p.network, Err: last}
}
