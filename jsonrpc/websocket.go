package jsonrpc

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/membudget"
)

// ConnLimits bound one WebSocket connection. Zero fields take the defaults
// of DefaultConnLimits.
type ConnLimits struct {
	// MaxMessageBytes bounds a message from the client; a larger one is
	// answered with -32051 and the connection closes with status 1009.
	MaxMessageBytes int64
	// MaxInFlight bounds the messages being answered or waiting to be
	// written at once: a message's slot is given back when its answer has
	// been written, not when it is queued. Beyond it the connection stops
	// reading, which pushes back on the client.
	MaxInFlight int
	// PauseQueueBytes stops reading the client's messages while this many
	// bytes of answers and notifications wait to be written to it: a
	// client that sends calls and does not read the answers is slowed to
	// the pace at which it reads.
	PauseQueueBytes int64
	// Memory, when set, is the connection's memory budget (its parents are
	// the key's and the process's): every message queued for the client
	// and every message read from it is counted against it while held. A
	// notification it refuses cuts off a client that has a backlog
	// (ReasonSlowReader); a message from the client it refuses is answered
	// with -32057 and the connection closes with 1013 (try again later).
	Memory *membudget.Budget
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
	// WriteTimeout bounds the write of one message (or of the messages
	// written together): a client that reads nothing for it is cut off
	// (1008, ReasonWriteTimeout), and the write goes on under
	// CloseTimeout, so that the close frame can follow it.
	WriteTimeout time.Duration
	// CloseTimeout is how long the close frame of a client cut off (by
	// Close) may wait behind the message being written to it, counted
	// from the cut-off: a client that reads again within it gets the rest
	// of the message and then the close frame with its reason.
	CloseTimeout time.Duration
	// MaxSubscriptions bounds the subscriptions one connection holds.
	MaxSubscriptions int
}

// DefaultConnLimits are the connection limits of portico.DefaultLimits
// (ConnLimitsOf: 5 MiB messages, 1024 queued notifications, 10 minutes
// idle, 100 subscriptions) and the connection's own: 64 messages in
// flight, reading paused while 4 MiB wait to be written, 16 MiB of
// queued notifications, a ping every 30 s, 10 s to write a message, 30 s
// for a close frame to get through after a cut-off (as long as a ping may
// wait for its answer).
func DefaultConnLimits() ConnLimits {
	l := ConnLimitsOf(portico.DefaultLimits())
	l.MaxInFlight, l.PauseQueueBytes, l.MaxQueueBytes = 64, 4<<20, 16<<20
	l.PingInterval, l.WriteTimeout, l.CloseTimeout = 30*time.Second, 10*time.Second, 30*time.Second
	return l
}

// ConnLimitsOf are the bounds of l (the one limits model, which the config
// file decodes into) that hold each WebSocket connection: its messages'
// size, queued notifications, idle time and subscriptions. The others
// (Memory and the connection's own) are left for the caller.
func ConnLimitsOf(l portico.Limits) ConnLimits {
	return ConnLimits{MaxMessageBytes: l.MaxWSMessageBytes, MaxQueue: l.MaxNotificationQueue, IdleTimeout: l.WSIdleTimeout,
		MaxSubscriptions: l.MaxSubscriptionsPerConnection}
}

