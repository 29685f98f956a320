package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/network/upstream"
)

// costMeter records what each call was charged, so that a test sees a
// reloaded cost applied.
type costMeter struct {
	mu    sync.Mutex
	costs []int64
}

func (m *costMeter) Charge(_ context.Context, _ apikey.Identity, items []metering.Item) (metering.Bill, error) {
	var total int64
	for _, it := range items {
		total += it.Cost
	}
	m.mu.Lock()
	m.costs = append(m.costs, total)
	m.mu.Unlock()
	return metering.Bill{Charged: total, Daily: 1 << 40}, nil
}

func (m *costMeter) Refund(context.Context, *metering.Bill, metering.Item) error { return nil }

func (m *costMeter) Balance(context.Context, apikey.Identity) (metering.Bill, error) {
	return metering.Bill{Daily: 1 << 40}, nil
}

func (m *costMeter) Speculate(apikey.Identity, int64) bool { return false }

func (m *costMeter) last() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.costs) == 0 {
		return -1
	}
	return m.costs[len(m.costs)-1]
}

// reloadEnv is a gateway on one shared listener whose networks a test
// replaces, each network's nodes one test node.
type reloadEnv struct {
	gw     *gateway.Gateway
	srv    *server
	meter  *costMeter
	cache  *network.Cache
	limits gateway.Limits
}

// newReloadEnv makes the parts; start starts the gateway.
func newReloadEnv(t *testing.T) *reloadEnv {
	t.Helper()
	e := &reloadEnv{meter: &costMeter{}, cache: network.NewCache(1<<20, nil)}
	t.Cleanup(e.cache.Close)
	e.limits = gateway.Limits{
		MaxBodyBytes: 4096, MaxBatch: 5, MaxWSMessageBytes: 4096, MaxConnections: 100, MaxWSConnections: 4,
		ReadTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second,
		WSIdleTimeout: time.Minute,
	}
	return e
}

func (e *reloadEnv) start(t *testing.T, nets ...*gateway.Network) {
	t.Helper()
	e.gw = gateway.New(gateway.Config{
		Keys:     apikey.NewSet(apikey.Entry{Name: "tester", Hash: apikey.Sum(testKey)}),
		Meter:    e.meter,
		Networks: nets,
		Limits:   e.limits,
	})
	e.srv = startServer(t, e.gw, e.gw.Handler())
	t.Cleanup(func() {
		e.gw.Close()
		e.srv.close()
	})
}

// network is a gateway network called name on one node, with costs.
func (e *reloadEnv) network(t *testing.T, name string, n *node, costs map[string]int) *gateway.Network {
	t.Helper()
	methods, err := gateway.NewMethods(testTable(), gateway.MethodsConfig{Costs: costs})
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool(upstream.PoolConfig{Network: name, Members: []upstream.Member{{Name: name, Node: upstream.NewHTTP(n.srv.URL, nil)}}})
	t.Cleanup(func() { pool.Close() })
	return served(name, methods, pool, e.cache, false, nil, nil, name+".localhost")
}

// withCosts is n with other costs and the same network.Network.
func withCosts(t *testing.T, n *gateway.Network, costs map[string]int) *gateway.Network {
	t.Helper()
	methods, err := gateway.NewMethods(testTable(), gateway.MethodsConfig{Costs: costs})
	if err != nil {
		t.Fatal(err)
	}
	return &gateway.Network{Name: n.Name, Hosts: n.Hosts, Methods: methods, Served: n.Served}
}

