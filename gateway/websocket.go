package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// maxInFlightPerSocket bounds the calls one connection may have running;
// beyond it the gateway stops reading, which pushes back on the client.
const maxInFlightPerSocket = 64

// serveWebSocket upgrades an authenticated request and serves JSON-RPC
// messages until the client leaves, idles too long or breaks a limit. Each
// message is one request body, answered by one message (none for
// notifications), through the same core as HTTP.
func (g *Gateway) serveWebSocket(w http.ResponseWriter, r *http.Request, rq request) {
	start := time.Now()
	max := int64(g.limits.MaxWSConnections)
	if g.wsConns.Add(1) > max {
		g.wsConns.Add(-1)
		e, status, _ := wireError(&portico.LimitError{Limit: portico.LimitConnections, Max: max})
		w.Header().Set("Retry-After", "1")
		g.write(w, r, status, jsonrpc.AppendError(nil, nil, e), rq, start)
		return
	}
	defer g.wsConns.Add(-1)

	if g.meter != nil {
		// The handshake tells the balance; each call's cost is in the
		// method table, and portico_getCredits answers the balance later.
		if b, err := g.meter.Balance(r.Context(), rq.id); err == nil {
			creditHeaders(w.Header(), &b)
		}
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		// The key in the path is the credential and carries no ambient
		// authority, so any origin may use it, as with hosted providers.
		InsecureSkipVerify: true,
	})
	if err != nil {
		return // Accept has answered the client
	}
	if !g.track(c) {
		c.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	defer g.untrack(c)

	// The library's own limit sits one byte above ours, so the gateway sees
	// an oversized message first and can say which limit it broke.
	msgMax := g.limits.MaxWSMessageBytes
	c.SetReadLimit(msgMax + 1)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	idle := time.AfterFunc(g.limits.WSIdleTimeout, func() {
		c.Close(websocket.StatusPolicyViolation, "idle timeout: no message for "+g.limits.WSIdleTimeout.String())
	})
	defer idle.Stop()

	sem := make(chan struct{}, maxInFlightPerSocket)
	for {
		_, rd, err := c.Reader(ctx)
		if err != nil {
			break
		}
		idle.Reset(g.limits.WSIdleTimeout)
		body, err := io.ReadAll(io.LimitReader(rd, msgMax+1))
		if err != nil {
			break
		}
		if int64(len(body)) > msgMax {
			e, _, _ := wireError(&portico.LimitError{Limit: portico.LimitWSMessage, Max: msgMax})
			_ = c.Write(ctx, websocket.MessageText, jsonrpc.AppendError(nil, nil, e))
			c.Close(websocket.StatusMessageTooBig, e.Message)
			break
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			out, _, _ := g.handle(ctx, rq, body, nil)
			if out == nil {
				return
			}
			if err := c.Write(ctx, websocket.MessageText, out); err != nil && !errors.Is(err, context.Canceled) {
				c.CloseNow()
			}
		}()
	}
	cancel()
	// Wait for the calls in flight, so nothing outlives the connection.
	for range cap(sem) {
		sem <- struct{}{}
	}
	c.CloseNow()
}

// track registers a connection for Close; false when shutting down.
func (g *Gateway) track(c *websocket.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.sockets[c] = struct{}{}
	g.wsWG.Add(1)
	return true
}

func (g *Gateway) untrack(c *websocket.Conn) {
	g.mu.Lock()
	delete(g.sockets, c)
	g.mu.Unlock()
	g.wsWG.Done()
}
