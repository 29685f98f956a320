package gateway

import (
	"net"
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
		if max > 0 && l.g.conns.Add(1) > max {
			l.g.conns.Add(-1)
			go refuseConn(c, max)
			continue
		}
		return &countedConn{Conn: c, g: l.g}, nil
	}
}

// refuseConn answers a connection over the limit and closes it.
func refuseConn(c net.Conn, max int64) {
	defer c.Close()
	e, status, _ := jsonrpc.ErrorFor(&portico.LimitError{Limit: portico.LimitConnections, Max: max})
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
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.g.conns.Add(-1) })
	return c.Conn.Close()
}
