package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/coder/websocket"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// Handler answers the calls of a Server.
//
// ServeRPC answers one call. The result is written as JSON: a
// jsontext.Value or a json.RawMessage as it is (it must be valid JSON),
// anything else marshalled with deterministic member order. An error is
// mapped to the wire by ErrorFor: a *Error or an error with an
// ErrorCode() keeps its code and message, anything else becomes an
// internal error whose cause is logged, not sent. A call that arrives over
// a WebSocket has the connection in its context (ConnFrom), which is how a
// method starts a subscription.
type Handler interface {
	ServeRPC(ctx context.Context, method string, params jsontext.Value) (any, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, method string, params jsontext.Value) (any, error)

// ServeRPC calls f.
func (f HandlerFunc) ServeRPC(ctx context.Context, method string, params jsontext.Value) (any, error) {
	return f(ctx, method, params)
}

// Limits bound what one client can make a Server do. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// MaxBodyBytes bounds an HTTP request body.
	MaxBodyBytes int64
	// MaxBatch bounds the calls of one batch.
	MaxBatch int
	// Conn bounds each WebSocket connection.
	Conn ConnLimits
	// MaxConnections bounds the WebSocket connections open at once.
	MaxConnections int
}

// DefaultLimits are the server's bounds of portico.DefaultLimits, the
// limits `portico serve` runs with when its config sets none (LimitsOf:
// 5 MiB bodies and messages, batches of 100 and 1024 WebSocket
// connections), with DefaultConnLimits for each connection.
func DefaultLimits() Limits {
	l := LimitsOf(portico.DefaultLimits())
	l.Conn = DefaultConnLimits()
	return l
}

// LimitsOf are the bounds of l (the one limits model, which the config
// file decodes into) that a Server holds its clients to: the body, the
// batch, each connection's (ConnLimitsOf) and the WebSocket connections
// open at once.
func LimitsOf(l portico.Limits) Limits {
	return Limits{MaxBodyBytes: l.MaxBodyBytes, MaxBatch: l.MaxBatch, Conn: ConnLimitsOf(l), MaxConnections: l.MaxWSConnections}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	if l.MaxBatch <= 0 {
		l.MaxBatch = d.MaxBatch
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = d.MaxConnections
	}
	l.Conn = l.Conn.withDefaults()
	return l
}

// Server serves JSON-RPC 2.0 through a Handler: HTTP POST bodies (single
// calls, batches, notifications), WebSocket connections, and bodies handed
// over in-process. It is the one server loop of the devnets, the test
// nodes and the key network's nodes, with the gateway's limits and error
// shapes: an oversized body is -32042 with HTTP 413, a batch over the
// limit -32043, a body of notifications only is answered with nothing
// (HTTP 204).
type Server struct {
	h      Handler
	limits Limits
	log    *slog.Logger
	conns  connSet
}

// ServerOptions configure a Server. The zero value works.
type ServerOptions struct {
	Limits Limits
	// Logger receives the causes of internal errors; nil discards them.
	Logger *slog.Logger
}

// NewServer returns a server answering through h.
func NewServer(h Handler, opts ServerOptions) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{h: h, limits: opts.Limits.withDefaults(), log: log, conns: connSet{m: map[*Conn]struct{}{}}}
}

// Serve answers a request body, appending the response to dst. It returns
// nil when nothing is to be sent (only notifications came), and the HTTP
// status of the answer.
func (s *Server) Serve(ctx context.Context, body, dst []byte) ([]byte, int) {
	calls, batch, derr := Decode(body)
	if derr != nil {
		e, status, _ := ErrorFor(derr)
		return AppendError(dst, nil, e), status
	}
	if batch && len(calls) > s.limits.MaxBatch {
		e, status, _ := ErrorFor(&portico.LimitError{Limit: portico.LimitBatch, Max: int64(s.limits.MaxBatch), Got: int64(len(calls))})
		return AppendError(dst, nil, e), status
	}
	if batch {
		dst = append(dst, '[')
	}
	status, n := http.StatusOK, 0
	for _, c := range calls {
		if c.Err == nil && c.IsNotification() {
			s.call(ctx, c.Method, c.Params) // run it, answer nothing
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		if c.Err != nil {
			e, st, _ := ErrorFor(c.Err)
			dst, status = AppendError(dst, c.ID, e), st
			continue
		}
		result, e, st := s.call(ctx, c.Method, c.Params)
		if e != nil {
			dst, status = AppendError(dst, c.ID, e), st
			continue
		}
		dst = AppendResult(dst, c.ID, result)
	}
	if n == 0 {
		return nil, http.StatusNoContent
	}
	if batch {
		// A batch is answered with 200; each call carries its own error.
		return append(dst, ']'), http.StatusOK
	}
	return dst, status
}

// call runs one method and encodes its result, or maps its error.
func (s *Server) call(ctx context.Context, method string, params jsontext.Value) (result jsontext.Value, e *Error, status int) {
	v, err := s.run(ctx, method, params)
	if err != nil {
		e, status, known := ErrorFor(err)
		if !known {
			s.log.Error("jsonrpc: call failed", "method", method, "err", err)
		}
		return nil, e, status
	}
	switch v := v.(type) {
	case jsontext.Value:
		return v, nil, http.StatusOK
	case json.RawMessage:
		return jsontext.Value(v), nil, http.StatusOK
	}
	out, err := jsonv2.Marshal(v, jsonv2.Deterministic(true))
	if err != nil {
		s.log.Error("jsonrpc: encoding a result", "method", method, "err", err)
		e, status, _ := ErrorFor(err)
		return nil, e, status
	}
	return out, nil, http.StatusOK
}

// run calls the handler; a panic is an internal error of this call, not a
// crash of the server.
func (s *Server) run(ctx context.Context, method string, params jsontext.Value) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in %s: %v\n%s", method, p, debug.Stack())
		}
	}()
	return s.h.ServeRPC(ctx, method, params)
}

// Close closes every WebSocket connection with "going away" and waits for
// their goroutines to end. HTTP servers are shut down by their owner.
func (s *Server) Close() error {
	s.conns.closeAll(websocket.StatusGoingAway, "server shutting down")
	return nil
}

// connSet counts and tracks open connections, so that the connection
// limit holds and Close can end them.
type connSet struct {
	mu      sync.Mutex
	n       int // reserved, accepted or not
	m       map[*Conn]struct{}
	closing bool
	wg      sync.WaitGroup
}

// reserve takes a connection slot; false when max are taken or the set is
// closing.
func (cs *connSet) reserve(max int) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closing || cs.n >= max {
		return false
	}
	cs.n++
	return true
}

func (cs *connSet) release() {
	cs.mu.Lock()
	cs.n--
	cs.mu.Unlock()
}

// track registers c for closeAll; false when the set is closing.
func (cs *connSet) track(c *Conn) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closing {
		return false
	}
	cs.m[c] = struct{}{}
	cs.wg.Add(1)
	return true
}

func (cs *connSet) untrack(c *Conn) {
	cs.mu.Lock()
	delete(cs.m, c)
	cs.mu.Unlock()
	cs.wg.Done()
}

func (cs *connSet) closeAll(code websocket.StatusCode, reason string) {
	cs.mu.Lock()
	cs.closing = true
	all := make([]*Conn, 0, len(cs.m))
	for c := range cs.m {
		all = append(all, c)
	}
	cs.mu.Unlock()
	for _, c := range all {
		c.Close(code, reason)
	}
	cs.wg.Wait()
}
