package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/porticohq/portico/config"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsEndpoint: portico serve exports on /metrics of the shared
// listener what a call did, the nodes' state from head tracking and the
// Go runtime's; the access log has the call.
func TestMetricsEndpoint(t *testing.T) {
	s := start(t, config.DefaultConfig())
	if status, body := post(t, s.url(t, "evm-devnet"), `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}`); status != 200 || !strings.Contains(body, `"result":{`) {
		t.Fatalf("call: %d %s", status, body)
	}
	post(t, s.url(t, "evm-devnet"), `{"jsonrpc":"2.0","id":2,"method":"eth_getBlockByNumber","params":["nope",false]}`)
	status, text := get(t, "http://"+s.m.Shared+"/metrics")
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, text)
	}
	for _, want := range []string{
		`portico_calls_total{code="0",method="eth_getBlockByNumber",name="eth_getBlockByNumber",network="evm-devnet",outcome="ok"} 1`,
		`portico_calls_total{code="-32602",method="eth_getBlockByNumber",name="eth_getBlockByNumber",network="evm-devnet",outcome="refused"} 1`,
		`portico_call_duration_seconds_count{method="eth_getBlockByNumber",network="evm-devnet"} 2`,
		`portico_upstream_request_duration_seconds_count{network="evm-devnet",node="evm-devnet/embedded"} `,
		`portico_node_up{network="evm-devnet",node="evm-devnet/embedded"} 1`,
		`portico_node_up{network="solana-devnet",node="solana-devnet/embedded"} 1`,
		`portico_node_up{network="starknet-devnet",node="starknet-devnet/embedded"} 1`,
		`portico_node_lag_blocks{network="evm-devnet",node="evm-devnet/embedded"} 0`,
		`portico_credits_charged_total{key="dev"} `,
		`portico_websocket_connections 0`,
		`go_goroutines `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(text, s.m.Key) {
		t.Fatal("a key is in the metrics")
	}
	if !strings.Contains(s.logs.String(), `msg=call network=evm-devnet method=eth_getBlockByNumber outcome=ok code=0`) {
		t.Errorf("no access-log line for the call:\n%s", s.logs)
	}
}

// TestReadyz: ready with every network's devnet, the store and the meter;
// a network whose only node is down makes it 503 and names the network.
func TestReadyz(t *testing.T) {
	s := start(t, config.DefaultConfig())
	status, body := get(t, "http://"+s.m.Shared+"/readyz")
	var r readiness
	if err := json.Unmarshal([]byte(body), &r); err != nil || status != 200 || !r.Ready {
		t.Fatalf("/readyz: %d %s", status, body)
	}
	for _, check := range []string{"network evm-devnet", "network solana-devnet", "network starknet-devnet", "store", "meter"} {
		if r.Checks[check] != "ok" {
			t.Errorf("check %q: %q", check, r.Checks[check])
		}
	}

	// A node nobody listens at: the network is not ready.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/secret-path"
	ln.Close()
	cfg := config.DefaultConfig()
	cfg.Networks = []config.Network{{Name: "mainnet", Family: "evm", Upstreams: []config.Upstream{{URL: dead}}, PollInterval: 100 * time.Millisecond}}
	s = start(t, cfg)
	status, body = get(t, "http://"+s.m.Shared+"/readyz")
	if err := json.Unmarshal([]byte(body), &r); err != nil || status != 503 || r.Ready || r.Checks["network mainnet"] == "ok" || r.Checks["store"] != "ok" {
		t.Fatalf("/readyz with a dead node: %d %s", status, body)
	}
	t.Logf("/readyz with a dead node: %s", body)
	if strings.Contains(body, "secret-path") {
		t.Fatalf("/readyz shows a node URL's path: %s", body)
	}
	// /healthz says only that the process is up.
	if status, body := get(t, "http://"+s.m.Shared+"/healthz"); status != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", status, body)
	}
}

// TestMetricsListen: with metrics.listen, /metrics and /readyz are served
// there and the shared listener no longer answers /metrics.
func TestMetricsListen(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Metrics.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	if status, text := get(t, "http://"+s.m.MetricsAddr+"/metrics"); status != 200 || !strings.Contains(text, "portico_node_up") {
		t.Fatalf("metrics listener: %d", status)
	}
	if status, body := get(t, "http://"+s.m.MetricsAddr+"/readyz"); status != 200 || !strings.Contains(body, `"ready":true`) {
		t.Fatalf("metrics listener /readyz: %d %s", status, body)
	}
	if status, _ := get(t, "http://"+s.m.Shared+"/metrics"); status != 404 {
		t.Fatalf("shared listener /metrics: %d, want 404", status)
	}
}

// otlpReceiver is an OTLP/HTTP trace collector: it decodes what the
// exporter posts to /v1/traces.
type otlpReceiver struct {
	mu    sync.Mutex
	spans map[string]map[string]string // span name → attributes
	trace map[string]string            // span name → trace id
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "unexpected "+req.URL.Path, http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.ResourceSpans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				attrs := map[string]string{"service.name": service}
				for _, a := range sp.Attributes {
					attrs[a.Key] = a.Value.GetStringValue()
				}
				r.spans[sp.Name] = attrs
				r.trace[sp.Name] = string(sp.TraceId)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Write(out)
}

// TestTracingOTLP: the standard OTEL_EXPORTER_OTLP_ENDPOINT turns traces
// on; a call's span and its attempt's reach the collector in one trace
// when portico stops.
func TestTracingOTLP(t *testing.T) {
	rcv := &otlpReceiver{spans: map[string]map[string]string{}, trace: map[string]string{}}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	s := start(t, config.DefaultConfig())
	if s.m.Tracer() == nil {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	if status, body := post(t, s.url(t, "evm-devnet"), `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x0",false]}`); status != 200 {
		t.Fatalf("call: %d %s", status, body)
	}
	if err := s.m.Close(); err != nil { // flushes the spans
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	call, attempt := rcv.spans["portico eth_getBlockByNumber"], rcv.spans["upstream eth_getBlockByNumber"]
	if call == nil || attempt == nil {
		t.Fatalf("spans received: %v", rcv.spans)
	}
	if rcv.trace["portico eth_getBlockByNumber"] != rcv.trace["upstream eth_getBlockByNumber"] {
		t.Error("the attempt is in another trace than its call")
	}
	for k, v := range map[string]string{"service.name": "portico", "rpc.method": "eth_getBlockByNumber", "portico.network": "evm-devnet",
		"portico.node": "evm-devnet/embedded", "portico.key": "dev", "portico.outcome": "ok"} {
		if call[k] != v {
			t.Errorf("call span %s = %q, want %q", k, call[k], v)
		}
	}
	if attempt["portico.node"] != "evm-devnet/embedded" {
		t.Errorf("attempt span: %v", attempt)
	}
}
