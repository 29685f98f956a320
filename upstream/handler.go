package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// Handler is a Node served by an http.Handler in this process: an
// embedded devnet's JSON-RPC handler. Each call is the HTTP POST a remote
// node would get, handed to the handler without a socket, so the gateway
// treats an embedded devnet exactly as a remote node (same envelope, same
// errors, same failover), minus two trips through the kernel.
type Handler struct {
	h     http.Handler
	allow func(method string) bool
	opts  *Options
}

var _ Node = (*Handler)(nil)

// NewHandler returns a node served by h. allow, when not nil, names the
// methods the node offers: others get the method-not-found answer a node
// gives, without reaching h (an in-process handler may serve namespaces
// its HTTP endpoint keeps private). opts may be nil.
func NewHandler(h http.Handler, allow func(method string) bool, opts *Options) *Handler {
	if opts == nil {
		opts = &Options{}
	}
	return &Handler{h: h, allow: allow, opts: opts}
}

// embeddedURL is the URL of the requests the handler sees.
const embeddedURL = "http://embedded.invalid/"

// Call serves one call through the handler. The handler runs on its own
// goroutine so that a call still ends at its deadline if the handler does
// not watch its context; a panic in it is a failure of this node, not of
// the gateway.
func (n *Handler) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	if n.allow != nil && !n.allow(method) {
		// geth's words for a method outside its enabled namespaces.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the method " + method + " does not exist/is not available"}
	}
	body := jsonrpc.AppendRequest(nil, []byte("1"), method, params)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, embeddedURL, bytes.NewReader(body))
	if err != nil {
		return nil, unavailable(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	req.RemoteAddr = "127.0.0.1:0"
	w := &responseBuffer{header: http.Header{}, limit: n.opts.maxResponse()}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("embedded node panicked: %v", p)
			}
		}()
		n.h.ServeHTTP(w, req)
		done <- nil
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		return nil, classify(ctx, ctx.Err())
	}
	switch {
	case err != nil:
		return nil, unavailable(err)
	case w.tooBig:
		return nil, unavailable(errors.New("response larger than the upstream response limit"))
	case w.status >= 500 || w.status == http.StatusTooManyRequests:
		return nil, unavailable(fmt.Errorf("HTTP %d", w.status))
	}
	r, err := jsonrpc.DecodeResponse(w.body)
	if err != nil {
		return nil, unavailable(fmt.Errorf("HTTP %d: %v", w.status, err))
	}
	if r.Error != nil {
		return nil, r.Error
	}
	if dst == nil {
		// The buffer is this call's own: the result may alias it.
		return r.Result, nil
	}
	return append(dst, r.Result...), nil
}

// Close does nothing: the handler's owner stops it.
func (n *Handler) Close() error { return nil }

// responseBuffer is the ResponseWriter of one embedded call.
type responseBuffer struct {
	header http.Header
	status int
	body   []byte
	limit  int64
	tooBig bool
}

func (w *responseBuffer) Header() http.Header { return w.header }

func (w *responseBuffer) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseBuffer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if int64(len(w.body)+len(p)) > w.limit {
		w.tooBig = true
		return 0, errors.New("response larger than the upstream response limit")
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

// Flush lets handlers that flush (geth's does) do so.
func (w *responseBuffer) Flush() {}
