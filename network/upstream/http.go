package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico/jsonrpc"
)

// HTTP is a Node reached by JSON-RPC over HTTP/1.1 POST.
//
// It uses fasthttp's client rather than net/http's: on the gateway's hot
// path net/http's transport (two goroutines per connection, a channel
// hand-off per request) cost more CPU than the rest of the gateway together
// (docs/benchmarks.md). The price is HTTP/1.1 only (no HTTP/2 to nodes), no
// HTTP_PROXY from the environment, no transparent gzip, and a call that is
// not cut short when its caller goes away before the attempt's deadline.
//
// Answers are streamed, not buffered by fasthttp: the body is read straight
// into the caller's buffer, so its bound (Limits) is checked and its
// budget charged while it arrives, and no answer's bytes are left in a
// reuse pool of fasthttp's after the call.
type HTTP struct {
	url  string
	opts *Options
	// kept is the client of every first attempt, with kept-alive
	// connections; fresh dials a new connection for each request and
	// keeps none, for a request that met a connection the node had
	// closed (see Send).
	kept, fresh *fasthttp.HostClient
}

var _ Node = (*HTTP)(nil)

// upstreamReadBuffer is the read buffer of one upstream connection. Nodes
// send large results chunked (geth, net/http servers); a small buffer
// turns a 135 KB block into dozens of reads and copies.
const upstreamReadBuffer = 64 << 10

// NewHTTP returns a node for an http or https URL, with a connection pool
// sized for a gateway (many concurrent calls to few hosts).
func NewHTTP(rawURL string, opts *Options) *HTTP {
	if opts == nil {
		opts = &Options{}
	}
	h := &HTTP{url: rawURL, opts: opts}
	u, err := url.Parse(rawURL)
	host, tls := "", false
	if err == nil {
		host, tls = u.Host, u.Scheme == "https"
		if u.Port() == "" {
			port := "80"
			if tls {
				port = "443"
			}
			host = net.JoinHostPort(u.Hostname(), port)
		}
	}
	client := func() *fasthttp.HostClient {
		return &fasthttp.HostClient{
			Addr:  host,
			IsTLS: tls,
			Dial: func(addr string) (net.Conn, error) {
				return fasthttp.DialTimeout(addr, 5*time.Second)
			},
			MaxConns:                 1024,
			MaxConnWaitTimeout:       5 * time.Second,
			MaxIdleConnDuration:      90 * time.Second,
			ReadBufferSize:           upstreamReadBuffer,
			WriteBufferSize:          16 << 10,
			NoDefaultUserAgentHeader: true,
			DisablePathNormalizing:   true,
			StreamResponseBody:       true,
			// Send retries a stale connection itself, on a fresh one;
			// fasthttp's own retry would take another idle connection.
			RetryIfErr: func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		}
	}
	h.kept, h.fresh = client(), client()
	return h
}

// staleConn reports whether err is a connection the peer closed before
// the first byte of an answer (fasthttp reports any failure to read that
// byte as io.EOF, then as ErrConnectionClosed), or reset while the
// request was written.
func staleConn(err error) bool {
	return errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Call is Send with the node's own bound and no budget.
func (h *HTTP) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	return h.Send(ctx, method, params, Limits{}, dst)
}

// Send posts one request and appends the result bytes to dst.
//
// A request that meets a kept-alive connection the node had closed (it
// fails before the first byte of an answer) was not served: it is sent
// again, at once, on a connection dialled for it, which cannot be stale,
// so once is as often as it takes. Only a failure there is the node's.
// Nodes close kept-alive connections when their idle timeout ends, and
// some (and load balancers before them) after every answer, without the
// Connection: close header that would tell the client. The other way,
// dropping idle connections older than the node's keep-alive, was not
// taken: a node's keep-alive cannot be observed (one that closes after
// every answer has none, a load balancer closes at times of its own),
// fasthttp's MaxIdleConnDuration cannot change while the client runs, and
// a connection younger than the keep-alive still races with the close.
func (h *HTTP) Send(ctx context.Context, method string, params jsontext.Value, lim Limits, dst []byte) (jsontext.Value, error) {
	if h.kept.Addr == "" {
		return nil, unavailable(errors.New("bad node URL"))
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	// A large request's buffer is let go rather than pooled.
	defer req.ReleaseBody(maxPooledBytes)

	req.SetRequestURI(h.url)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Accept", "application/json")
	injectTrace(ctx, &req.Header)
	req.SetBody(jsonrpc.AppendRequest(req.Body()[:0], []byte(requestID), method, params))

	err := h.do(ctx, h.kept, req, resp)
	if err != nil && staleConn(err) {
		req.SetConnectionClose()
		err = h.do(ctx, h.fresh, req, resp)
	}
	if err != nil {
		return nil, classify(ctx, scrub(err, h.url))
	}
	// Unless the body was read to its end, closing it closes the
	// connection: nothing is drained.
	defer resp.CloseBodyStream()
	// A 5xx or 429 means this node cannot serve now: another node may.
	// A short body is read past, so that the connection stays (a node
	// that rate-limits should not also get a new connection per call).
	status := resp.StatusCode()
	length := int64(resp.Header.ContentLength()) // -1 chunked, -2 until close
	if status >= 500 || status == fasthttp.StatusTooManyRequests {
		if length >= 0 && length <= readChunk {
			_, _ = io.CopyN(io.Discard, resp.BodyStream(), length)
		}
		// 429, and 503 with a Retry-After, are the node's rate or
		// capacity: not a fault of the node (LimitedError).
		retry := resp.Header.Peek(fasthttp.HeaderRetryAfter)
		if status == fasthttp.StatusTooManyRequests || (status == fasthttp.StatusServiceUnavailable && len(retry) > 0) {
			return nil, &LimitedError{Status: status, RetryAfter: parseRetryAfter(retry, time.Now())}
		}
		return nil, unavailable(fmt.Errorf("HTTP %d", status))
	}
	hold := holding{budget: lim.Budget}
	defer hold.release()
	maxResult := lim.bound(h.opts)
	start := len(dst)
	dst, err = readBody(resp.BodyStream(), max(length, -1), maxResult, &hold, dst)
	if err != nil {
		if isLimit(err) {
			return nil, err
		}
		return nil, classify(ctx, scrub(err, h.url))
	}
	r, err := jsonrpc.DecodeResponse(dst[start:])
	if err != nil {
		return nil, unavailable(fmt.Errorf("HTTP %d: %v", status, err))
	}
	if err := checkID(r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, r.Error
	}
	if int64(len(r.Result)) > maxResult {
		return nil, errResult(maxResult)
	}
	// The body was read where the result goes: the result moves to the
	// front, over the envelope, and is the only copy.
	n := copy(dst[start:], r.Result)
	return dst[:start+n], nil
}

// do sends req on client within ctx's deadline.
func (h *HTTP) do(ctx context.Context, client *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) error {
	if deadline, ok := ctx.Deadline(); ok {
		return client.DoDeadline(req, resp, deadline)
	}
	return client.Do(req, resp)
}

// Close releases idle connections.
func (h *HTTP) Close() error {
	h.kept.CloseIdleConnections()
	h.fresh.CloseIdleConnections()
	return nil
}
