package gateway

import (
	"cmp"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
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
// the server's ConnState hook.
const (
	connIdle     int32 = iota // no request being served: new, or between requests
	connActive                // a request is being served
	connHijacked              // a WebSocket
)

// slots counts the open TCP connections over all listeners and per
// client. When every slot is taken, a new client still gets in while
// some client holds more than its share (the slots over the number of
// clients): the idle connections of the largest such holders are closed
// first. Closing an idle HTTP/1.1 keep-alive connection costs its client
// nothing but a new handshake, which RFC 9112 9.6 lets any server do.
type slots struct {
	max, perClient int // 0: no bound

	mu     sync.Mutex
	total  int
	byAddr map[netip.Addr]map[*countedConn]struct{}
}

// admit counts a new connection, closing another client's idle one when
// that makes room, or refuses it.
func (s *slots) admit(c net.Conn, log *slog.Logger) (*countedConn, *portico.LimitError) {
	addr := clientOf(remoteIP(c))
	cc := &countedConn{Conn: c, s: s, addr: addr}
	s.mu.Lock()
	held := s.byAddr[addr]
	if s.perClient > 0 && len(held) >= s.perClient {
		s.mu.Unlock()
		return nil, &portico.LimitError{Limit: portico.LimitConnectionsPerIP, Max: int64(s.perClient)}
	}
	var victim *countedConn
	if s.max > 0 && s.total >= s.max {
		if victim = s.victimLocked(addr); victim == nil {
			s.mu.Unlock()
			return nil, &portico.LimitError{Limit: portico.LimitConnections, Max: int64(s.max)}
		}
		s.removeLocked(victim)
	}
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
		log.Info("connection slots full: closed an idle connection of the largest client", "client", victim.addr.String(), "for", addr.String())
	}
	return cc, nil
}

// victimLocked picks an idle connection of the largest client that holds
// more than its share, not counting the newcomer's own; nil when there is
// none (every client within its share, or the large ones all busy).
func (s *slots) victimLocked(newcomer netip.Addr) *countedConn {
	clients := len(s.byAddr)
	if _, ok := s.byAddr[newcomer]; !ok {
		clients++
	}
	type holder struct {
		addr netip.Addr
		n    int
	}
	var over []holder
	for a, conns := range s.byAddr {
		// More than its share, max/clients, without rounding it down.
		if a != newcomer && len(conns)*clients > s.max {
			over = append(over, holder{a, len(conns)})
		}
	}
	slices.SortFunc(over, func(x, y holder) int {
		return cmp.Or(cmp.Compare(y.n, x.n), x.addr.Compare(y.addr))
	})
	for _, h := range over {
		for c := range s.byAddr[h.addr] {
			// Claim it: a request arriving on it now finds it closed
			// rather than half served.
			if c.state.CompareAndSwap(connIdle, connActive) {
				return c
			}
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

// connState follows the server's view of each connection: only idle ones
// may be closed to make room.
func connState(c net.Conn, state fasthttp.ConnState) {
	cc, ok := c.(*countedConn)
	if !ok {
		return
	}
	switch state {
	case fasthttp.StateActive:
		cc.state.Store(connActive)
	case fasthttp.StateIdle:
		cc.state.Store(connIdle)
	case fasthttp.StateHijacked:
		cc.state.Store(connHijacked)
	}
}

// addrCounts counts WebSocket connections per key name, holding an entry
// only while its count is above zero, so its memory follows the
// connections open.
type addrCounts[K comparable] struct {
	mu sync.Mutex
	n  map[K]int
}

// take counts one more for k unless max (when positive) is reached.
func (a *addrCounts[K]) take(k K, max int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if max > 0 && a.n[k] >= max {
		return false
	}
	if a.n == nil {
		a.n = map[K]int{}
	}
	a.n[k]++
	return true
}

func (a *addrCounts[K]) release(k K) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n[k]--; a.n[k] <= 0 {
		delete(a.n, k)
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
	state atomic.Int32 // connIdle, connActive or connHijacked
}

func (c *countedConn) Close() error {
	c.s.mu.Lock()
	c.s.removeLocked(c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}
