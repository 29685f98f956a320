package gateway_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/store"
)

// meteredEnv is a gateway charging through a real meter over a SQLite
// store, with keys from the store: "tester" (1000 credits a day) and
// "poor" (50).
func meteredEnv(t *testing.T, o options) (e *env, rich, poor string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, rich, err = st.Create(ctx, store.KeySpec{Name: "tester", DailyCredits: 1000})
	if err != nil {
		t.Fatal(err)
	}
	_, poor, err = st.Create(ctx, store.KeySpec{Name: "poor", DailyCredits: 50})
	if err != nil {
		t.Fatal(err)
	}
	meter, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(st.Spent, nil), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meter.Close() })
	o.meter, o.auth = meter, store.NewAuthenticator(st, 0)
	return newEnv(t, o), rich, poor
}

// sample finds one series of a gathered metric family by its labels;
// nil when there is none.
func sample(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	m := sample(t, reg, name, labels)
	if m == nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// TestMetricsAndAccessLog: each kind of call moves the counters it should
// (outcome, code, method and name used, cache, credits after refunds,
// refusals by limit, node attempts) and logs one line with what an
// operator needs, never the key.
func TestMetricsAndAccessLog(t *testing.T) {
	m := metrics.New()
	e, rich, poor := meteredEnv(t, options{metrics: m, access: &gateway.AccessLog{Sample: 1}})
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		switch string(req["params"]) {
		case `["node error"]`:
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"error":{"code":-32000,"message":"execution reverted"}}`))
		case `["down"]`:
			http.Error(w, "down", http.StatusBadGateway)
		default:
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":"fine"}`))
		}
	})
	calls := []struct {
		key, body string
		// labels of the call's portico_calls_total series
		method, name, outcome, code string
	}{
		{rich, `{"jsonrpc":"2.0","id":1,"method":"real_checked","params":["ok"]}`, "real_checked", "real_checked", "ok", "0"},
		{rich, `{"jsonrpc":"2.0","id":2,"method":"seed_checked","params":["ok"]}`, "real_checked", "seed_checked", "ok", "0"},
		{rich, `{"jsonrpc":"2.0","id":3,"method":"real_checked","params":["bad"]}`, "real_checked", "real_checked", "refused", "-32602"},
		{rich, `{"jsonrpc":"2.0","id":4,"method":"no_such_method","params":[]}`, "unknown", "unknown", "refused", "-32601"},
		{rich, `{"jsonrpc":"2.0","id":5,"method":"test_echo","params":["node error"]}`, "real_echo", "test_echo", "node_error", "-32000"},
		{rich, `{"jsonrpc":"2.0","id":6,"method":"real_echo","params":["down"]}`, "real_echo", "real_echo", "failed", ""},
		{poor, `{"jsonrpc":"2.0","id":7,"method":"real_echo","params":["x"]}`, "real_echo", "real_echo", "refused", "-32005"},
	}
	reg := m.Registry()
	for _, c := range calls {
		_, body := e.post(t, c.key, c.body)
		labels := map[string]string{"network": "testnet", "method": c.method, "name": c.name, "outcome": c.outcome}
		if c.code != "" {
			labels["code"] = c.code
		}
		if got := counter(t, reg, "portico_calls_total", labels); got != 1 {
			t.Errorf("%s → %s: portico_calls_total%v = %v, want 1", c.body, body, labels, got)
		}
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"portico_cache_requests_total", map[string]string{"method": "real_checked", "result": "miss"}, 1},
		{"portico_cache_requests_total", map[string]string{"method": "real_checked", "result": "hit"}, 1},
		// Two checked calls (150 each) and the node's error (80) stay
		// charged; the call no node answered was refunded.
		{"portico_credits_charged_total", map[string]string{"key": "tester"}, 380},
		{"portico_calls_refused_total", map[string]string{"key": "poor", "limit": "daily"}, 1},
		{"portico_upstream_errors_total", map[string]string{"network": "testnet", "node": "primary"}, 1},
	}
	for _, c := range checks {
		if got := counter(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The checked call's miss, the node's error and the failure reached
	// the node; the hit and the refusals did not.
	if h := sample(t, reg, "portico_upstream_request_duration_seconds", map[string]string{"node": "primary"}); h == nil || h.GetHistogram().GetSampleCount() != 3 {
		t.Errorf("node attempts: %v", h)
	}
	if h := sample(t, reg, "portico_call_duration_seconds", map[string]string{"method": "real_echo"}); h == nil || h.GetHistogram().GetSampleCount() != 3 {
		t.Errorf("call durations of real_echo: %v", h)
	}

	logs := e.logs.String()
	for _, want := range []string{
		`msg=call network=testnet method=real_checked outcome=ok code=0`,
		`credits=150 key=tester node=primary cache=miss`,
		`credits=150 key=tester node="" cache=hit`,
		`method=real_echo outcome=node_error code=-32000`,
		`method=real_echo outcome=failed code=-32045`,
		`credits=0 key=tester node=primary cache=none`,
		`method=real_echo outcome=refused code=-32005`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the access log lacks %q:\n%s", want, logs)
		}
	}
	for _, secret := range []string{rich, poor} {
		if strings.Contains(logs, secret) {
			t.Fatal("a key reached the log")
		}
	}
}

