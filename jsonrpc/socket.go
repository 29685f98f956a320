package jsonrpc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sys/unix"
)

// socket is the network connection under a Conn's WebSocket. The Conn
// writes its messages' frames to it itself (a frame header and the
// message's parts, several messages in one write when they wait
// together, see Conn.drain), and a notification to a client whose socket
// has room is written at once by the goroutine that sends it, without
// waiting (Conn.direct). The WebSocket library reads the client's
// messages and writes control frames only (pongs, pings, close), through
// Write; mu keeps each frame whole, ours or the library's.
//
// A write that its deadline stops asks the Conn how long to go on: a
// connection cut off has a close deadline of its own, CloseTimeout from
// the cut-off, and one that was not is cut off now (ReasonWriteTimeout).
// The write then goes on where it stopped, and the close frame follows it
// at once, as soon as the client reads again: a close frame cannot be
// written inside the message in progress, and that message waits on a
// client that does not read.
type socket struct {
	net.Conn
	// raw is the descriptor, for writes that must not wait; nil for a
	// connection without one (TLS, a pipe), which the writer serves.
	raw syscall.RawConn
	// mu is held while a frame is written: one of the library's control
	// frames, or ours, or the rest of ours that a write without waiting
	// left (then the Conn holds it until its writer finishes the frame).
	mu sync.Mutex
	// deadline says a write deadline of ours is set (mu): the library's
	// frames clear it first.
	deadline bool
	conn     atomic.Pointer[Conn] // the Conn writing through it, once made
}

func newSocket(c net.Conn) *socket {
	s := &socket{Conn: c}
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			s.raw = raw
		}
	}
	return s
}

// Write is the WebSocket library's: each of its control frames comes in
// one call (its write buffer is flushed at the end of every frame, and
// holds a whole control frame), never inside one of the Conn's frames.
func (s *socket) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deadline {
		// Ours bounded a message of the Conn, and may be long past.
		s.deadline = false
		_ = s.Conn.SetWriteDeadline(time.Time{})
	}
	bufs := net.Buffers{p}
	err := s.writeLocked(&bufs)
	n := len(p)
	if len(bufs) > 0 {
		n -= len(bufs[0])
	}
	return n, err
}

// writeLocked writes bufs whole, going on past the write deadline for as
// long as the Conn says (see socket); s.mu is held. What is left unwritten
// stays in bufs.
func (s *socket) writeLocked(bufs *net.Buffers) error {
	err := s.writeOnce(bufs)
	for err != nil && len(*bufs) > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		c := s.conn.Load()
		if c == nil {
			break
		}
		by := c.stalled()
		if !time.Now().Before(by) || s.Conn.SetWriteDeadline(by) != nil {
			break
		}
		s.deadline = true
		err = s.writeOnce(bufs)
	}
	return err
}

// writeOnce writes bufs within the write deadline, all of them in one
// system call when the socket has room (writev); what is left unwritten
// stays in bufs. s.mu is held.
func (s *socket) writeOnce(bufs *net.Buffers) error {
	if s.raw == nil {
		// One write, not one per part, when it is small: a pipe (the
		// gateway's streams in the process) hands each write over on its
		// own.
		if n := buffersLen(*bufs); len(*bufs) > 1 && n <= maxDirect {
			joined := make([]byte, 0, n)
			for _, b := range *bufs {
				joined = append(joined, b...)
			}
			*bufs = append((*bufs)[:0], joined)
		}
		_, err := bufs.WriteTo(s.Conn)
		return err
	}
	var werr error
	err := s.raw.Write(func(fd uintptr) bool {
		for len(*bufs) > 0 {
			n, err := unix.Writev(int(fd), (*bufs)[:min(len(*bufs), maxIovecs)])
			consume(bufs, max(n, 0))
			switch {
			case errors.Is(err, unix.EINTR):
			case errors.Is(err, unix.EAGAIN):
				return false // wait for room, or for the deadline
			case err != nil:
				werr = err
				return true
			}
		}
		return true
	})
	return errors.Join(werr, err)
}

