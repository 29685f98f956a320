package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"runtime"
	"sync"
)

// This file is the floor of the subs setup: the fake node in floor mode
// (fake-heads-node LISTEN INTERVAL floor) writes each head to every
// subscriber itself, one frame in one write(2) per subscriber, in a
// plain loop split over the cores, with nothing else on the way: no
// queue, no goroutine per client, no credits. The same clients subscribed
// to it directly measure, in the same run as Portico, the CPU and the
// delay that the machine's sockets alone cost (docs/benchmarks.md, issue
// 38).

// floorConn is a subscriber's connection in floor mode: the node's own
// frames and the WebSocket library's go through mu, whole.
type floorConn struct {
	net.Conn
	mu sync.Mutex
}

// Write is the WebSocket library's: its frames are flushed whole from
// its buffer.
func (c *floorConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.Write(p)
}

// floorHijacker hands the WebSocket library a connection whose writes
// the node's own frames do not cut into.
type floorHijacker struct {
	http.ResponseWriter
	conn *floorConn
}

func (h *floorHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("floor: no hijacker")
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		return nil, nil, err
	}
	h.conn = &floorConn{Conn: c}
	brw.Writer = bufio.NewWriter(h.conn)
	return c, brw, nil
}

// writeFloor writes the head (geth's newHeads result js) to every
// subscriber, one frame each, the subscribers split over the cores.
func writeFloor(subs []*headsSub, js []byte) {
	parts := min(runtime.GOMAXPROCS(0), len(subs))
	var wg sync.WaitGroup
	for i := range parts {
		share := subs[i*len(subs)/parts : (i+1)*len(subs)/parts]
		wg.Go(func() {
			var b []byte
			for _, s := range share {
				n := len(`{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"`) + len(s.id) + len(`","result":`) + len(js) + len("}}")
				b = appendTextFrameHeader(b[:0], n)
				b = append(b, `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"`...)
				b = append(append(append(append(b, s.id...), `","result":`...), js...), "}}"...)
				s.raw.mu.Lock()
				_, _ = s.raw.Conn.Write(b)
				s.raw.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// appendTextFrameHeader appends the header of a server's final text frame
// of n bytes (RFC 6455 section 5.2).
func appendTextFrameHeader(b []byte, n int) []byte {
	switch {
	case n < 126:
		return append(b, 0x81, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0x81, 126), uint16(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81, 127), uint64(n))
}
