package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

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
	conns  Conns[struct{}]
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
	return &Server{h: h, limits: opts.Limits.withDefaults(), log: log}
}

// Serve answers a request body, appending the response to dst. It returns
// nil when nothing is to be sent (only notifications came), and the HTTP
// status of the answer.
func (s *Server) Serve(ctx context.Context, body, dst []byte) ([]byte, int) {
	calls, batch, err := DecodeBody(body, s.limits.MaxBatch)
	if err != nil {
		e, status, _ := ErrorFor(err)
		return AppendError(dst, nil, e), status
	}
	// Every call runs, notifications too, in order; then the answers are
	// assembled as the gateway assembles its own.
	answers := make([]answer, len(calls))
	for i := range calls {
		if c := &calls[i]; c.Err == nil {
			answers[i].result, answers[i].err, answers[i].status = s.call(ctx, c.Method, c.Params)
		} else {
			answers[i].err, answers[i].status, _ = ErrorFor(c.Err)
		}
	}
	status := http.StatusOK
	out, answered := AppendAnswers(dst, calls, batch, func(dst []byte, i int) []byte {
		a := &answers[i]
		if a.err != nil {
			status = a.status
			return AppendError(dst, calls[i].ID, a.err)
		}
		return AppendResult(dst, calls[i].ID, a.result)
	})
	switch {
	case !answered:
		return nil, http.StatusNoContent
	case batch:
		// A batch is answered with 200; each call carries its own error.
		return out, http.StatusOK
	}
	return out, status
}

// answer is one call's outcome: its result, or its error and the HTTP
// status a body of that call alone gets.
type answer struct {
	result jsontext.Value
	err    *Error
	status int
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
	s.conns.GoAway("server shutting down")
	return nil
}