func (l ConnLimits) withDefaults() ConnLimits {
	d := DefaultConnLimits()
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = d.MaxMessageBytes
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = d.MaxInFlight
	}
	if l.PauseQueueBytes <= 0 {
		l.PauseQueueBytes = d.PauseQueueBytes
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
	if l.CloseTimeout <= 0 {
		l.CloseTimeout = d.CloseTimeout
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
	// ReasonBusy ends a connection whose message did not fit the memory
	// budget (status 1013, try again later).
	ReasonBusy = "server busy: memory budget reached, try again later"
)

// slowFloor is the backlog below which a connection is not cut off when a
// memory budget above it refuses one of its notifications: it reads, and
// the refusal is another client's doing (that client is cut off when its
// own next notification comes). The notification is counted anyway.
const slowFloor = 64 << 10

// closeFrame is a close code and reason.
type closeFrame struct {
	code   websocket.StatusCode
	reason string
}

// queued is one message waiting to be written.
type queued struct {
	msg []byte
	// id and tail, when id is set, make msg the shared head of a
	// notification sent to many clients (NotifySpliced): the message is
	// msg + id + tail, put together only when it is written.
	id, tail []byte
	// answer says the message is the answer to a client's message: its
	// in-flight slot is given back once it is written (or dropped).
	answer bool
	// rest says msg is the rest of a frame that a write without waiting
	// left (Conn.direct): it is written as it is, before anything else.
	rest bool
}

// size is the bytes the message holds, as its budgets count them.
func (q *queued) size() int64 { return int64(len(q.msg) + len(q.id) + len(q.tail)) }

// Conn is one WebSocket connection serving JSON-RPC. Every message to the
// client (answers and notifications) goes out in the order it was sent:
// written at once by its sender when nothing waits and the socket has
// room (direct), else through one ordered queue that a single writer
// drains, so a subscription's first notification can never overtake the
// answer that gave its id (see AfterAnswer).
type Conn struct {
	ws     *websocket.Conn
	sock   *socket // what ws reads from and the Conn writes to
	limits ConnLimits

	mu         sync.Mutex
	queue      []queued
	queueBytes int64
	// locked says the first queued message is the rest of a frame partly
	// written, for which the socket stays locked until it is written.
	locked  bool
	closed  bool
	onClose []func()
	// closeLater is the close handshake to start once the write in
	// progress is done: a close frame cannot overtake it, and started
	// beside it the frame would wait behind a write to a client that does
	// not read, and be lost. closeBy is how long that write may go on
	// for it (the socket asks, see stalled): CloseTimeout after the
	// cut-off; zero when the server went away (GoAway).
	closeLater func()
	closeBy    time.Time
	finish     *closeFrame   // close once what is queued is written
	slots      chan struct{} // a message's in-flight slot, until its answer is written
	room       chan struct{} // the writer made room below PauseQueueBytes
	onPause    func()        // tests: called when reading pauses (queue at PauseQueueBytes, or every in-flight slot taken)

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

// newConn wraps a WebSocket connection Accept accepted over sock; Serve
// serves it.
func newConn(ws *websocket.Conn, sock *socket, limits ConnLimits) *Conn {
	limits = limits.withDefaults()
	c := &Conn{ws: ws, sock: sock, limits: limits, done: make(chan struct{}),
		slots: make(chan struct{}, limits.MaxInFlight), room: make(chan struct{}, 1)}
	c.touch()
	sock.conn.Store(c)
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
	for {
		if !c.waitRoom() {
			break
		}
		_, rd, err := ws.Reader(c.bare)
		if err != nil {
			break
		}
		body, held, err := c.readMessage(rd, msgMax+1)
		if err != nil {
			c.refuseMessage(err)
			break
		}
		c.touch()
		if int64(len(body)) > msgMax {
			c.limits.Memory.Give(held)
			c.refuseMessage(&portico.LimitError{Limit: portico.LimitWSMessage, Max: msgMax})
			break
		}
		select {
		case c.slots <- struct{}{}:
		default:
			// Every in-flight slot is taken (their answers wait for a
			// client that does not read): reading stops until one is
			// written, as it does at PauseQueueBytes.
			if c.onPause != nil {
				c.onPause()
			}
			c.slots <- struct{}{}
		}
		go func() {
			hooks := &answerHooks{}
			out := answer(context.WithValue(ctx, hooksKey{}, hooks), body)
			c.limits.Memory.Give(held)
			if out == nil {
				<-c.slots
			} else {
				c.send(out) // gives the slot back once written
			}
			hooks.run()
		}()
	}
	cancel()
	// Wait for the answers in flight and those not yet written (a writer
	// that sees ctx end drops them), so nothing outlives the connection.
	c.mu.Lock()
	c.startWriter()
	c.mu.Unlock()
	for range cap(c.slots) {
		c.slots <- struct{}{}
	}
	c.end(nil, time.Time{})
	c.tick.Stop()
	c.writers.Wait()
	c.closing.Wait() // let the client read our close code and reason
	_ = ws.CloseNow()
}

// waitRoom waits while PauseQueueBytes of messages wait to be written;
// false when the connection ended meanwhile.
func (c *Conn) waitRoom() bool {
	for {
		c.mu.Lock()
		full := c.queueBytes >= c.limits.PauseQueueBytes && !c.closed
		c.mu.Unlock()
		if !full {
			return true
		}
		if c.onPause != nil {
			c.onPause()
		}
		select {
		case <-c.room:
		case <-c.done:
			return false
		case <-c.ctx.Done():
			return false
		}
	}
}

// readMessage reads one message of at most max bytes, counting it against
// the connection's memory budget as it arrives; held is what it took.
func (c *Conn) readMessage(rd io.Reader, max int64) (body []byte, held int64, err error) {
	if c.limits.Memory == nil {
		body, err = io.ReadAll(io.LimitReader(rd, max))
		return body, 0, err
	}
	br := &budgetReader{r: io.LimitReader(rd, max), b: c.limits.Memory}
	body, err = io.ReadAll(br)
	if err != nil {
		c.limits.Memory.Give(br.held)
		return nil, 0, err
	}
	return body, br.held, nil
}

// budgetReader takes what it reads from a budget.
type budgetReader struct {
	r    io.Reader
	b    *membudget.Budget
	held int64
}

func (r *budgetReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		if terr := r.b.TakeErr(int64(n)); terr != nil {
			return n, terr
		}
		r.held += int64(n)
	}
	return n, err
}

// refuseMessage answers a message the connection will not serve (too
// large, or over the memory budget) with its error and closes with the
// matching status; a read error that is neither just ends the loop.
func (c *Conn) refuseMessage(err error) {
	var limit *portico.LimitError
	if !errors.As(err, &limit) {
		return
	}
	e, _, _ := ErrorFor(err)
	// Written here, not queued: the connection ends with this message.
	bufs, _ := frames(nil, nil, []queued{{msg: AppendError(nil, nil, e)}})
	_ = c.sock.writeFrames(&bufs, c.limits.WriteTimeout, false)
	if limit.Limit == portico.LimitMemory {
		c.Close(websocket.StatusTryAgainLater, ReasonBusy)
		return
	}
	c.Close(websocket.StatusMessageTooBig, e.Message)
}

// Memory returns the connection's memory budget, or nil.
func (c *Conn) Memory() *membudget.Budget { return c.limits.Memory }

// touch records activity.
func (c *Conn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

// send queues an answer; its in-flight slot is given back once it is
// written or dropped. Answers are never refused for the queue's size:
// they are bounded by MaxInFlight and by the reads paused at
// PauseQueueBytes. They are counted against the memory budget even past
// it, since they exist already.
func (c *Conn) send(msg []byte) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.slots
		return
	}
	q := queued{msg: msg, answer: true}
	if c.direct(&q) {
		c.mu.Unlock()
		c.touch()
		<-c.slots
		return
	}
	c.limits.Memory.Force(int64(len(msg)))
	c.queue = append(c.queue, q)
	c.queueBytes += int64(len(msg))
	c.startWriter()
	c.mu.Unlock()
}

