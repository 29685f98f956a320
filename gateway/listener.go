package gateway

import (
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

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
		max := int64(l.g.limits.MaxConnections)
		if l.g.conns.Add(1) > max && max > 0 {
			l.g.conns.Add(-1)
			go refuseConn(c, &portico.LimitError{Limit: portico.LimitConnections, Max: max})
			continue
		}
		ip := remoteIP(c)
		if !l.g.addrs.take(ip, l.g.limits.MaxConnectionsPerIP) {
			l.g.conns.Add(-1)
			go refuseConn(c, &portico.LimitError{Limit: portico.LimitConnectionsPerIP, Max: int64(l.g.limits.MaxConnectionsPerIP)})
			continue
		}
		return &countedConn{Conn: c, g: l.g, ip: ip}, nil
	}
}

// remoteIP is a connection's client address without its port.
func remoteIP(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// addrCounts counts open connections per client address (and, in the
// gateway, WebSocket connections per key), holding an entry only while
// its count is above zero, so its memory follows the connections open.
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

type countedConn struct {
	net.Conn
	g    *Gateway
	ip   netip.Addr
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.g.conns.Add(-1)
		c.g.addrs.release(c.ip)
	})
	return c.Conn.Close()
}
