package jsonrpc

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Socket is the network connection a WebSocket writes through: the
// target of the WebSocket library's write buffer, for a server that hands
// the library the connection itself (the gateway, which takes it over
// from fasthttp). Given as ConnLimits.Socket, it lets the Conn bound each
// write with the socket's own deadline (no context to watch per message)
// and, above all, lets the close frame of a client that was cut off reach
// it: the frame cannot be written beside the message in progress (it
// would land inside it), and that message waits on a client that does
// not read, under a deadline set when it started. When the deadline
// stops the write, the Socket asks its Conn how long to go on: a
// connection cut off has a close deadline of its own, CloseTimeout from
// the cut-off, and one that was not is cut off now (ReasonWriteTimeout).
// The write then goes on where it stopped, and the close frame follows
// it at once, as soon as the client reads again.
type Socket struct {
	net.Conn
	conn atomic.Pointer[Conn] // the Conn writing through it, once made
}

// NewSocket wraps c. Until a Conn is made with it, it writes as c does.
func NewSocket(c net.Conn) *Socket { return &Socket{Conn: c} }

// Write writes p as the underlying connection does, except that a write
// its deadline stopped goes on until the time its Conn gives (see
// Socket).
func (s *Socket) Write(p []byte) (int, error) {
	n, err := s.Conn.Write(p)
	for err != nil && n < len(p) && errors.Is(err, os.ErrDeadlineExceeded) {
		c := s.conn.Load()
		if c == nil {
			break
		}
		by := c.stalled()
		if !time.Now().Before(by) || s.Conn.SetWriteDeadline(by) != nil {
			break
		}
		var m int
		m, err = s.Conn.Write(p[n:])
		n += m
	}
	return n, err
}

// ReasonWriteTimeout ends a connection whose client read nothing for the
// write timeout while a message to it was being written.
const ReasonWriteTimeout = "write timed out: the client does not read"

// stalled is the Socket's question when a write to the client has waited
// its WriteTimeout: until when may it go on? A connection that was not
// cut off is, now, with ReasonWriteTimeout; the answer is the
// connection's close deadline (CloseTimeout after it ended, none for one
// that went away with the server).
func (c *Conn) stalled() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.closeBy
	}
	// The close runs apart: it ends the subscriptions, and this runs on
	// the writer, inside the library's write.
	go c.Close(websocket.StatusPolicyViolation, ReasonWriteTimeout)
	return time.Now().Add(c.limits.CloseTimeout)
}