// Notify queues a notification without blocking. It reports false when
// the connection has ended, or when the client has let MaxQueue
// notifications (or MaxQueueBytes) pile up, or has a backlog when a
// memory budget refuses the notification: then the connection closes
// with status 1008 and ReasonSlowReader, once the write in progress is
// done. msg must not be changed after.
func (c *Conn) Notify(msg []byte) bool { return c.notify(queued{msg: msg}) }

// NotifySpliced queues the notification head + id + tail as Notify does,
// without putting it together: head and tail are shared by every client
// of a notification (one encoding, only the subscription id differs) and
// are joined with the client's id when the message is written. None of
// them may be changed after.
func (c *Conn) NotifySpliced(head, id, tail []byte) bool {
	return c.notify(queued{msg: head, id: id, tail: tail})
}

func (c *Conn) notify(q queued) bool {
	n := q.size()
	c.mu.Lock()
	if c.closed || c.finish != nil {
		c.mu.Unlock()
		return false
	}
	if c.direct(&q) {
		c.mu.Unlock()
		c.touch()
		return true
	}
	slow := len(c.queue) >= c.limits.MaxQueue || c.queueBytes+n > c.limits.MaxQueueBytes
	if !slow && !c.limits.Memory.Take(n) {
		if slow = c.queueBytes > slowFloor; !slow {
			c.limits.Memory.Force(n)
		}
	}
	if slow {
		c.mu.Unlock()
		c.Close(websocket.StatusPolicyViolation, ReasonSlowReader)
		return false
	}
	c.queue = append(c.queue, q)
	c.queueBytes += n
	c.startWriter()
	c.mu.Unlock()
	return true
}

