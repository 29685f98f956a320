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
	opts    *Options
	mu      sync.Mutex
	pending map[uint64]*wsWaiter
	// widest is the largest result bound of a call sent on the
	// connection: the bound of a message whose id is not known yet.
	widest int64
	// subscribing are the subscribe calls waiting for their id: the
	// reader registers the subscription before it hands the id over, so a
	// notification right behind the answer finds it.
	subscribing map[uint64]*wsSub
	subs        map[string]*wsSub // by the node's subscription id, raw
	err         error             // set once the reader stops
	done        chan struct{}
}

// wsWaiter is a call waiting for its answer, with its bounds.
type wsWaiter struct {
	ch  chan wsReply
	lim Limits
}

// wsReply is the answer to one call. hold is what the message took from
// the call's budget: the call gives it back when it returns.
type wsReply struct {
	result jsontext.Value
	err    error
	hold   holding
}

// NewWebSocket returns a node for a ws or wss URL. Nothing is dialled until
// the first call.
func NewWebSocket(rawURL string, opts *Options) *WebSocket {
	return &WebSocket{url: rawURL, opts: opts}
}

// Call is Send with the node's own bound and no budget.
func (w *WebSocket) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	return w.Send(ctx, method, params, Limits{}, dst)
}

// Send sends one request on the shared connection and waits for its
// answer, which the connection's reader bounds and charges as it arrives
// (see readMessage).
func (w *WebSocket) Send(ctx context.Context, method string, params jsontext.Value, lim Limits, dst []byte) (jsontext.Value, error) {
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
	conn.pending[id] = &wsWaiter{ch: ch, lim: lim}
	if b := lim.bound(w.opts); b > conn.widest {
		conn.widest = b
		conn.c.SetReadLimit(wsDrainFactor * bodyBound(b))
	}
	conn.mu.Unlock()

	msg := jsonrpc.AppendRequest(nil, strconv.AppendUint(nil, id, 10), method, params)
	if err := conn.c.Write(ctx, websocket.MessageText, msg); err != nil {
		conn.forget(id)
		w.drop(conn)
		return nil, classify(ctx, scrub(err, w.url))
	}
	select {
	case r := <-ch:
		defer r.hold.release()
		if r.err != nil {
			return nil, r.err
		}
		if dst == nil {
			return r.result, nil // the message is this call's own
		}
		return append(dst, r.result...), nil
	case <-ctx.Done():
		conn.forget(id)
		select {
		case r := <-ch: // sent before the call was forgotten
			r.hold.release()
		default:
		}
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
	// A message past its bound is read to its end without being kept,
	// so that the connection and the other calls on it live on; one
	// that goes on past wsDrainFactor bounds (of the widest bound of its
	// calls) closes the connection.
	c.SetReadLimit(wsDrainFactor * bodyBound(w.opts.maxResponse()))
	conn := &wsConn{c: c, opts: w.opts, pending: make(map[uint64]*wsWaiter), subscribing: map[uint64]*wsSub{},
		subs: map[string]*wsSub{}, done: make(chan struct{}), widest: w.opts.maxResponse()}
	go w.read(conn)
	go w.keepalive(conn)
	return conn, nil
}

// keepalive pings the node every PingInterval until the connection ends;
// a ping not answered within another interval drops the connection, so
// that a node that froze without closing its socket fails its calls and
// ends its subscriptions (which are then opened elsewhere) instead of
// holding them silent.
func (w *WebSocket) keepalive(conn *wsConn) {
	every := w.opts.pingInterval()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-conn.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := conn.c.Ping(ctx)
		cancel()
		if err != nil {
			select {
			case <-conn.done:
			default:
				w.drop(conn)
			}
			return
		}
	}
}

// read dispatches answers to their callers until the connection breaks.
func (w *WebSocket) read(conn *wsConn) {
	defer close(conn.done)
	for {
		_, r, err := conn.c.Reader(context.Background())
		if err == nil {
			err = conn.readMessage(r)
		}
		if err != nil {
			w.drop(conn)
			conn.fail(scrub(err, w.url))
			return
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
	for id, wt := range c.pending {
		wt.ch <- wsReply{err: unavailable(err)}
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
