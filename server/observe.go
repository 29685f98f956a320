package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/network/upstream"
)

// tracingOn reports whether traces are exported: the config names an
// endpoint or the standard OTLP variables do, and the SDK is not turned
// off by OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none.
func tracingOn(c config.Tracing, getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return c.Endpoint != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newTracing starts the OTLP/HTTP trace exporter when tracing is on; the
// returned shutdown flushes the spans not yet sent. With tracing off it
// returns a nil tracer.
func newTracing(ctx context.Context, c config.Tracing, version string) (trace.Tracer, func(context.Context) error, error) {
	if !tracingOn(c, os.Getenv) {
		return nil, nil, nil
	}
	var opts []otlptracehttp.Option
	if c.Endpoint != "" {
		// Like OTEL_EXPORTER_OTLP_ENDPOINT, the endpoint is the collector's
		// base URL; traces go under /v1/traces.
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(c.Endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceVersion(version)))
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		if res, err = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName("portico"))); err != nil {
			return nil, nil, fmt.Errorf("tracing: %w", err)
		}
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if r := c.SampleRatio; r != nil {
		popts = append(popts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
	}
	tp := sdktrace.NewTracerProvider(popts...)
	return tp.Tracer("github.com/porticohq/portico"), tp.Shutdown, nil
}

// readyTimeout bounds each readiness check.
const readyTimeout = 2 * time.Second

// Readiness is the answer of /readyz: ready, and each check's result.
type Readiness struct {
	Ready  bool              `json:"ready"`
	Checks map[string]string `json:"checks"`
}

// ready runs the Readiness checks: every network has a usable node (or
// its devnet), the store and the meter answer.
func (m *Server) ready(ctx context.Context) Readiness {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	r := Readiness{Ready: true, Checks: map[string]string{}}
	check := func(name string, err error) {
		if err != nil {
			r.Ready = false
			r.Checks[name] = err.Error()
			return
		}
		r.Checks[name] = "ok"
	}
	if cur := m.cur.Load(); cur != nil {
		for _, sn := range cur.nets {
			// Nodes are named by label or redacted URL: no secret here.
			check("network "+sn.cfg.Name, sn.res.pool.Ready())
		}
	}
	check("store", m.Store.Ping(ctx))
	if m.Meter != nil {
		check("meter", m.Meter.Ping(ctx))
	}
	return r
}

// readyHandler serves /readyz: 200 when ready, else 503, with the checks
// as JSON either way.
func (m *Server) readyHandler(ctx *fasthttp.RequestCtx) {
	r := m.ready(context.Background())
	if !r.Ready {
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
	}
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetContentType("application/json")
	b, _ := json.Marshal(r)
	ctx.SetBody(append(b, '\n'))
}

// metricsHandler serves the metrics in Prometheus' text format.
func (m *Server) metricsHandler() fasthttp.RequestHandler {
	return fasthttpadaptor.NewFastHTTPHandler(m.metrics.Handler())
}

// listenMetrics serves /metrics (and /readyz) on a listener of their own.
func (m *Server) listenMetrics(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("metrics.listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.metrics.Handler())
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := m.ready(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rd)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	m.closers = append(m.closers, closerFunc(func() { _ = srv.Close() }))
	go srv.Serve(ln)
	return ln.Addr().String(), nil
}

// opsRoutes serves /readyz, and /metrics unless it has a listener of its
// own, on the shared listener in front of next.
func (m *Server) opsRoutes(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	var metricsHandler fasthttp.RequestHandler
	if m.metrics != nil && m.Config.Metrics.Listen == "" {
		metricsHandler = m.metricsHandler()
	}
	return func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/readyz":
			m.readyHandler(ctx)
		case "/metrics":
			if metricsHandler != nil {
				metricsHandler(ctx)
				return
			}
			next(ctx)
		default:
			next(ctx)
		}
	}
}

// attemptObserver records a network's node attempts in the metrics.
func (m *Server) attemptObserver(network string) func(node string, took time.Duration, failed bool) {
	if m.metrics == nil {
		return nil
	}
	return func(node string, took time.Duration, failed bool) {
		m.metrics.Upstream(network, node, took.Seconds(), failed)
	}
}

// nodeStates returns every network's node states, for the metrics.
func (m *Server) nodeStates() map[string][]upstream.NodeState {
	cur := m.cur.Load()
	if cur == nil {
		return nil
	}
	out := make(map[string][]upstream.NodeState, len(cur.nets))
	for _, sn := range cur.nets {
		out[sn.cfg.Name] = sn.res.pool.Nodes()
	}
	return out
}
