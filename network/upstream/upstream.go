// Package upstream sends calls to the nodes behind a network: one Node per
// node URL (HTTP or WebSocket) or embedded devnet (InProcess), and a Pool
// that adds health tracking, failover and timeouts. Results come back as
// the node's raw bytes; nothing here decodes and re-encodes them. What may
// be cached is the gateway's business, not this package's.
//
// Node URLs often carry secrets (a provider's key in the path or query), so
// they never appear in errors or logs: Redact gives the form that may.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// Node sends one call to one node. Send appends the result bytes, as the
// node sent them, to dst and returns the extended slice, so that a caller
// can have them land in its response buffer with no copy of its own; or it
// returns an error: a *jsonrpc.Error when the node answered with a JSON-RPC
// error (passed on to the client as is), a *portico.LimitError when the
// answer passed lim (see Limits: this process's bound, not the node's
// fault), anything else when the node could not be asked or its answer was
// unusable. On an error the bytes of dst past its length may have been
// written.
//
// Call is Send with the zero Limits: the node's own bound and no budget.
// It is the portico.Caller a family's chain hooks ask nodes through.
type Node interface {
	Send(ctx context.Context, method string, params jsontext.Value, lim Limits, dst []byte) (jsontext.Value, error)
	Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error)
	Close() error
}

// Dial returns the Node for a URL: an HTTP node for http and https, a
// WebSocket node for ws and wss. opts may be nil.
func Dial(rawURL string, opts *Options) (Node, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("upstream: bad URL %s", Redact(rawURL))
	}
	if opts == nil {
		opts = &Options{}
	}
	switch u.Scheme {
	case "http", "https":
		return NewHTTP(rawURL, opts), nil
	case "ws", "wss":
		return NewWebSocket(rawURL, opts), nil
	}
	return nil, fmt.Errorf("upstream: URL %s: scheme must be http, https, ws or wss", Redact(rawURL))
}

// Options tune a Node. The zero value works.
type Options struct {
	// PingInterval is how often a WebSocket node is pinged; one that does
	// not answer within another interval is dropped. 0 means 10s.
	PingInterval time.Duration
	// MaxResponseBytes bounds the result of one call to the node (its
	// envelope aside) when the call names no bound of its own (see
	// Limits); 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

func (o *Options) pingInterval() time.Duration {
	if o == nil || o.PingInterval <= 0 {
		return 10 * time.Second
	}
	return o.PingInterval
}

func (o *Options) maxResponse() int64 {
	if o == nil || o.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return o.MaxResponseBytes
}

// Redact returns a form of a node URL that is safe to log: scheme and host
// stay, user info, path and query are masked, since providers put their keys
// in any of them.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "<redacted>"
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString("***@")
	}
	b.WriteString(u.Host)
	if u.Path != "" && u.Path != "/" {
		b.WriteString("/***")
	}
	if u.RawQuery != "" {
		b.WriteString("?***")
	}
	return b.String()
}

// scrub removes a node URL from an error's text. net/http and the WebSocket
// library name the URL in their errors; the cause is kept, the URL is not.
func scrub(err error, rawURL string) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if rawURL != "" && strings.Contains(msg, rawURL) {
		msg = strings.ReplaceAll(msg, rawURL, Redact(rawURL))
	}
	return &scrubbed{msg: msg, err: err}
}

// scrubbed keeps the cause reachable for errors.Is (deadline exceeded,
// connection refused) while its text no longer names the URL.
type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }

// requestID is the id of every call a node is sent over HTTP or
// in-process, one call per request.
const requestID = "1"

// checkID refuses an answer whose id is not the request's: a node (or a
// proxy in front of it) that mixes up answers must not have one client's
// result reach another. A JSON-RPC error about the request envelope may
// carry a null id.
func checkID(r jsonrpc.Response) error {
	if string(r.ID) == requestID || (r.Error != nil && string(r.ID) == "null") {
		return nil
	}
	return unavailable(fmt.Errorf("node answered id %.40s to request id %s", r.ID, requestID))
}

// failure is a transport-level failure of one node: the node is not asked
// again for this call and its health suffers.
type failure struct {
	kind  error // portico.ErrUpstreamTimeout or portico.ErrUpstreamUnavailable
	cause error
}

func (f *failure) Error() string { return fmt.Sprintf("%v: %v", f.kind, f.cause) }
func (f *failure) Unwrap() []error {
	return []error{f.kind, f.cause}
}

func unavailable(cause error) error {
	return &failure{kind: portico.ErrUpstreamUnavailable, cause: cause}
}

// undelivered reports whether a failure proves that the node never got
// the request: it refused the connection or could not be dialled, or its
// pool of connections had no room. Only then may a write go elsewhere.
func undelivered(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, fasthttp.ErrNoFreeConns)
}

// classify turns a transport error into a failure of the right kind.
func classify(ctx context.Context, err error) error {
	var f *failure
	if errors.As(err, &f) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
		return &failure{kind: portico.ErrUpstreamTimeout, cause: err}
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return &failure{kind: portico.ErrUpstreamTimeout, cause: err}
	}
	return unavailable(err)
}
