package gateway

import (
	"cmp"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// limitListener counts open connections and refuses those above the limit
// with a complete HTTP answer, so that a client learns why instead of
// waiting in the accept queue.
type limitListener struct {
	net.Listener
	g *Gateway
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc, refused := l.g.slots.admit(c, l.g.log)
		if refused != nil {
			go refuseConn(c, refused)
			continue
		}
		return cc, nil
	}
}

// remoteIP is a connection's client address without its port.
func remoteIP(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// clientOf is what one client is counted by: its IPv4 address, or the /64
// of its IPv6 address (one host or one customer's network is given a /64,
// and can pick any address in it), as the dashboard and the auth server
// count clients.
func clientOf(ip netip.Addr) netip.Addr {
	if ip.Is6() && !ip.Is4In6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

// Connection states for the choice of which connection to close, from
// the server's ConnState hook and the gateway's handler.
const (
	connNew      int32 = iota // open, no request yet
	connIdle                  // between requests (keep-alive)
	connReading               // a request is arriving: from its first byte until the handler has it whole
	connServing               // the handler serves a request
	connHijacked              // a WebSocket
	connClaimed               // chosen to be closed to make room
)

// stateWord packs a connection's state and when it entered it (unix
// milliseconds), so that one compare-and-swap claims a connection in the
// state it was seen in.
func stateWord(state int32, since time.Time) int64 {
	return since.UnixMilli()<<3 | int64(state)
}

func wordState(w int64) int32 { return int32(w & 7) }

func wordSince(w int64) time.Time { return time.UnixMilli(w >> 3) }

// slots counts the open TCP connections over all listeners and per
// client. When every slot is taken, a connection is closed to make room
// for a new one, in this order:
//
//  1. a stalled one, that has not sent a whole request within
//     headerTimeout (a client trickling bytes, which the HTTP server
//     counts as busy from its first byte), of a client holding more
//     connections than the newcomer, or of the newcomer itself;
//  2. an idle one of the largest client holding more than its share (the
//     slots over the number of clients), not the newcomer;
//  3. one of such a client still sending its request.
//
// So a new client always gets in while some client holds more than its
// share and is not being served on every connection. A client at its own
// bound (perClient) gets in only by a stalled connection of its own.
// Closing an idle HTTP/1.1 keep-alive connection costs its client nothing
// but a new handshake, which RFC 9112 9.6 lets any server do; closing one
// that has not sent its request costs it a retry.
type slots struct {
	max, perClient int           // 0: no bound
	headerTimeout  time.Duration // 0: none is stalled

	mu     sync.Mutex
	total  int
	byAddr map[netip.Addr]map[*countedConn]struct{}
}

// Kinds of connection closed to make room, for the log.
const (
	victimStalled = "a stalled connection (no whole request within limits.header_timeout)"
	victimIdle    = "an idle connection of the largest client"
	victimReading = "a connection still sending its request, of the largest client"
)

// admit counts a new connection, closing another when that makes room
// (see slots), or refuses it.
func (s *slots) admit(c net.Conn, log *slog.Logger) (*countedConn, *portico.LimitError) {
	addr := clientOf(remoteIP(c))
	now := time.Now()
	cc := &countedConn{Conn: c, s: s, addr: addr}
	cc.state.Store(stateWord(connNew, now))
	s.mu.Lock()
	held := s.byAddr[addr]
	var victim *countedConn
	var kind string
	if s.perClient > 0 && len(held) >= s.perClient {
		if victim = s.stalledLocked(held, now); victim == nil {
			s.mu.Unlock()
			return nil, &portico.LimitError{Limit: portico.LimitConnectionsPerIP, Max: int64(s.perClient)}
		}
		kind = victimStalled
		s.removeLocked(victim)
	}
	if s.max > 0 && s.total >= s.max {
		if victim, kind = s.victimLocked(addr, now); victim == nil {
			s.mu.Unlock()
			return nil, &portico.LimitError{Limit: portico.LimitConnections, Max: int64(s.max)}
		}
		s.removeLocked(victim)
	}
	// A victim of the newcomer's own may have been its last connection,
	// and its set gone with it.
	held = s.byAddr[addr]
	if held == nil {
		if s.byAddr == nil {
			s.byAddr = map[netip.Addr]map[*countedConn]struct{}{}
		}
		held = map[*countedConn]struct{}{}
		s.byAddr[addr] = held
	}
	held[cc] = struct{}{}
	s.total++
	s.mu.Unlock()
	if victim != nil {
		// Its slot is already counted free; fasthttp sees the read fail
		// and lets the connection go.
		_ = victim.Conn.Close()
		log.Info("connection slots full: closed "+kind, "client", victim.addr.String(), "for", addr.String())
	}
	return cc, nil
}

// victimLocked picks the connection to close for a newcomer when every
// slot is taken, and says which kind it is (see slots); nil when there is
// none.
func (s *slots) victimLocked(newcomer netip.Addr, now time.Time) (*countedConn, string) {
	clients := len(s.byAddr)
	if _, ok := s.byAddr[newcomer]; !ok {
		clients++
	}
	mine := len(s.byAddr[newcomer])
	type holder struct {
		addr netip.Addr
		n    int
	}
	holders := make([]holder, 0, len(s.byAddr))
	for a, conns := range s.byAddr {
		holders = append(holders, holder{a, len(conns)})
	}
	slices.SortFunc(holders, func(x, y holder) int {
		return cmp.Or(cmp.Compare(y.n, x.n), x.addr.Compare(y.addr))
	})
	for _, h := range holders {
		if h.addr == newcomer || h.n > mine {
			if c := s.stalledLocked(s.byAddr[h.addr], now); c != nil {
				return c, victimStalled
			}
		}
	}
	for _, kind := range []string{victimIdle, victimReading} {
		for _, h := range holders {
			// More than its share, max/clients, without rounding it down.
			if h.addr == newcomer || h.n*clients <= s.max {
				continue
			}
			for c := range s.byAddr[h.addr] {
				w := c.state.Load()
				switch st := wordState(w); {
				case kind == victimIdle && st != connNew && st != connIdle,
					kind == victimReading && st != connReading:
					continue
				}
				// Claim it: a request arriving on it now finds it closed
				// rather than half served.
				if c.state.CompareAndSwap(w, stateWord(connClaimed, now)) {
					return c, kind
				}
			}
		}
	}
	return nil, ""
}

// stalledLocked claims a connection of conns that has not sent a whole
// request within headerTimeout: still sending it, or open without one
// since; nil when there is none.
func (s *slots) stalledLocked(conns map[*countedConn]struct{}, now time.Time) *countedConn {
	if s.headerTimeout <= 0 {
		return nil
	}
	for c := range conns {
		w := c.state.Load()
		if st := wordState(w); (st == connNew || st == connReading) && now.Sub(wordSince(w)) > s.headerTimeout &&
			c.state.CompareAndSwap(w, stateWord(connClaimed, now)) {
			return c
		}
	}
	return nil
}

// removeLocked stops counting c.
func (s *slots) removeLocked(c *countedConn) {
	held := s.byAddr[c.addr]
	if _, ok := held[c]; !ok {
		return
	}
	delete(held, c)
	if len(held) == 0 {
		delete(s.byAddr, c.addr)
	}
	s.total--
}

// open returns the number of connections counted.
func (s *slots) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// connState follows the server's view of each connection, for the
// choice of one to close to make room (see slots). The server calls a
// connection active from the first byte of a request; it is serving once
// the handler has the request (serving).
func connState(c net.Conn, state fasthttp.ConnState) {
	cc, ok := c.(*countedConn)
	if !ok {
		return
	}
	switch state {
	case fasthttp.StateActive:
		cc.state.Store(stateWord(connReading, time.Now()))
	case fasthttp.StateIdle:
		cc.state.Store(stateWord(connIdle, time.Now()))
	case fasthttp.StateHijacked:
		cc.state.Store(stateWord(connHijacked, time.Now()))
	}
}

// serving marks the connection of a request the handler has whole: it is
// no longer stalled, nor closed to make room.
func serving(c net.Conn) {
	if cc, ok := c.(*countedConn); ok {
		cc.state.Store(stateWord(connServing, time.Now()))
	}
}

// refuseConn answers a connection over a limit and closes it.
func refuseConn(c net.Conn, limit *portico.LimitError) {
	defer c.Close()
	e, status, _ := jsonrpc.ErrorFor(limit)
	body := jsonrpc.AppendError(nil, nil, e)
	head := "HTTP/1.1 " + strconv.Itoa(status) + " Service Unavailable\r\n" +
		"Content-Type: application/json\r\nConnection: close\r\nRetry-After: 1\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_, _ = c.Write(append([]byte(head), body...))
}

// countedConn is a connection counted in slots until it closes.
type countedConn struct {
	net.Conn
	s     *slots
	addr  netip.Addr
	state atomic.Int64 // stateWord: its state and since when
}

// SyscallConn gives the descriptor of the connection below, which a
// WebSocket writes its frames through (jsonrpc.Accept).
func (c *countedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

func (c *countedConn) Close() error {
	c.s.mu.Lock()
	c.s.removeLocked(c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}
