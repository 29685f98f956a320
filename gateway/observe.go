package gateway

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network"
)

// AccessLog configures the access log: one line per call at info level.
type AccessLog struct {
	// Sample is the share of calls logged, from 0 to 1; calls that failed
	// (no node answered, an internal error) are always logged. 0 logs only
	// those.
	Sample float64
}

// observer is what the gateway records about calls: metrics, traces and
// the access log. Its zero value records nothing, at no cost.
type observer struct {
	metrics *metrics.Metrics
	tracer  trace.Tracer // nil: no traces
	log     *slog.Logger // nil: no access log
	sample  float64
}

// on reports whether anything is recorded per call.
func (o *observer) on() bool { return o.metrics != nil || o.tracer != nil || o.log != nil }

// requestWatch is what the observers need of one request's calls while
// they run: when the request began, and each call's span, node and time.
type requestWatch struct {
	o     *observer
	began time.Time
	spans []trace.Span // nil without a tracer
	nodes []string
	took  []time.Duration
}

// watch starts watching a request; nil when nothing observes, at no cost.
func (o *observer) watch() *requestWatch {
	if !o.on() {
		return nil
	}
	return &requestWatch{o: o, began: time.Now()}
}

// calls sizes the watch for a request of n calls.
func (w *requestWatch) calls(n int) {
	if w == nil {
		return
	}
	w.nodes, w.took = make([]string, n), make([]time.Duration, n)
	if w.o.tracer != nil {
		w.spans = make([]trace.Span, n)
	}
}

// start begins call i's span and has the pool say which node answers.
func (w *requestWatch) start(ctx context.Context, i int, p *prepared) context.Context {
	if w.spans != nil {
		name := MethodGetCredits
		if p.m != nil {
			name = p.m.Name
		}
		ctx, w.spans[i] = w.o.tracer.Start(ctx, "portico "+name, trace.WithTimestamp(w.began))
	}
	p.served = &w.nodes[i]
	return ctx
}

// done notes when call i was answered.
func (w *requestWatch) done(i int) { w.took[i] = time.Since(w.began) }

// record records call i once its outcome and cost are final: the method
// it resolves to (the name the client used when the table has it,
// "unknown" when not), its outcome, node, time and credits.
func (w *requestWatch) record(ctx context.Context, rq request, c *jsonrpc.Call, p *prepared, out *outcome, credits int64, i int) {
	r := callRecord{network: rq.net.Name, key: rq.id.Name, out: out, node: w.nodes[i], credits: credits, took: w.took[i]}
	if r.took == 0 {
		r.took = time.Since(w.began) // refused before it ran
	}
	switch {
	case p.m != nil:
		r.method, r.name = p.m.Name, c.Method
	case c.Method == MethodGetCredits:
		r.method, r.name = c.Method, c.Method
	default:
		// Refused in its checks or its charge: named by the table when the
		// table has it, so that labels stay bounded.
		r.method, r.name = "unknown", "unknown"
		methods := rq.net.Methods
		if m := methods.Lookup(c.Method); m != nil {
			r.method, r.name = m.Name, c.Method
		} else if s := methods.subByName[c.Method]; s != nil {
			r.method, r.name = s.Method, c.Method
		} else if s := methods.unsubByName[c.Method]; s != nil {
			r.method, r.name = s.Unsubscribe, c.Method
		}
	}
	var span trace.Span
	if w.spans != nil {
		if span = w.spans[i]; span == nil {
			_, span = w.o.tracer.Start(ctx, "portico "+r.method, trace.WithTimestamp(w.began))
		}
	}
	w.o.record(ctx, &r, span)
}

// callRecord is what is known of one call once it is answered.
type callRecord struct {
	network, method, name string
	key                   string
	out                   *outcome
	node                  string
	credits               int64
	took                  time.Duration
}

// outcomeOf classifies a call's answer for the outcome label.
func outcomeOf(r *callRecord) (outcome string, code int) {
	err := r.out.Err
	if err == nil {
		return metrics.OutcomeOK, 0
	}
	e, _, known := jsonrpc.ErrorFor(err)
	code = int(e.Code)
	var rpcErr *jsonrpc.Error
	var up *portico.UpstreamError
	switch {
	case errors.Is(err, context.Canceled):
		return metrics.OutcomeCancelled, code
	case errors.As(err, &up):
		if r.node == "" {
			r.node = up.Upstream // the node that failed last
		}
		return metrics.OutcomeFailed, code
	case !known:
		return metrics.OutcomeFailed, code
	case r.node != "" && errors.As(err, &rpcErr):
		// A node answered with this error.
		return metrics.OutcomeNodeError, code
	}
	return metrics.OutcomeRefused, code
}

// record records one answered call: its counters, its span's attributes
// and end, and its access log line.
func (o *observer) record(ctx context.Context, r *callRecord, span trace.Span) {
	outcome, code := outcomeOf(r)
	if o.metrics != nil {
		o.metrics.Call(r.network, r.method, r.name, outcome, code, r.took.Seconds())
		if r.out.Cache == network.CacheHit || r.out.Cache == network.CacheMiss {
			o.metrics.Cache(r.network, r.method, r.out.Cache == network.CacheHit)
		}
	}
	if span != nil {
		if span.IsRecording() {
			span.SetAttributes(
				attribute.String("rpc.system", "jsonrpc"),
				attribute.String("rpc.method", r.method),
				attribute.String("portico.network", r.network),
				attribute.String("portico.key", r.key),
				attribute.String("portico.node", r.node),
				attribute.String("portico.cache", r.out.Cache.String()),
				attribute.Int64("portico.credits", r.credits),
				attribute.String("portico.outcome", outcome),
			)
			if code != 0 {
				span.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", code))
			}
			if outcome == metrics.OutcomeFailed {
				span.SetStatus(codes.Error, r.out.Err.Error())
			}
		}
		span.End()
	}
	if o.log != nil && (outcome == metrics.OutcomeFailed || (o.sample > 0 && (o.sample >= 1 || rand.Float64() < o.sample))) {
		o.log.LogAttrs(ctx, slog.LevelInfo, "call",
			slog.String("network", r.network), slog.String("method", r.method), slog.String("outcome", outcome),
			slog.Int("code", code), slog.Duration("took", r.took), slog.Int64("credits", r.credits),
			slog.String("key", r.key), slog.String("node", r.node), slog.String("cache", r.out.Cache.String()))
	}
}

// headerCarrier reads a client's trace context from its request headers.
type headerCarrier interface {
	Peek(key string) []byte
}

// peekCarrier is a read-only propagation.TextMapCarrier over fasthttp's
// request header.
type peekCarrier struct{ h headerCarrier }

func (c peekCarrier) Get(key string) string { return string(c.h.Peek(key)) }
func (c peekCarrier) Set(string, string)    {}
func (c peekCarrier) Keys() []string        { return []string{"traceparent", "tracestate"} }

// traceContext returns ctx with the client's trace context, when tracing
// is on and the client sent one: the gateway's spans join its trace.
func (o *observer) traceContext(ctx context.Context, h headerCarrier) context.Context {
	if o.tracer == nil || len(h.Peek("traceparent")) == 0 {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, peekCarrier{h})
}
