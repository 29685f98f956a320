package jsonrpc

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico"
)

// ConnLimits bound one WebSocket connection. Zero fields take the defaults
// of DefaultConnLimits.
type ConnLimits struct {
	// MaxMessageBytes bounds a message from the client; a larger one is
	// answered with -32051 and the connection closes with status 1009.
	MaxMessageBytes int64
	// MaxInFlight bounds the messages being answered at once; beyond it
	// the connection stops reading, which pushes back on the client.
	MaxInFlight int
	// MaxQueue and MaxQueueBytes bound the notifications waiting to be
	// written to a client that does not read them; a notification beyond
	// either closes the connection with status 1008.
	MaxQueue      int
	MaxQueueBytes int64
	// IdleTimeout closes a connection on which no message went either way
	// for that long: a connection that only receives notifications is not
	// idle.
	IdleTimeout time.Duration
	// PingInterval is how often the client is pinged; a ping not answered
	// within another interval closes the connection, so that dead peers do
	// not linger.
	PingInterval time.Duration
	// WriteTimeout bounds the write of one message.
	WriteTimeout time.Duration
	// SetWriteDeadline, when set, is the socket's own (net.Conn's): the
	// WriteTimeout of each message is then a deadline on the socket rather
	// than a context of its own, which the WebSocket library would watch
	// with a callback per message (14% of the CPU of a fan-out of
	// notifications, docs/benchmarks.md, issue 17).
	SetWriteDeadline func(time.Time) error
	// MaxSubscriptions bounds the subscriptions one connection holds.
	MaxSubscriptions int
}

// DefaultConnLimits are 5 MiB messages, 64 messages in flight, 1024
// queued notifications or 16 MiB, 10 minutes idle, a ping every 30 s, 10 s
// to write a message and 100 subscriptions.
func DefaultConnLimits() ConnLimits {
	return ConnLimits{MaxMessageBytes: 5 << 20, MaxInFlight: 64, MaxQueue: 1024, MaxQueueBytes: 16 << 20,
		IdleTimeout: 10 * time.Minute, PingInterval: 30 * time.Second, WriteTimeout: 10 * time.Second,
		MaxSubscriptions: 100}
}