// maxIovecs is the most buffers one writev takes (IOV_MAX on Linux).
const maxIovecs = 1024

// buffersLen is the bytes bufs holds.
func buffersLen(bufs net.Buffers) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}

// consume drops the first n bytes of bufs.
func consume(bufs *net.Buffers, n int) {
	for len(*bufs) > 0 && len((*bufs)[0]) <= n {
		n -= len((*bufs)[0])
		(*bufs)[0] = nil
		*bufs = (*bufs)[1:]
	}
	if len(*bufs) > 0 {
		(*bufs)[0] = (*bufs)[0][n:]
	}
}

// writeFrames writes bufs, the frames of a batch, within timeout (see
// socket); locked says s.mu is held already, for the rest of a frame.
// s.mu is free after.
func (s *socket) writeFrames(bufs *net.Buffers, timeout time.Duration, locked bool) error {
	if !locked {
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if err := s.Conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	s.deadline = true
	return s.writeLocked(bufs)
}

// tryWrite writes what of p the socket takes now, without waiting: n is 0
// when its buffer is full, or when it has no descriptor. s.mu is held.
func (s *socket) tryWrite(p []byte) (n int, err error) {
	if s.raw == nil {
		return 0, nil
	}
	rerr := s.raw.Write(func(fd uintptr) bool {
		for {
			n, err = syscall.Write(int(fd), p)
			if !errors.Is(err, syscall.EINTR) {
				return true // done, whatever it took: never wait
			}
		}
	})
	if n < 0 {
		n = 0
	}
	if errors.Is(err, syscall.EAGAIN) {
		err = nil
	}
	return n, errors.Join(err, rerr)
}

// appendFrameHeader appends the header of a server's final text frame of
// n bytes (RFC 6455 section 5.2: a server's frames are not masked).
func appendFrameHeader(b []byte, n int) []byte {
	const finText = 0x81
	switch {
	case n < 126:
		return append(b, finText, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, finText, 126), uint16(n))
	}
	return binary.BigEndian.AppendUint64(append(b, finText, 127), uint64(n))
}

// maxFrameHeader is the longest frame header appendFrameHeader writes.
const maxFrameHeader = 10

// controlBuffer is the library's write buffer: it holds a whole control
// frame (a 125-byte payload and its header), which it writes in one call.
const controlBuffer = 256

// ReasonWriteTimeout ends a connection whose client read nothing for the
// write timeout while a message to it was being written.
const ReasonWriteTimeout = "write timed out: the client does not read"

// stalled is the socket's question when a write to the client has waited
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
	// the writer, inside its write.
	go c.Close(websocket.StatusPolicyViolation, ReasonWriteTimeout)
	return time.Now().Add(c.limits.CloseTimeout)
}

// Accept upgrades the request to a WebSocket (as websocket.Accept does,
// with opts) and returns the Conn that serves it within limits. w must be
// able to hand over its connection (http.Hijacker); the Conn writes to it
// itself (see socket). A refused upgrade has been answered in w.
func Accept(w http.ResponseWriter, r *http.Request, opts *websocket.AcceptOptions, limits ConnLimits) (*Conn, error) {
	hw := &socketHijacker{ResponseWriter: w}
	ws, err := websocket.Accept(hw, r, opts)
	if err != nil {
		return nil, err
	}
	if hw.sock == nil {
		_ = ws.CloseNow()
		return nil, errors.New("jsonrpc: the WebSocket library did not take the connection over")
	}
	return newConn(ws, hw.sock, limits), nil
}

// socketHijacker hands the WebSocket library the connection it takes over
// with a write buffer over a socket, which the Conn writes to as well.
type socketHijacker struct {
	http.ResponseWriter
	sock *socket
}

// Hijack hands over the connection of the ResponseWriter below, whose
// answer (the 101) is out by then.
func (h *socketHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("jsonrpc: the ResponseWriter cannot hand over its connection")
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	h.sock = newSocket(c)
	brw.Writer = bufio.NewWriterSize(h.sock, controlBuffer)
	return c, brw, nil
}
