package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/membudget"
)

// maxInFlightPerSocket bounds the calls one connection may have running;
// beyond it the gateway stops reading, which pushes back on the client.
const maxInFlightPerSocket = 64

// wsHandler serves a WebSocket upgrade. The WebSocket library works on
// net/http's interfaces: the request is converted, the connection is
// hijacked from fasthttp, and the library gets a ResponseWriter over it.
// Each message is then served by the same core as HTTP.
func (g *Gateway) wsHandler(ctx *fasthttp.RequestCtx, rq request, sock *socket) {
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
		// The server keeps hijacked connections open (KeepHijackedConns):
		// the socket is read directly, not through the request's 16 KiB
		// buffer (a client sends nothing before the 101, RFC 6455 4.1),
		// and once the upgrade is answered this returns, giving the
		// request's buffers back. An idle subscriber holds only its
		// WebSocket (docs/benchmarks.md, issue 17).
		if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
			c = u.UnsafeConn()
		}
		w := &hijackWriter{conn: c, header: http.Header{}}
		serve := g.serveWebSocket(w, r.WithContext(context.Background()), rq, sock)
		w.finish()
		if serve == nil {
			_ = c.Close()
			return
		}
		go serve()
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
	// The answer's buffer; jsonrpc.Accept gives the library its own.
	bw := bufio.NewWriterSize(w.conn, 1<<10)
	w.writeHead(bw)
	if err := bw.Flush(); err != nil {
		return nil, nil, err
	}
	// Frames are read a header at a time; payloads of a message of 1 KiB
	// or more are read into the message's own buffer, past this one.
	return w.conn, bufio.NewReadWriter(bufio.NewReaderSize(w.conn, 1<<10), bw), nil
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

// serveWebSocket upgrades an authenticated request and returns the
// function that serves JSON-RPC messages on a jsonrpc.Conn until the
// client leaves, idles too long, breaks a limit or its key refuses it;
// nil when the upgrade was refused (the answer is in w). Each message is
// one request body, answered by one message (none for notifications),
// through the same core as HTTP, under the key as the store has it then
// (sock, wskey.go).
func (g *Gateway) serveWebSocket(w http.ResponseWriter, r *http.Request, rq request, sock *socket) (serve func()) {
	start := time.Now()
	lim := &rq.st.limits
	max := int64(lim.MaxWSConnections)
	var refused error
	var keySlot func()
	if !g.conns.Reserve(int(max)) {
		refused = &portico.LimitError{Limit: portico.LimitConnections, Max: max}
	} else if keySlot, refused = g.bounds.Hold(r.Context(), metering.WebSockets, rq.id, lim.MaxWSConnectionsPerKey); refused != nil {
		g.conns.Release()
	}
	if refused != nil {
		e, status, _ := jsonrpc.ErrorFor(refused)
		body := jsonrpc.AppendError(nil, nil, e)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		_, _ = w.Write(body)
		g.log.Warn("websocket refused", "status", status, "reason", e.Message, "path", redactPath(r.URL.Path), "key", rq.id.Name, "took", time.Since(start))
		return nil
	}
	// What the connection's closures keep for its life is named here, so
	// that they hold these and not the whole request (an idle subscriber
	// holds little: docs/benchmarks.md, issue 17).
	name := rq.net.Name
	// The WebSocket's slots are given back when it ends, which may be
	// before its socket closes: a client cut off while a message to it
	// is blocked keeps its socket until it has read its close frame
	// (jsonrpc.ConnLimits.CloseTimeout), and may connect again meanwhile.
	var released sync.Once
	release := func() {
		released.Do(func() {
			g.conns.Release()
			keySlot()
		})
	}

	if g.meter != nil {
		// The handshake tells the balance; each call's cost is in the
		// method table, and portico_getCredits answers the balance later.
		if b, err := g.meter.Balance(r.Context(), rq.id); err == nil {
			// The handshake is net/http's: the headers go across.
			var h fasthttp.ResponseHeader
			creditHeaders(&h, &b)
			for _, k := range []string{HeaderCreditsUsed, HeaderCreditsRemaining, HeaderCreditsReset} {
				w.Header().Set(k, string(h.Peek(k)))
			}
		}
	}
	limits := jsonrpc.ConnLimitsOf(*lim)
	limits.MaxInFlight = maxInFlightPerSocket
	limits.Memory = membudget.New("connection", lim.ConnectionMemoryBytes, g.keyMem.Of(rq.id.Name))
	c, err := jsonrpc.Accept(w, r, &websocket.AcceptOptions{
		// The key in the path is the credential and carries no ambient
		// authority, so any origin may use it, as with hosted providers.
		InsecureSkipVerify: true,
	}, limits)
	if err != nil {
		release()
		return nil // Accept has answered the client
	}
	c.OnClose(release)
	if !g.track(c, sock) {
		c.GoAway("server shutting down")
		release()
		return nil
	}
	g.obs.metrics.WebSocket(1)
	base := r.Context() // the request itself is not used after this returns
	return func() {
		defer release()
		defer g.untrack(c)
		defer g.obs.metrics.WebSocket(-1)
		c.Serve(base, func(ctx context.Context, body []byte) []byte {
			// Each message is served by the network of this name in the
			// state of now, under the key as the store has it now: a
			// reload's costs, limits and nodes and a key's changes reach
			// open connections too.
			id, err := g.keyNow(ctx, sock)
			if err != nil {
				return refusedByKey(ctx, c, err)
			}
			rq := request{id: id}
			if rq.st, rq.net = g.acquire(func(s *state) *Network { return s.byName[name] }); rq.net == nil {
				e, _, _ := jsonrpc.ErrorFor(networkGone(name))
				return jsonrpc.AppendError(nil, nil, &jsonrpc.Error{Code: e.Code, Message: networkGone(name).Error()})
			}
			defer rq.net.use.release()
			out, _, _ := g.handle(ctx, rq, body, nil)
			return out
		})
	}
}

// track registers a connection for Close, Reload and the check against
// its key; false when shutting down.
func (g *Gateway) track(c *jsonrpc.Conn, s *socket) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.conns.Track(c, s) {
		return false
	}
	g.shareKeyLocked(s)
	g.armSweepLocked()
	return true
}

// untrack forgets a connection track registered.
func (g *Gateway) untrack(c *jsonrpc.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.conns.Untrack(c); s != nil {
		g.unshareKeyLocked(s)
	}
}