func (l ConnLimits) withDefaults() ConnLimits {
	d := DefaultConnLimits()
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = d.MaxMessageBytes
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = d.MaxInFlight
	}
	if l.MaxQueue <= 0 {
		l.MaxQueue = d.MaxQueue
	}
	if l.MaxQueueBytes <= 0 {
		l.MaxQueueBytes = d.MaxQueueBytes
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.PingInterval <= 0 {
		l.PingInterval = d.PingInterval
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.MaxSubscriptions <= 0 {
		l.MaxSubscriptions = d.MaxSubscriptions
	}
	return l
}

// Close codes and reasons a Conn ends with, besides the client's own.
const (
	// ReasonSlowReader ends a connection whose client does not read its
	// notifications.
	ReasonSlowReader = "notification queue full: the client does not read fast enough"
	// ReasonIdle ends a connection with no message either way for the
	// idle timeout.
	ReasonIdle = "idle timeout"
	// ReasonNoPong ends a connection whose client did not answer a ping.
	ReasonNoPong = "ping not answered"
)

// Conn is one WebSocket connection serving JSON-RPC. Every message to the
// client (answers and notifications) goes through one ordered queue that
// a single writer drains, so a subscription's first notification can never
// overtake the answer that gave its id (see AfterAnswer).
type Conn struct {
	ws     *websocket.Conn
	limits ConnLimits

	mu         sync.Mutex
	queue      [][]byte
	queueBytes int64
	closed     bool
	onClose    []func()

	// writing says a writer goroutine is draining the queue; there is
	// one only while there is something to write, so an idle connection
	// holds no goroutine but its reader.
	writing bool
	serving bool            // Serve has started: writers may start
	ctx     context.Context // Serve's, for writes and pings
	bare    context.Context // ctx that never ends, for reads and deadline-bound writes
	writers sync.WaitGroup  // the writer, while one runs
	tick    *time.Timer     // the idle check and pings, without a goroutine

	closing    sync.WaitGroup // the close handshake Close started
	subs       subs
	done       chan struct{} // closed when the connection ends
	lastActive atomic.Int64  // unix nanoseconds of the last message either way
	lastPing   atomic.Int64  // unix nanoseconds of the last ping sent
	pinging    atomic.Bool
}

type connKey struct{}

// ConnFrom returns the connection a call arrived on, or nil for calls that
// did not come over a WebSocket.
func ConnFrom(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

// answerHooks are the functions to run once the answer to one message is
// queued.
type answerHooks struct {
	mu    sync.Mutex
	funcs []func()
	ran   bool
}

type hooksKey struct{}

// AfterAnswer arranges for f to run right after the answer to the current
// message has been queued on its connection, and reports whether it will.
// A subscription starts sending with it, so that its id reaches the client
// before its first notification. Outside a WebSocket message it returns
// false and f never runs.
func AfterAnswer(ctx context.Context, f func()) bool {
	h, _ := ctx.Value(hooksKey{}).(*answerHooks)
	if h == nil {
		return false
	}
	h.mu.Lock()
	if !h.ran {
		h.funcs = append(h.funcs, f)
		h.mu.Unlock()
		return true
	}
	h.mu.Unlock()
	f()
	return true
}

func (h *answerHooks) run() {
	h.mu.Lock()
	funcs := h.funcs
	h.funcs, h.ran = nil, true
	h.mu.Unlock()
	for _, f := range funcs {
		f()
	}
}

// NewConn wraps an accepted WebSocket connection; Serve serves it.
func NewConn(ws *websocket.Conn, limits ConnLimits) *Conn {
	c := &Conn{ws: ws, limits: limits.withDefaults(), done: make(chan struct{})}
	c.touch()
	return c
}

// Serve serves JSON-RPC messages until the client leaves, idles, stops
// answering pings, does not read its notifications, or breaks a limit, or
// until ctx ends. answer is called for each message (up to MaxInFlight at
// once) with a context that carries the connection (ConnFrom), and
// returns the bytes to send back (nil for none). When Serve returns, every
// answer has returned and the OnClose functions have run.
func (c *Conn) Serve(ctx context.Context, answer func(ctx context.Context, body []byte) []byte) {
	ws := c.ws
	// Reads wait on the socket alone: given a context that can end, the
	// library registers a callback on it for every read, about half a
	// kilobyte that each idle connection would hold (docs/benchmarks.md,
	// issue 17). Instead the end of ctx closes the socket, which ends the
	// read, and this registers nothing when ctx cannot end.
	stop := context.AfterFunc(ctx, func() { _ = ws.CloseNow() })
	defer stop()
	ctx, cancel := context.WithCancel(context.WithValue(ctx, connKey{}, c))
	defer cancel()
	c.mu.Lock()
	c.ctx, c.bare, c.serving = ctx, context.WithoutCancel(ctx), true
	c.startWriter() // anything queued before Serve
	c.mu.Unlock()
	c.lastPing.Store(time.Now().UnixNano())
	c.tick = time.AfterFunc(time.Hour, c.onTick)
	c.tick.Reset(c.tickEvery()) // after c.tick is set: onTick uses it

	// The library's own limit sits one byte above ours, so that an
	// oversized message is seen here and answered with our error.
	msgMax := c.limits.MaxMessageBytes
	ws.SetReadLimit(msgMax + 1)
	sem := make(chan struct{}, c.limits.MaxInFlight)
	for {
		_, rd, err := ws.Reader(c.bare)
		if err != nil {
			break
		}
		body, err := io.ReadAll(io.LimitReader(rd, msgMax+1))
		if err != nil {
			break
		}
		c.touch()
		if int64(len(body)) > msgMax {
			e, _, _ := ErrorFor(&portico.LimitError{Limit: portico.LimitWSMessage, Max: msgMax})
			wctx, wcancel := context.WithTimeout(ctx, c.limits.WriteTimeout)
			_ = ws.Write(wctx, websocket.MessageText, AppendError(nil, nil, e))
			wcancel()
			c.Close(websocket.StatusMessageTooBig, e.Message)
			break
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			hooks := &answerHooks{}
			out := answer(context.WithValue(ctx, hooksKey{}, hooks), body)
			if out != nil {
				c.send(out)
			}
			hooks.run()
		}()
	}
	cancel()
	// Wait for the answers in flight, so nothing outlives the connection.
	for range cap(sem) {
		sem <- struct{}{}
	}
	c.end(nil)
	c.tick.Stop()
	c.writers.Wait()
	c.closing.Wait() // let the client read our close code and reason
	_ = ws.CloseNow()
}

// touch records activity.
func (c *Conn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

// send queues an answer. Answers are never refused for the queue's size:
// they are bounded by MaxInFlight.
func (c *Conn) send(msg []byte) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, msg)
	c.queueBytes += int64(len(msg))
	c.startWriter()
	c.mu.Unlock()
}

// Notify queues a notification without blocking. It reports false when
// the connection has ended, or when the client has let MaxQueue
// notifications (or MaxQueueBytes) pile up: then the connection closes
// with status 1008 and ReasonSlowReader. msg must not be changed after.
func (c *Conn) Notify(msg []byte) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if len(c.queue) >= c.limits.MaxQueue || c.queueBytes+int64(len(msg)) > c.limits.MaxQueueBytes {
		c.mu.Unlock()
		c.Close(websocket.StatusPolicyViolation, ReasonSlowReader)
		return false
	}
	c.queue = append(c.queue, msg)
	c.queueBytes += int64(len(msg))
	c.startWriter()
	c.mu.Unlock()
	return true
}

