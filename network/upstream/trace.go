package upstream

import (
	"context"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// headerCarrier lets the W3C trace-context propagator write a request's
// traceparent and tracestate headers.
type headerCarrier struct{ h *fasthttp.RequestHeader }

func (c headerCarrier) Get(key string) string { return string(c.h.Peek(key)) }
func (c headerCarrier) Set(key, value string) { c.h.Set(key, value) }
func (c headerCarrier) Keys() []string {
	var keys []string
	for k := range c.h.All() {
		keys = append(keys, string(k))
	}
	return keys
}

// injectTrace sends the trace context of ctx's span to the node, so that a
// node that traces joins the caller's trace. Without a span it does
// nothing.
func injectTrace(ctx context.Context, h *fasthttp.RequestHeader) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagation.TraceContext{}.Inject(ctx, headerCarrier{h})
}