// post sends body to network's host on the shared listener.
func (e *reloadEnv) post(t *testing.T, network, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v3/"+testKey, strings.NewReader(body))
	req.Host = network + ".localhost"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const echo = `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":["hi"]}`

// TestReloadNetworks: a reload adds a network, changes a cost on one it
// keeps (whose network.Network is not retired), and removes one, which
// then answers -32048 on the shared listener and on its own.
func TestReloadNetworks(t *testing.T) {
	nodeA, nodeB := newNode(t), newNode(t)
	e := newReloadEnv(t)
	a := e.network(t, "a", nodeA, nil)
	e.start(t, a)
	own := startServer(t, e.gw, e.gw.NetworkHandler("a"))
	t.Cleanup(own.close)

	if code, body := e.post(t, "a", echo); code != 200 || !strings.Contains(body, `"hi"`) || e.meter.last() != 80 {
		t.Fatalf("before: %d %s, charged %d", code, body, e.meter.last())
	}
	if code, body := e.post(t, "b", echo); code != 404 || !strings.Contains(body, "-32048") {
		t.Fatalf("b before it is added: %d %s", code, body)
	}

	b := e.network(t, "b", nodeB, nil)
	retired, err := e.gw.Reload(gateway.Reload{Networks: []*gateway.Network{withCosts(t, a, map[string]int{"real_echo": 7}), b}, Limits: e.limits})
	if err != nil || len(retired) != 0 {
		t.Fatalf("reload: %v, retired %v", err, retired)
	}
	if code, body := e.post(t, "a", echo); code != 200 || e.meter.last() != 7 {
		t.Fatalf("a after its cost changed: %d %s, charged %d", code, body, e.meter.last())
	}
	before := nodeB.calls.Load()
	if code, body := e.post(t, "b", echo); code != 200 || !strings.Contains(body, `"hi"`) || nodeB.calls.Load() == before {
		t.Fatalf("b after it was added: %d %s", code, body)
	}

	retired, err = e.gw.Reload(gateway.Reload{Networks: []*gateway.Network{b}, Limits: e.limits})
	if err != nil || len(retired) != 1 || retired[0].Served != a.Served {
		t.Fatalf("reload without a: %v, retired %v", err, retired)
	}
	select {
	case <-retired[0].Idle:
	default:
		t.Fatal("a's network is not idle with nothing in flight")
	}
	if code, body := e.post(t, "a", echo); code != 404 || !strings.Contains(body, `"code":-32048`) || !strings.Contains(body, "unknown network host") {
		t.Fatalf("a after it was removed: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, own.URL+"/v3/"+testKey, strings.NewReader(echo))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), `network \"a\" is no longer served`) {
		t.Fatalf("a's own listener after it was removed: %d %s", resp.StatusCode, body)
	}
}

// TestReloadWaitsForCallsInFlight: a call that started before a reload
// replaced its network's nodes finishes on them, and the old network is
// idle only once it has.
func TestReloadWaitsForCallsInFlight(t *testing.T) {
	oldNode, newNode_ := newNode(t), newNode(t)
	entered, release := make(chan struct{}), make(chan struct{})
	oldNode.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		close(entered)
		<-release
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":"old"}`))
	})
	newNode_.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":"new"}`))
	})
	e := newReloadEnv(t)
	oldNet := e.network(t, "a", oldNode, nil)
	e.start(t, oldNet)

	type answer struct {
		code int
		body string
	}
	done := make(chan answer, 1)
	go func() {
		code, body := e.post(t, "a", echo)
		done <- answer{code, body}
	}()
	<-entered
	retired, err := e.gw.Reload(gateway.Reload{Networks: []*gateway.Network{e.network(t, "a", newNode_, nil)}, Limits: e.limits})
	if err != nil || len(retired) != 1 || retired[0].Served != oldNet.Served {
		t.Fatalf("reload: %v, retired %v", err, retired)
	}
	select {
	case <-retired[0].Idle:
		t.Fatal("the old network is idle with a call in flight")
	default:
	}
	if code, body := e.post(t, "a", echo); code != 200 || !strings.Contains(body, `"new"`) {
		t.Fatalf("a call after the reload: %d %s", code, body)
	}
	close(release)
	if a := <-done; a.code != 200 || !strings.Contains(a.body, `"old"`) {
		t.Fatalf("the call in flight: %d %s", a.code, a.body)
	}
	<-retired[0].Idle // closed once the call returned; a hang fails the test by its timeout
}

// TestReloadLimits: new calls are held to reloaded limits; a reload that
// changes a limit built into the servers is refused, naming the field,
// and changes nothing.
func TestReloadLimits(t *testing.T) {
	e := newReloadEnv(t)
	a := e.network(t, "a", newNode(t), nil)
	e.start(t, a)
	batch := "[" + strings.TrimSuffix(strings.Repeat(echo+",", 3), ",") + "]"
	if code, body := e.post(t, "a", batch); code != 200 || strings.Contains(body, "error") {
		t.Fatalf("a batch of 3 under max_batch 5: %d %s", code, body)
	}

	tests := []struct {
		name    string
		change  func(*gateway.Limits)
		wantErr string // "" when the reload is taken
		batchOK bool   // whether a batch of 3 passes after it
	}{
		{"server limit refused", func(l *gateway.Limits) { l.MaxBatch = 2; l.MaxBodyBytes = 1 << 20 }, "limits.max_body_bytes", true},
		{"timeout refused", func(l *gateway.Limits) { l.MaxBatch = 2; l.IdleTimeout = time.Hour }, "limits.idle_timeout", true},
		{"smaller batch", func(l *gateway.Limits) { l.MaxBatch = 2 }, "", false},
		{"bigger again", func(l *gateway.Limits) { l.MaxBatch = 10 }, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := e.limits
			tc.change(&l)
			_, err := e.gw.Reload(gateway.Reload{Networks: []*gateway.Network{a}, Limits: l})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, gateway.ErrNotReloadable)):
				t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
			}
			code, body := e.post(t, "a", batch)
			if ok := code == 200 && !strings.Contains(body, "error"); ok != tc.batchOK {
				t.Fatalf("a batch of 3: %d %s, want passed=%v", code, body, tc.batchOK)
			}
		})
	}
}

