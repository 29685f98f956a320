package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/network/upstream"
)

// testKey is the one key the test gateways accept.
const testKey = "0123456789abcdef0123456789abcdef"

// testTable is a small family table: one validated, cacheable method with a
// stand-in alias, one allowlisted method, alias prefix test_ for real_.
func testTable() portico.Table {
	return portico.Table{
		Family: "evm",
		Methods: []portico.Method{{
			Name:    "real_checked",
			Aliases: []string{"seed_checked"},
			Cost:    150,
			Params: func(p jsontext.Value) (portico.Params, error) {
				if string(p) != `["ok"]` {
					return portico.Params{}, &portico.ParamsError{Position: 1, Field: "word", Reason: `want "ok"`}
				}
				return portico.Params{Send: jsontext.Value(`["ok","added"]`), Cache: portico.Immutable}, nil
			},
		}},
		DefaultCost:   80,
		DefaultAllow:  []string{"real_echo", "real_slow"},
		AliasPrefixes: map[string]string{"test_": "real_"},
	}
}

// node is a test upstream: it answers real_echo with its params, records
// every call, and lets a test replace its behaviour.
type node struct {
	srv   *httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	last  string
	reply func(w http.ResponseWriter, req map[string]jsontext.Value)
}

func newNode(t testing.TB) *node {
	n := &node{}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		n.mu.Lock()
		n.last = string(body)
		reply := n.reply
		n.mu.Unlock()
		var req map[string]jsontext.Value
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if reply != nil {
			reply(w, req)
			return
		}
		params := req["params"]
		if params == nil {
			params = jsontext.Value("null")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonrpc.AppendResult(nil, req["id"], params))
	}))
	t.Cleanup(n.srv.Close)
	return n
}

func (n *node) setReply(f func(w http.ResponseWriter, req map[string]jsontext.Value)) {
	n.mu.Lock()
	n.reply = f
	n.mu.Unlock()
}

func (n *node) lastBody() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last
}

// env is a gateway under test with its upstream and log.
type env struct {
	gw   *gateway.Gateway
	srv  *server
	node *node
	logs *syncBuffer
}

type options struct {
	limits  func(*gateway.Limits)
	members func(n *node) []upstream.Member
	pool    upstream.PoolConfig
	meter   gateway.Meter
	keys    []apikey.Entry // beside the test key
	// auth replaces the key set when set.
	auth    gateway.Authenticator
	metrics *metrics.Metrics
	tracer  trace.Tracer
	access  *gateway.AccessLog
	// logger replaces the test log (which is at debug level).
	logger     *slog.Logger
	noCoalesce bool
	// table replaces testTable when set.
	table func() portico.Table
	// keyTTL is Config.KeyTTL.
	keyTTL time.Duration
}

func newEnv(t testing.TB, o options) *env {
	t.Helper()
	e := &env{node: newNode(t), logs: &syncBuffer{}}
	table := testTable
	if o.table != nil {
		table = o.table
	}
	methods, err := gateway.NewMethods(table(), gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	members := []upstream.Member{{Name: "primary", Node: upstream.NewHTTP(e.node.srv.URL+"/secret-path?apikey=s3cret", nil)}}
	if o.members != nil {
		members = o.members(e.node)
	}
	pc := o.pool
	pc.Network, pc.Members = "testnet", members
	limits := gateway.Limits{
		MaxBodyBytes: 4096, MaxBatch: 5, MaxWSMessageBytes: 4096, MaxConnections: 100, MaxWSConnections: 4,
		ReadTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second,
		WSIdleTimeout: time.Minute,
	}
	if o.limits != nil {
		o.limits(&limits)
	}
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if o.logger != nil {
		logger = o.logger
	}
	cache := network.NewCache(1<<20, nil)
	t.Cleanup(cache.Close)
	var keys gateway.Authenticator = apikey.NewSet(append(o.keys, apikey.Entry{Name: "tester", Hash: apikey.Sum(testKey)})...)
	if o.auth != nil {
		keys = o.auth
	}
	if o.metrics != nil {
		pc.OnAttempt = func(node string, took time.Duration, failed bool) {
			o.metrics.Upstream("testnet", node, took.Seconds(), failed)
		}
	}
	pc.Tracer = o.tracer
	pool := upstream.NewPool(pc)
	e.gw = gateway.New(gateway.Config{
		Keys:      keys,
		Metrics:   o.metrics,
		Tracer:    o.tracer,
		AccessLog: o.access,
		Networks:  []*gateway.Network{served("testnet", methods, pool, cache, o.noCoalesce, o.meter, o.metrics, "testnet.localhost")},
		Limits:    limits,
		Meter:     o.meter,
		Logger:    logger,
		KeyTTL:    o.keyTTL,
	})
	e.srv = startServer(t, e.gw, e.gw.NetworkHandler("testnet"))
	t.Cleanup(func() {
		e.gw.Close()
		e.srv.close()
		pool.Close()
		if strings.Contains(e.logs.String(), testKey) || strings.Contains(e.logs.String(), "s3cret") || strings.Contains(e.logs.String(), "secret-path") {
			t.Errorf("a secret reached the log:\n%s", e.logs.String())
		}
	})
	return e
}

// served is a gateway network served by a network of pool's nodes.
func served(name string, methods *gateway.Methods, pool *upstream.Pool, cache *network.Cache, noCoalesce bool, meter gateway.Meter, m *metrics.Metrics, hosts ...string) *gateway.Network {
	var nm network.Meter
	if meter != nil {
		nm = meter
	}
	return &gateway.Network{Name: name, Hosts: hosts, Methods: methods, Served: network.New(network.Config{
		Name: name, Upstream: pool, Tags: methods.Chain().Tags, KeyForm: methods.KeyForm(), Subs: methods.Subscriptions(), Cache: cache, NoCoalesce: noCoalesce,
		Meter: nm, Metrics: m})}
}

// server is a gateway listener on a loopback port, as portico serve runs
// one.
type server struct {
	URL string
	srv *fasthttp.Server
	ln  net.Listener
}

// startServer serves h with the gateway's server settings and its
// connection-limiting listener.
func startServer(t testing.TB, gw *gateway.Gateway, h fasthttp.RequestHandler) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{URL: "http://" + ln.Addr().String(), srv: gw.NewServer(h), ln: ln}
	go s.srv.Serve(gw.Listener(ln))
	return s
}

func (s *server) close() {
	_ = s.srv.Shutdown()
	_ = s.ln.Close() // Shutdown misses a Serve that had not started yet
}

// post sends body to /v3/<key> and returns status and response body.
func (e *env) post(t *testing.T, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v3/"+key, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
