package upstream

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// WebSocket is a Node reached by JSON-RPC over one WebSocket connection.
// Calls are multiplexed on the connection by id. The connection is dialled
// on first use and again after it breaks; calls in flight when it breaks
// fail, and the pool may send them elsewhere.
type WebSocket struct {
	url  string
	opts *Options

	mu      sync.Mutex
	conn    *wsConn
	nextID  uint64
	closed  bool
	dialing chan struct{} // closed when the dial in progress ends
}

var _ Node = (*WebSocket)(nil)

// wsConn is one live connection, the calls waiting on it and the
// subscriptions it carries.
type wsConn struct {
	c       *websocket.Conn
	mu      sync.Mutex
	pending map[uint64]chan wsReply
	// subscribing are the subscribe calls waiting for their id: the
	// reader registers the subscription before it hands the id over, so a
	// notification right behind the answer finds it.
	subscribing map[uint64]*wsSub
	subs        map[string]*wsSub // by the node's subscription id, raw
	err         error             // set once the reader stops
	done        chan struct{}
}

type wsReply struct {
	result jsontext.Value
	err    error
}

// NewWebSocket returns a node for a ws or wss URL. Nothing is dialled until
// the first call.
func NewWebSocket(rawURL string, opts *Options) *WebSocket {
	return &WebSocket{url: rawURL, opts: opts}
}

// Call sends one request on the shared connection and waits for its answer.
func (w *WebSocket) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	conn, id, err := w.connect(ctx)
	if err != nil {
		return nil, classify(ctx, err)
	}
	ch := make(chan wsReply, 1)
	conn.mu.Lock()
	if conn.err != nil {
		conn.mu.Unlock()
		return nil, unavailable(conn.err)
	}
	conn.pending[id] = ch
	conn.mu.Unlock()

	msg := jsonrpc.AppendRequest(nil, strconv.AppendUint(nil, id, 10), method, params)
	if err := conn.c.Write(ctx, websocket.MessageText, msg); err != nil {
		conn.forget(id)
		w.drop(conn)
		return nil, classify(ctx, scrub(err, w.url))
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		if dst == nil {
			return r.result, nil // the message is this call's own
		}
		return append(dst, r.result...), nil
	case <-ctx.Done():
		conn.forget(id)
		return nil, classify(ctx, ctx.Err())
	}
}

// connect returns the live connection, dialling one if needed, and a fresh
// request id.
func (w *WebSocket) connect(ctx context.Context) (*wsConn, uint64, error) {
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return nil, 0, errors.New("node closed")
		}
		if w.conn != nil {
			w.nextID++
			c, id := w.conn, w.nextID
			w.mu.Unlock()
			return c, id, nil
		}
		if w.dialing != nil {
			wait := w.dialing
			w.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
		w.dialing = make(chan struct{})
		w.mu.Unlock()

		c, err := w.dial(ctx)
		w.mu.Lock()
		close(w.dialing)
		w.dialing = nil
		if err != nil {
			w.mu.Unlock()
			return nil, 0, err
		}
		if w.closed {
			w.mu.Unlock()
			c.c.CloseNow()
			return nil, 0, errors.New("node closed")
		}
		w.conn = c
		w.mu.Unlock()
	}
}

func (w *WebSocket) dial(ctx context.Context) (*wsConn, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(dctx, w.url, nil)
	if err != nil {
		return nil, scrub(err, w.url)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	c.SetReadLimit(w.opts.maxResponse())
	conn := &wsConn{c: c, pending: make(map[uint64]chan wsReply), subscribing: map[uint64]*wsSub{},
		subs: map[string]*wsSub{}, done: make(chan struct{})}
	go w.read(conn)
	return conn, nil
}

// read dispatches answers to their callers until the connection breaks.
func (w *WebSocket) read(conn *wsConn) {
	defer close(conn.done)
	for {
		_, data, err := conn.c.Read(context.Background())
		if err != nil {
			w.drop(conn)
			conn.fail(scrub(err, w.url))
			return
		}
		r, err := jsonrpc.DecodeResponse(data)
		if err != nil {
			conn.notification(data) // or garbage, which it ignores
			continue
		}
		id, err := strconv.ParseUint(string(r.ID), 10, 64)
		if err != nil {
			continue
		}
		conn.mu.Lock()
		ch, ok := conn.pending[id]
		delete(conn.pending, id)
		if s := conn.subscribing[id]; s != nil {
			delete(conn.subscribing, id)
			if r.Error == nil {
				s.id = string(r.Result)
				conn.subs[s.id] = s
			}
		}
		conn.mu.Unlock()
		if !ok {
			continue
		}
		if r.Error != nil {
			ch <- wsReply{err: r.Error}
		} else {
			ch <- wsReply{result: r.Result}
		}
	}
}

func (c *wsConn) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// fail answers every waiting call with err and ends every subscription.
func (c *wsConn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	for id, ch := range c.pending {
		ch <- wsReply{err: unavailable(err)}
		delete(c.pending, id)
	}
	subs := c.subs
	c.subs = map[string]*wsSub{}
	c.mu.Unlock()
	for _, s := range subs {
		s.end(unavailable(err))
	}
}

// drop forgets a broken connection so the next call dials a new one.
func (w *WebSocket) drop(conn *wsConn) {
	w.mu.Lock()
	if w.conn == conn {
		w.conn = nil
	}
	w.mu.Unlock()
	conn.c.CloseNow()
}

// Close closes the connection and waits for its reader to stop.
func (w *WebSocket) Close() error {
	w.mu.Lock()
	w.closed = true
	conn := w.conn
	w.conn = nil
	w.mu.Unlock()
	if conn != nil {
		conn.c.Close(websocket.StatusNormalClosure, "")
		<-conn.done
	}
	return nil
}
