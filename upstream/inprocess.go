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

// InProcess is a node served in this process: an embedded devnet's
// JSON-RPC handler, called without a socket. Each call is the body a
// remote node would get, so the gateway treats an embedded devnet exactly
// as a remote node (same envelope, same errors, same failover), minus two
// trips through the kernel. A handler that can answer a body directly
// (Server: *jsonrpc.Server is one) is called so; any other http.Handler
// gets the HTTP POST.
type InProcess struct {
	h    http.Handler
	opts *Options
}

// Server answers a JSON-RPC body in-process, appending its answer to dst;
// *jsonrpc.Server is one.
type Server interface {
	Serve(ctx context.Context, body, dst []byte) ([]byte, int)
}

var (
	_ Node   = (*InProcess)(nil)
	_ Server = (*jsonrpc.Server)(nil)
)

// NewInProcess returns a node served by h. opts may be nil.
func NewInProcess(h http.Handler, opts *Options) *InProcess {
	if opts == nil {
		opts = &Options{}
	}
	return &InProcess{h: h, opts: opts}
}

// embeddedURL is the URL of the requests the handler sees.
const embeddedURL = "http://embedded.invalid/"

// Call serves one call through the handler. The handler runs on its own
// goroutine so that a call still ends at its deadline if the handler does
// not watch its context; a panic in it is a failure of this node, not of
// the gateway.
func (n *InProcess) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	body := jsonrpc.AppendRequest(nil, []byte(requestID), method, params)
	w := &responseBuffer{header: http.Header{}, limit: n.opts.maxResponse()}
	serve, err := n.serve(ctx, body, w)
	if err != nil {
		return nil, unavailable(err)
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("embedded node panicked: %v", p)
			}
		}()
		serve()
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
	if err := checkID(r); err != nil {
		return nil, err
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

// serve returns the function that answers body into w: the handler's own
// Serve when it has one, else an HTTP POST.
func (n *InProcess) serve(ctx context.Context, body []byte, w *responseBuffer) (func(), error) {
	if s, ok := n.h.(Server); ok {
		return func() {
			out, status := s.Serve(ctx, body, nil)
			w.WriteHeader(status)
			_, _ = w.Write(out)
		}, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, embeddedURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	req.RemoteAddr = "127.0.0.1:0"
	return func() { n.h.ServeHTTP(w, req) }, nil
}

// Close does nothing: the handler's owner stops it.
func (n *InProcess) Close() error { return nil }

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
