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
type HTTP struct {
	url    string
	client *fasthttp.HostClient
	opts   *Options
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
	h.client = &fasthttp.HostClient{
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
		MaxResponseBodySize:      int(min(opts.maxResponse(), int64(^uint(0)>>1))),
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
		RetryIfErr:               retryStale,
	}
	return h
}

// retryStale retries a call once when its connection turned out to be
// closed by the node: a kept-alive connection the node had just closed
// fails before the first byte of an answer, and the request was never
// served, so it is sent again on a new connection and is not the node's
// failure. Anything else, and a second failure, is not retried here.
func retryStale(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	return false, attempts == 1 && staleConn(err)
}

// staleConn reports whether err is a connection the peer closed before
// answering.
func staleConn(err error) bool {
	return errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Call posts one request and appends the result bytes to dst.
func (h *HTTP) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	if h.client.Addr == "" {
		return nil, unavailable(errors.New("bad node URL"))
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)

	req.SetRequestURI(h.url)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Accept", "application/json")
	injectTrace(ctx, &req.Header)
	req.SetBody(jsonrpc.AppendRequest(req.Body()[:0], []byte(requestID), method, params))

	var err error
	if deadline, ok := ctx.Deadline(); ok {
		err = h.client.DoDeadline(req, resp, deadline)
	} else {
		err = h.client.Do(req, resp)
	}
	if err != nil {
		if errors.Is(err, fasthttp.ErrBodyTooLarge) {
			err = errors.New("response larger than the upstream response limit")
		}
		return nil, classify(ctx, scrub(err, h.url))
	}
	// A 5xx or 429 means this node cannot serve now: another node may.
	status := resp.StatusCode()
	if status >= 500 || status == fasthttp.StatusTooManyRequests {
		return nil, unavailable(fmt.Errorf("HTTP %d", status))
	}
	r, err := jsonrpc.DecodeResponse(resp.Body())
	if err != nil {
		return nil, unavailable(fmt.Errorf("HTTP %d: %v", status, err))
	}
	if err := checkID(r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, r.Error
	}
	// The response's buffer goes back to fasthttp's pool: the result is
	// copied once, into the caller's buffer.
	return append(dst, r.Result...), nil
}

// Close releases idle connections.
func (h *HTTP) Close() error {
	h.client.CloseIdleConnections()
	return nil
}
