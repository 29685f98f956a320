package jsonrpc

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/porticohq/portico"
)

// ServeHTTP serves JSON-RPC over net/http: a POST body is answered through
// Serve, and a WebSocket upgrade on any path is served message by message
// through the same core.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && isUpgrade(r) {
		s.serveWebSocket(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, portico.ErrHTTPMethod)
		return
	}
	if !IsJSONContentType(r.Header.Get("Content-Type")) {
		writeError(w, portico.ErrWrongContentType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.limits.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, &portico.LimitError{Limit: portico.LimitBody, Max: s.limits.MaxBodyBytes})
			return
		}
		writeError(w, &Error{Code: CodeParseError, Message: "parse error: request body unreadable"})
		return
	}
	out, status := s.Serve(r.Context(), body, nil)
	if out == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, status, out)
}

// IsJSONContentType reports whether a Content-Type header names
// application/json, with or without parameters.
func IsJSONContentType(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// serveWebSocket accepts an upgrade within the connection limit and serves
// it until it ends.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	if !s.conns.Reserve(s.limits.MaxConnections) {
		w.Header().Set("Retry-After", "1")
		writeError(w, &portico.LimitError{Limit: portico.LimitConnections, Max: int64(s.limits.MaxConnections)})
		return
	}
	defer s.conns.Release()
	c, err := Accept(w, r, &websocket.AcceptOptions{
		// Nodes and devnets carry no ambient authority: any origin may
		// connect, as to a real node.
		InsecureSkipVerify: true,
	}, s.limits.Conn)
	if err != nil {
		return // Accept has answered the client
	}
	if !s.conns.Track(c, struct{}{}) {
		_ = c.ws.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	defer s.conns.Untrack(c)
	// The request's context ends with the connection's hijack; the
	// connection lives until Serve returns.
	c.Serve(context.WithoutCancel(r.Context()), func(ctx context.Context, body []byte) []byte {
		out, _ := s.Serve(ctx, body, nil)
		return out
	})
}

// isUpgrade reports whether r asks for a WebSocket.
func isUpgrade(r *http.Request) bool {
	return hasToken(r.Header.Get("Connection"), "upgrade") && hasToken(r.Header.Get("Upgrade"), "websocket")
}

// hasToken reports whether a comma-separated header value holds token,
// case-insensitively.
func hasToken(value, token string) bool {
	for _, t := range strings.Split(value, ",") {
		if strings.EqualFold(strings.TrimSpace(t), token) {
			return true
		}
	}
	return false
}

func writeError(w http.ResponseWriter, err error) {
	e, status, _ := ErrorFor(err)
	writeJSON(w, status, AppendError(nil, nil, e))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
