package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// maxInFlightPerSocket bounds the calls one connection may have running;
// beyond it the gateway stops reading, which pushes back on the client.
const maxInFlightPerSocket = 64

// wsHandler serves a WebSocket upgrade. The WebSocket library works on
// net/http's interfaces: the request is converted, the connection is
// hijacked from fasthttp, and the library gets a ResponseWriter over it.
// Each message is then served by the same core as HTTP.
func (g *Gateway) wsHandler(ctx *fasthttp.RequestCtx, rq request) {
	var r http.Request
	if err := fasthttpadaptor.ConvertRequest(ctx, &r, true); err != nil {
		g.fail(ctx, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()}, time.Now())
		return
	}
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		// The server's read and write timeouts are for HTTP requests; a
		// socket lives under the idle timeout and the library's own.
		_ = c.SetDeadline(time.Time{})
		w := &hijackWriter{conn: c, header: http.Header{}}
		g.serveWebSocket(w, r.WithContext(context.Background()), rq)
		w.finish()
	})
}

// hijackWriter is the http.ResponseWriter the WebSocket library accepts a
// connection through. Its 101 answer is written when the library hijacks
// the connection; a refusal it writes instead is sent when it returns.
type hijackWriter struct {
	conn     net.Conn
	header   http.Header
	status   int
	body     []byte
	hijacked bool
}

func (w *hijackWriter) Header() http.Header { return w.header }

func (w *hijackWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *hijackWriter) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

// Hijack sends the status and headers written so far and hands over the
// connection.
func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	w.hijacked = true
	bw := bufio.NewWriter(w.conn)
	w.writeHead(bw)
	if err := bw.Flush(); err != nil {
		return nil, nil, err
	}
	return w.conn, bufio.NewReadWriter(bufio.NewReader(w.conn), bw), nil
}

// finish sends a refusal that was not followed by a hijack.
func (w *hijackWriter) finish() {
	if w.hijacked || w.status == 0 {
		return
	}
	w.header.Set("Content-Length", strconv.Itoa(len(w.body)))
	w.header.Set("Connection", "close")
	bw := bufio.NewWriter(w.conn)
	w.writeHead(bw)
	_, _ = bw.Write(w.body)
	_ = w.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_ = bw.Flush()
}

func (w *hijackWriter) writeHead(bw *bufio.Writer) {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	fmt.Fprintf(bw, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
	_ = w.header.Write(bw)
	_, _ = bw.WriteString("\r\n")
}

// serveWebSocket upgrades an authenticated request and serves JSON-RPC
// messages until the client leaves, idles too long or breaks a limit. Each
// message is one request body, answered by one message (none for
// notifications), through the same core as HTTP.
func (g *Gateway) serveWebSocket(w http.ResponseWriter, r *http.Request, rq request) {
	start := time.Now()
	max := int64(g.limits.MaxWSConnections)
	if g.wsConns.Add(1) > max {
		g.wsConns.Add(-1)
		e, status, _ := jsonrpc.ErrorFor(&portico.LimitError{Limit: portico.LimitConnections, Max: max})
		body := jsonrpc.AppendError(nil, nil, e)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		_, _ = w.Write(body)
		g.log.Warn("websocket refused", "status", status, "path", redactPath(r.URL.Path), "key", rq.id.Name, "took", time.Since(start))
		return
	}
	defer g.wsConns.Add(-1)

	if g.meter != nil {
		// The handshake tells the balance; each call's cost is in the
		// method table, and portico_getCredits answers the balance later.
		if b, err := g.meter.Balance(r.Context(), rq.id); err == nil {
			creditHeaders(w.Header().Set, &b)
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
			e, _, _ := jsonrpc.ErrorFor(&portico.LimitError{Limit: portico.LimitWSMessage, Max: msgMax})
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
