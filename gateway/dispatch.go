package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/apikey"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/upstream"
)

// maxBatchParallel bounds how many calls of one batch run at once, so that
// one client's batch cannot take every upstream connection.
const maxBatchParallel = 16

// request is one body being served, over either transport.
type request struct {
	net *Network
	id  apikey.Identity
}

// outcome is the answer to one call: result bytes or an error.
type outcome struct {
	result jsontext.Value
	err    error
}

// handle answers a request body, appending the response to dst. It returns
// nil when nothing is to be sent (only notifications) and the HTTP status
// the response should carry.
func (g *Gateway) handle(ctx context.Context, rq request, body, dst []byte) ([]byte, int) {
	calls, batch, derr := jsonrpc.Decode(body)
	if derr != nil {
		e, status, _ := wireError(derr)
		return jsonrpc.AppendError(dst, nil, e), status
	}
	if batch && len(calls) > g.limits.MaxBatch {
		e, status, _ := wireError(&portico.LimitError{Limit: portico.LimitBatch, Max: int64(g.limits.MaxBatch), Got: int64(len(calls))})
		return jsonrpc.AppendError(dst, nil, e), status
	}
	if !batch {
		c := calls[0]
		out := g.call(ctx, rq, &c)
		if c.IsNotification() && c.Err == nil {
			return nil, 204
		}
		return g.appendOutcome(dst, c.ID, out, true)
	}

	outs := make([]outcome, len(calls))
	if len(calls) == 1 {
		outs[0] = g.call(ctx, rq, &calls[0])
	} else {
		sem := make(chan struct{}, maxBatchParallel)
		var wg sync.WaitGroup
		for i := range calls {
			sem <- struct{}{}
			wg.Go(func() {
				outs[i] = g.call(ctx, rq, &calls[i])
				<-sem
			})
		}
		wg.Wait()
	}
	start := len(dst)
	dst = append(dst, '[')
	for i, c := range calls {
		if c.IsNotification() && c.Err == nil {
			continue
		}
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		dst, _ = g.appendOutcome(dst, c.ID, outs[i], false)
	}
	if len(dst) == start+1 {
		return dst[:start], 204 // a batch of notifications gets no answer
	}
	return append(dst, ']'), 200
}

// appendOutcome writes one response object. For a single call the status
// follows the error; inside a batch it is always 200.
func (g *Gateway) appendOutcome(dst []byte, id jsontext.Value, out outcome, single bool) ([]byte, int) {
	if out.err == nil {
		return jsonrpc.AppendResult(dst, id, out.result), 200
	}
	e, status, known := wireError(out.err)
	if !known && !errors.Is(out.err, context.Canceled) {
		g.log.Error("internal error", "err", out.err)
	}
	if !single {
		status = 200
	}
	return jsonrpc.AppendError(dst, id, e), status
}

// call serves one call: method, params, cache, upstream.
func (g *Gateway) call(ctx context.Context, rq request, c *jsonrpc.Call) outcome {
	if c.Err != nil {
		return outcome{err: c.Err}
	}
	m := rq.net.Methods.Lookup(c.Method)
	if m == nil {
		return outcome{err: &portico.MethodNotFoundError{Method: c.Method}}
	}
	params := c.Params
	if m.Params != nil {
		p, err := m.Params(c.Params)
		if err != nil {
			return outcome{err: err}
		}
		params = p
	}
	var key string
	if g.cache != nil && m.Cacheable != nil {
		key = upstream.Key(rq.net.Name, m.Name, params)
		if res, ok := g.cache.Get(key); ok {
			return outcome{result: res}
		}
	}
	res, err := rq.net.Upstream.Call(ctx, m.Name, params)
	if err != nil {
		var up *portico.UpstreamError
		if errors.As(err, &up) {
			g.log.Warn("upstream call failed", "network", rq.net.Name, "method", m.Name, "key", rq.id.Name, "err", err)
		}
		return outcome{err: err}
	}
	if key != "" && m.Cacheable(params, res) {
		g.cache.Set(key, res)
	}
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.Debug("call", "network", rq.net.Name, "method", m.Name, "key", rq.id.Name, "bytes", len(res))
	}
	return outcome{result: res}
}
