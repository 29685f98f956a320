package jsonrpc

import (
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// How a Conn writes: a message written at once by its sender when the
// socket has room (direct), else queued and written by the connection's
// writer with the others that wait (drain), as frames of the Conn's own
// (frames) through its socket (socket.go).

// frameBuffers are the buffers a frame written at once is put together
// in (Conn.direct): one per goroutine sending at a time, not one per
// client.
var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// maxDirect is the largest message written at once by the goroutine that
// sends it (Conn.direct); a larger one goes to the writer, which writes
// its parts where they are, without a copy.
const maxDirect = 64 << 10

// maxBatch bounds the messages the writer writes together, in one call.
const maxBatch = 256

// direct writes q at once, on the goroutine that sends it, when nothing
// is queued or being written and the socket takes the whole frame without
// waiting, and reports whether q is dealt with: a notification to a
// client that reads costs no goroutine, no timer and no queue. When the
// socket takes part of the frame, the rest is queued first, and the
// socket stays locked for it (nothing may come inside a frame) until a
// writer has written it. c.mu is held.
func (c *Conn) direct(q *queued) bool {
	if c.writing || !c.serving || len(c.queue) > 0 || c.sock.raw == nil || q.size() > maxDirect || !c.sock.mu.TryLock() {
		return false
	}
	bp := frameBuffers.Get().(*[]byte)
	b := appendFrameHeader((*bp)[:0], int(q.size()))
	b = append(append(append(b, q.msg...), q.id...), q.tail...)
	n, err := c.sock.tryWrite(b)
	done := true
	switch {
	case err == nil && n == len(b):
		c.sock.mu.Unlock()
	case n == 0:
		// Nothing went: the writer writes it (and meets the error, if
		// one came, and ends the connection).
		c.sock.mu.Unlock()
		done = false
	default:
		rest := append([]byte(nil), b[n:]...)
		c.limits.Memory.Force(int64(len(rest)))
		c.queue = append(c.queue, queued{msg: rest, rest: true, answer: q.answer})
		c.queueBytes += int64(len(rest))
		c.locked = true
		c.startWriter()
	}
	if cap(b) <= maxDirect+maxFrameHeader {
		*bp = b[:0]
		frameBuffers.Put(bp)
	}
	return done
}

// frames appends to bufs the frames of batch, their headers put in hdrs
// (returned for another batch): a header, then the message's parts where
// they are (a spliced notification's shared head and tail, the client's
// id); the rest of a frame as it is.
func frames(bufs net.Buffers, hdrs []byte, batch []queued) (net.Buffers, []byte) {
	if need := maxFrameHeader * len(batch); cap(hdrs) < need {
		hdrs = make([]byte, 0, need) // never grown below: bufs point into it
	}
	for i := range batch {
		q := &batch[i]
		if q.rest {
			bufs = append(bufs, q.msg)
			continue
		}
		start := len(hdrs)
		hdrs = appendFrameHeader(hdrs, int(q.size()))
		bufs = append(bufs, hdrs[start:], q.msg)
		if q.id != nil {
			bufs = append(bufs, q.id, q.tail)
		}
	}
	return bufs, hdrs
}

// drain writes queued messages in order, those that wait together in one
// write (up to maxBatch), until the queue is empty, then ends;
// startWriter starts it again for the next message. When the connection
// ends it drops what is left (after the rest of a frame partly written)
// and starts the close handshake that waited for its write.
func (c *Conn) drain() {
	defer c.writers.Done()
	var backing net.Buffers
	var hdrs []byte
	for {
		c.mu.Lock()
		var batch []queued
		locked := c.locked
		switch {
		case locked:
			// The rest of a frame goes first, whatever else happens: the
			// socket is held for it.
			batch, c.queue, c.locked = c.queue[:1:1], c.queue[1:], false
		case len(c.queue) == 0 || c.closed || c.ctx.Err() != nil:
			// Serve is ending, or the connection has: what is left is not
			// sent.
			c.dropQueue()
			c.writing = false
			closeWS, finish := c.closeLater, c.finish
			c.closeLater = nil
			c.mu.Unlock()
			if closeWS != nil {
				go c.runClose(closeWS)
			}
			if finish != nil {
				c.Close(finish.code, finish.reason)
			}
			return
		default:
			n := min(len(c.queue), maxBatch)
			batch, c.queue = c.queue[:n:n], c.queue[n:]
		}
		if len(c.queue) == 0 {
			c.queue = nil // let a burst's backing array go
		}
		c.mu.Unlock()
		backing, hdrs = frames(backing[:0], hdrs[:0], batch)
		bufs := backing // the write takes from the front of its copy
		err := c.sock.writeFrames(&bufs, c.limits.WriteTimeout, locked)
		clear(backing) // the messages are not held here
		c.mu.Lock()
		// The messages are given back only now: until written they are
		// held.
		var n int64
		for i := range batch {
			n += batch[i].size()
			if batch[i].answer {
				<-c.slots
			}
		}
		c.queueBytes -= n
		c.limits.Memory.Give(n)
		room := c.queueBytes < c.limits.PauseQueueBytes
		c.mu.Unlock()
		if room {
			select {
			case c.room <- struct{}{}:
			default:
			}
		}
		if err != nil {
			if c.ctx.Err() == nil {
				c.Close(websocket.StatusPolicyViolation, "write failed or timed out after "+strconv.Itoa(int(c.limits.WriteTimeout/time.Millisecond))+"ms")
			}
			continue // the next round drops the rest and ends
		}
		c.touch()
	}
}