// TestReloadOpenWebSocket: an open WebSocket's next call is charged the
// reloaded cost; when its network is removed, the connection is closed
// with 1001 (going away).
func TestReloadOpenWebSocket(t *testing.T) {
	e := newReloadEnv(t)
	a := e.network(t, "a", newNode(t), nil)
	e.start(t, a)
	ctx := ctxT(t)
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/ws/v3/"+testKey, &websocket.DialOptions{Host: "a.localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	call := func() string {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte(echo)); err != nil {
			t.Fatal(err)
		}
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(msg)
	}
	if msg := call(); !strings.Contains(msg, `"hi"`) || e.meter.last() != 80 {
		t.Fatalf("before: %s, charged %d", msg, e.meter.last())
	}
	if _, err := e.gw.Reload(gateway.Reload{Networks: []*gateway.Network{withCosts(t, a, map[string]int{"real_echo": 3})}, Limits: e.limits}); err != nil {
		t.Fatal(err)
	}
	if msg := call(); !strings.Contains(msg, `"hi"`) || e.meter.last() != 3 {
		t.Fatalf("after the cost changed: %s, charged %d", msg, e.meter.last())
	}
	if _, err := e.gw.Reload(gateway.Reload{Networks: []*gateway.Network{}, Limits: e.limits}); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after its network was removed: read %v, want close 1001", err)
	}
}

// TestReloadKeepsSubscriptions: a reload that gives a network new nodes
// leaves the subscriptions opened before on the old nodes, which keep
// sending heads; new subscriptions go to the new nodes; the old network
// is idle once the last old subscription ends.
func TestReloadKeepsSubscriptions(t *testing.T) {
	chain := newFakeChain(t, 20*time.Millisecond, 0)
	oldNode, newNode_ := newFakeWSNode(t, chain), newFakeWSNode(t, chain)
	table := evm.Table()
	methods, err := gateway.NewMethods(table, gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	netOn := func(n *fakeWSNode) *gateway.Network {
		pool := upstream.NewPool(upstream.PoolConfig{Network: "net", Chain: table.Chain, PollInterval: 50 * time.Millisecond,
			Members: []upstream.Member{{Name: "node", Node: upstream.NewWebSocket(n.url(), nil)}}})
		if err := pool.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Close() })
		return served("net", methods, pool, nil, false, nil, nil)
	}
	limits := gateway.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 10, MaxBatchResponseBytes: 1 << 20, MaxWSMessageBytes: 1 << 20,
		MaxConnections: 100, MaxWSConnections: 100, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		IdleTimeout: 5 * time.Second, WSIdleTimeout: time.Minute, MaxSubscriptionsPerConnection: 10, MaxSubscriptionsPerKey: 100}
	old := netOn(oldNode)
	gw := gateway.New(gateway.Config{Keys: apikey.NewSet(apikey.Entry{Name: "tester", Hash: apikey.Sum(testKey)}),
		Networks: []*gateway.Network{old}, Limits: limits})
	srv := startServer(t, gw, gw.NetworkHandler("net"))
	t.Cleanup(func() { gw.Close(); srv.close() })
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/v3/" + testKey

	ctx := ctxT(t)
	c := subscribeHeads(t, url)
	if oldNode.subs.Load() != 1 {
		t.Fatalf("%d upstream subscriptions on the old node, want 1", oldNode.subs.Load())
	}
	retired, err := gw.Reload(gateway.Reload{Networks: []*gateway.Network{netOn(newNode_)}, Limits: limits})
	if err != nil || len(retired) != 1 || retired[0].Served != old.Served {
		t.Fatalf("reload: %v, retired %v", err, retired)
	}
	for range 3 {
		if _, err := readHead(ctx, c); err != nil {
			t.Fatalf("the subscription opened before the reload: %v", err)
		}
	}
	select {
	case <-retired[0].Idle:
		t.Fatal("the old network is idle with a subscription open on it")
	default:
	}
	subscribeHeads(t, url)
	if newNode_.subs.Load() != 1 {
		t.Fatalf("%d upstream subscriptions on the new node after a new client subscribed, want 1", newNode_.subs.Load())
	}
	c.CloseNow() // its subscription ends with it
	<-retired[0].Idle
}
