package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

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

// Call is Send with the node's own bound and no budget.
func (n *InProcess) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	return n.Send(ctx, method, params, Limits{}, dst)
}

// Send serves one call through the handler. The handler runs on its own
// goroutine so that a call still ends at its deadline if the handler does
// not watch its context; a panic in it is a failure of this node, not of
// the gateway.
//
// The answer is bounded and charged as the handler writes it; a handler
// that answers a body directly (Server) has built the whole answer before
// it is seen, so that one is bounded and charged at once.
func (n *InProcess) Send(ctx context.Context, method string, params jsontext.Value, lim Limits, dst []byte) (jsontext.Value, error) {
	body := jsonrpc.AppendRequest(nil, []byte(requestID), method, params)
	maxResult := lim.bound(n.opts)
	w := &responseBuffer{header: http.Header{}, maxResult: maxResult, hold: holding{budget: lim.Budget}}
	defer w.close()
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
	case w.err != nil:
		return nil, w.err
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
	if int64(len(r.Result)) > maxResult {
		return nil, errResult(maxResult)
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
			w.adopt(out)
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

// responseBuffer is the ResponseWriter of one embedded call. It bounds
// and charges what the handler writes; once the call has returned (the
// handler may still run after a timeout), it takes nothing more.
type responseBuffer struct {
	header    http.Header
	maxResult int64

	mu     sync.Mutex
	status int
	body   []byte
	hold   holding
	err    error // the bound or budget the answer passed
	closed bool
}

func (w *responseBuffer) Header() http.Header { return w.header }

func (w *responseBuffer) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeader(status)
}

func (w *responseBuffer) writeHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(len(p)); err != nil {
		return 0, err
	}
	if cap(w.body)-len(w.body) < len(p) {
		w.body = grow(w.body, 0, len(p), bodyBound(w.maxResult))
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

// adopt takes a whole answer the buffer may keep as it is.
func (w *responseBuffer) adopt(out []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.body) > 0 {
		if w.check(len(out)) == nil {
			w.body = append(w.body, out...)
		}
		return
	}
	if w.check(len(out)) == nil {
		w.body = out
	}
}

// check checks and charges n more bytes of answer.
func (w *responseBuffer) check(n int) error {
	w.writeHeader(http.StatusOK)
	switch {
	case w.err != nil:
		return w.err
	case w.closed:
		return errors.New("call ended")
	}
	size := int64(len(w.body) + n)
	if size > bodyBound(w.maxResult) {
		w.err = errResult(w.maxResult)
		return w.err
	}
	if err := w.hold.upTo(size, readChunk); err != nil {
		w.err = err
		return err
	}
	return nil
}

// close gives back what the answer took, when the call returns.
func (w *responseBuffer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.hold.release()
}

// Flush lets handlers that flush (geth's does) do so.
func (w *responseBuffer) Flush() {}