// Queued returns how many messages wait to be written.
func (c *Conn) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// startWriter starts a writer when something is queued and none runs.
// c.mu is held.
func (c *Conn) startWriter() {
	if c.writing || !c.serving || c.closed || len(c.queue) == 0 {
		return
	}
	c.writing = true
	c.writers.Add(1) // under mu, before closed: Serve's Wait comes after
	go c.drain()
}

// OnClose registers f to run once the connection has ended (right away
// when it already has). Subscriptions end themselves with it.
func (c *Conn) OnClose(f func()) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		f()
		return
	}
	c.onClose = append(c.onClose, f)
	c.mu.Unlock()
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close ends the connection with a close code and reason, without waiting
// for the close handshake. Calls after the first do nothing.
func (c *Conn) Close(code websocket.StatusCode, reason string) {
	c.end(func() { _ = c.ws.Close(code, reason) }) // the peer may be gone
}

// end marks the connection ended, starts closeWS (when not nil) and runs
// the OnClose functions, once; it reports whether this call ended it.
func (c *Conn) end(closeWS func()) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	if closeWS != nil {
		c.closing.Add(1) // under mu: ServeConn's end and Wait come after
	}
	funcs := c.onClose
	c.onClose, c.queue, c.queueBytes = nil, nil, 0
	c.mu.Unlock()
	close(c.done)
	if closeWS != nil {
		go func() {
			defer c.closing.Done()
			closeWS()
		}()
	}
	for _, f := range funcs {
		f()
	}
	return true
}

// tickEvery is how often the idle check runs: often enough for a short
// idle timeout, and for pings every PingInterval.
func (c *Conn) tickEvery() time.Duration {
	return min(c.limits.PingInterval, c.limits.IdleTimeout/4)
}

// onTick closes an idle connection and pings the client every
// PingInterval; it runs on a timer, not on a goroutine of its own.
func (c *Conn) onTick() {
	select {
	case <-c.done:
		return
	default:
	}
	now := time.Now()
	if now.Sub(time.Unix(0, c.lastActive.Load())) > c.limits.IdleTimeout {
		c.Close(websocket.StatusPolicyViolation, ReasonIdle+": no message for "+c.limits.IdleTimeout.String())
		return
	}
	if now.Sub(time.Unix(0, c.lastPing.Load())) >= c.limits.PingInterval && c.pinging.CompareAndSwap(false, true) {
		c.lastPing.Store(now.UnixNano())
		go func() {
			defer c.pinging.Store(false)
			pctx, cancel := context.WithTimeout(c.ctx, c.limits.PingInterval)
			defer cancel()
			if err := c.ws.Ping(pctx); err != nil && errors.Is(err, context.DeadlineExceeded) {
				c.Close(websocket.StatusPolicyViolation, ReasonNoPong)
			}
		}()
	}
	c.tick.Reset(c.tickEvery())
}

// write writes one message within WriteTimeout.
func (c *Conn) write(msg []byte) error {
	if c.limits.SetWriteDeadline == nil {
		wctx, cancel := context.WithTimeout(c.ctx, c.limits.WriteTimeout)
		defer cancel()
		return c.ws.Write(wctx, websocket.MessageText, msg)
	}
	if err := c.limits.SetWriteDeadline(time.Now().Add(c.limits.WriteTimeout)); err != nil {
		return err
	}
	// A context that is never done: the library skips its watch. The
	// deadline is cleared after, so that a later close frame is not
	// refused by a deadline long past.
	err := c.ws.Write(c.bare, websocket.MessageText, msg)
	return errors.Join(err, c.limits.SetWriteDeadline(time.Time{}))
}

// drain writes queued messages in order until the queue is empty, then
// ends; startWriter starts it again for the next message.
func (c *Conn) drain() {
	defer c.writers.Done()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 || c.closed || c.ctx.Err() != nil {
			// Serve is ending: what is left is not sent.
			c.writing = false
			c.mu.Unlock()
			return
		}
		msg := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.queueBytes -= int64(len(msg))
		if len(c.queue) == 0 {
			c.queue = nil // let a burst's backing array go
		}
		c.mu.Unlock()
		err := c.write(msg)
		if err != nil {
			if c.ctx.Err() == nil {
				c.Close(websocket.StatusPolicyViolation, "write failed or timed out after "+strconv.Itoa(int(c.limits.WriteTimeout/time.Millisecond))+"ms")
			}
			c.mu.Lock()
			c.writing = false
			c.mu.Unlock()
			return
		}
		c.touch()
	}
}