// TestAccessLogSample: with a sample of 0 only calls that failed are
// logged.
func TestAccessLogSample(t *testing.T) {
	e := newEnv(t, options{access: &gateway.AccessLog{Sample: 0}})
	e.post(t, testKey, `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":["fine"]}`)
	if strings.Contains(e.logs.String(), "msg=call") {
		t.Fatalf("a call that passed was logged at sample 0:\n%s", e.logs.String())
	}
	e.node.srv.Close()
	e.post(t, testKey, `{"jsonrpc":"2.0","id":2,"method":"real_echo","params":["down"]}`)
	if !strings.Contains(e.logs.String(), "msg=call network=testnet method=real_echo outcome=failed") {
		t.Fatalf("a failed call was not logged:\n%s", e.logs.String())
	}
}

// TestTracing: a call's span joins the client's trace (traceparent), has
// one child per node attempt, and the node gets the attempt's context.
func TestTracing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	e := newEnv(t, options{tracer: tp.Tracer("portico")})
	var mu sync.Mutex
	var nodeSaw []string
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":"fine"}`))
	})
	inner := e.node.srv.Config.Handler
	e.node.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		nodeSaw = append(nodeSaw, r.Header.Get("traceparent"))
		mu.Unlock()
		inner.ServeHTTP(w, r)
	})

	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v3/"+testKey,
		strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"real_checked","params":["ok"]},{"jsonrpc":"2.0","id":2,"method":"real_echo","params":[1]}]`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+clientTrace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
		if got := s.SpanContext().TraceID().String(); got != clientTrace {
			t.Errorf("span %s is in trace %s, not the client's", s.Name(), got)
		}
	}
	call, attempt := byName["portico real_echo"], byName["upstream real_echo"]
	if call == nil || attempt == nil || byName["portico real_checked"] == nil || byName["upstream real_checked"] == nil {
		t.Fatalf("spans: %v", names(spans))
	}
	if attempt.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Errorf("the attempt's parent is %s, not the call %s", attempt.Parent().SpanID(), call.SpanContext().SpanID())
	}
	if call.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("the call's parent is %s, not the client's span", call.Parent().SpanID())
	}
	attrs := map[string]string{}
	for _, a := range call.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	for k, v := range map[string]string{"rpc.method": "real_echo", "portico.network": "testnet", "portico.node": "primary",
		"portico.key": "tester", "portico.cache": "none", "portico.outcome": "ok"} {
		if attrs[k] != v {
			t.Errorf("call span %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, tp := range nodeSaw {
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
		if sc.SpanID() == attempt.SpanContext().SpanID() && sc.TraceID().String() == clientTrace {
			found = true
		}
	}
	if !found {
		t.Errorf("the node saw traceparent %v, not the attempt %s", nodeSaw, attempt.SpanContext().SpanID())
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// TestCreditHeaders checks the credit headers of a metered call and of a
// WebSocket handshake, which tells the balance without charging.
func TestCreditHeaders(t *testing.T) {
	e, rich, _ := meteredEnv(t, options{})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v3/"+rich, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"real_echo","params":["x"]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	used, _ := strconv.ParseInt(resp.Header.Get(gateway.HeaderCreditsUsed), 10, 64)
	remaining, _ := strconv.ParseInt(resp.Header.Get(gateway.HeaderCreditsRemaining), 10, 64)
	tomorrow := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	if used <= 0 || remaining != 1000-used || resp.Header.Get(gateway.HeaderCreditsReset) != tomorrow.Format(time.RFC3339) {
		t.Fatalf("call headers: %v", resp.Header)
	}
	_, hs, err := dialWS(t, e, rich)
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{gateway.HeaderCreditsUsed: {"0"}, gateway.HeaderCreditsRemaining: {strconv.FormatInt(remaining, 10)}, gateway.HeaderCreditsReset: {tomorrow.Format(time.RFC3339)}}
	for k, v := range want {
		if got := hs.Header.Values(k); !slices.Equal(got, v) {
			t.Errorf("handshake %s: %q, want %q", k, got, v)
		}
	}
	if ct := hs.Header.Get("Content-Type"); ct != "" {
		t.Errorf("handshake Content-Type %q", ct)
	}
}