// dropQueue lets go of every message not yet written, giving back their
// bytes and the slots of answers; the rest of a frame partly written
// stays for the writer, which writes it before it ends. c.mu is held.
func (c *Conn) dropQueue() {
	keep := 0
	if c.locked {
		keep = 1
	}
	var n int64
	for _, q := range c.queue[keep:] {
		n += q.size()
		if q.answer {
			<-c.slots
		}
	}
	// A message being written is not in the queue: its writer gives it
	// back when the write is done.
	c.limits.Memory.Give(n)
	c.queue, c.queueBytes = c.queue[:keep:keep], c.queueBytes-n
	if keep == 0 {
		c.queue = nil
	}
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

// CloseAfterQueued closes the connection with code and reason once every
// message queued so far has been written (at once when none is): a
// client cut off for a reason gets the message that says why first.
// Messages queued after are not sent.
func (c *Conn) CloseAfterQueued(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if len(c.queue) == 0 && !c.writing {
		c.mu.Unlock()
		c.Close(code, reason)
		return
	}
	c.finish = &closeFrame{code, reason}
	c.mu.Unlock()
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close ends the connection with a close code and reason, without waiting
// for the close handshake. Calls after the first do nothing. The close
// frame follows the message being written, if any: with a Socket it may
// wait up to CloseTimeout for a client that does not read to take that
// message.
func (c *Conn) Close(code websocket.StatusCode, reason string) {
	c.end(func() { _ = c.ws.Close(code, reason) }, time.Now().Add(c.limits.CloseTimeout)) // the peer may be gone
}

// GoAway ends the connection with 1001 (going away) and reason, as Close
// does, for a server that shuts down or stops serving what the
// connection is for: its close frame waits for a client that does not
// read no longer than the message in progress's own WriteTimeout, so
// that a shutdown is not held up.
func (c *Conn) GoAway(reason string) {
	c.end(func() { _ = c.ws.Close(websocket.StatusGoingAway, reason) }, time.Time{})
}

// end marks the connection ended, starts closeWS (when not nil) and runs
// the OnClose functions, once; it reports whether this call ended it.
// closeWS starts at once, or, while a message is being written, when that
// write is done; closeBy bounds how long that write may go on for it.
func (c *Conn) end(closeWS func(), closeBy time.Time) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	c.closeBy = closeBy
	now := closeWS
	if closeWS != nil {
		c.closing.Add(1) // under mu: ServeConn's end and Wait come after
		if c.writing {
			c.closeLater, now = closeWS, nil
		}
	}
	funcs := c.onClose
	c.onClose = nil
	c.dropQueue()
	c.mu.Unlock()
	close(c.done)
	if now != nil {
		go c.runClose(now)
	}
	for _, f := range funcs {
		f()
	}
	return true
}

// runClose runs a close handshake started by end.
func (c *Conn) runClose(closeWS func()) {
	defer c.closing.Done()
	closeWS()
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
