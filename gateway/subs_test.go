package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/store"
)

// fakeChain is an EVM chain that grows one block every period; the fake
// nodes in front of it send its heads to their newHeads subscriptions.
type fakeChain struct {
	mu      sync.Mutex
	head    uint64
	pad     string // makes headers as large as a test wants
	waiters []chan uint64
	stop    chan struct{}
	halted  sync.Once
	gen     map[uint64]uint64 // a block's branch: a reorg gives it another hash
}

// halt stops the chain from growing.
func (c *fakeChain) halt() { c.halted.Do(func() { close(c.stop) }) }

func newFakeChain(t testing.TB, period time.Duration, pad int) *fakeChain {
	c := &fakeChain{head: 100, pad: strings.Repeat("0", pad), stop: make(chan struct{}), gen: map[uint64]uint64{}}
	go func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
			c.mu.Lock()
			c.head++
			h, ws := c.head, c.waiters
			c.waiters = nil
			c.mu.Unlock()
			for _, w := range ws {
				w <- h
			}
		}
	}()
	t.Cleanup(c.halt)
	return c
}

// next waits for the block after the one it last saw.
func (c *fakeChain) next() <-chan uint64 {
	ch := make(chan uint64, 1)
	c.mu.Lock()
	c.waiters = append(c.waiters, ch)
	c.mu.Unlock()
	return ch
}

func (c *fakeChain) header(n uint64) string {
	return fmt.Sprintf(`{"number":"0x%x","hash":"%s","parentHash":"%s","extraData":"0x%s"}`, n, c.hash(n), c.hash(n-1), c.pad)
}

// hash is block n's hash on the chain's current branch.
func (c *fakeChain) hash(n uint64) string {
	c.mu.Lock()
	g := c.gen[n]
	c.mu.Unlock()
	return fmt.Sprintf("0x%064x", n|g<<48)
}

// number finds the block of a hash on the current branch.
func (c *fakeChain) number(hash string) (uint64, bool) {
	var v uint64
	if _, err := fmt.Sscanf(hash, "0x%x", &v); err != nil {
		return 0, false
	}
	n := v & (1<<48 - 1)
	return n, c.hash(n) == hash
}

// reorg gives the newest depth blocks new hashes and sends the new head
// to the subscribers, as a node that switched branch does.
func (c *fakeChain) reorg(depth uint64) {
	c.mu.Lock()
	for n := c.head - depth + 1; n <= c.head; n++ {
		c.gen[n]++
	}
	h, ws := c.head, c.waiters
	c.waiters = nil
	c.mu.Unlock()
	for _, w := range ws {
		w <- h
	}
}

// fakeWSNode is an EVM node over WebSocket in front of a fakeChain: it
// answers head tracking, blocks by number, and newHeads subscriptions,
// counting them.
type fakeWSNode struct {
	chain *fakeChain
	subs  atomic.Int64
	// lag is how many blocks the node is behind the chain.
	lag atomic.Uint64
	srv *jsonrpc.Server
	hs  *httptest.Server
}

func newFakeWSNode(t testing.TB, chain *fakeChain) *fakeWSNode {
	n := &fakeWSNode{chain: chain}
	n.srv = jsonrpc.NewServer(jsonrpc.HandlerFunc(n.serve), jsonrpc.ServerOptions{})
	n.hs = httptest.NewServer(n.srv)
	t.Cleanup(n.kill)
	return n
}

func (n *fakeWSNode) url() string { return "ws" + strings.TrimPrefix(n.hs.URL, "http") }

// kill closes the node's connections and listener.
func (n *fakeWSNode) kill() {
	n.srv.Close()
	n.hs.Close()
}

func (n *fakeWSNode) serve(ctx context.Context, method string, params jsontext.Value) (any, error) {
	n.chain.mu.Lock()
	head := n.chain.head - n.lag.Load()
	n.chain.mu.Unlock()
	switch method {
	case "eth_chainId":
		return jsontext.Value(`"0x1"`), nil
	case "eth_getBlockByNumber":
		var p []string
		json.Unmarshal(params, &p, json.RejectUnknownMembers(false))
		b := head
		switch {
		case len(p) == 0:
		case strings.HasPrefix(p[0], "0x"):
			b, _ = strconv.ParseUint(p[0][2:], 16, 64)
		case p[0] == "safe":
			b = head - 32 // as on mainnet: a reorg of the newest blocks is not below them
		case p[0] == "finalized":
			b = head - 64
		}
		return jsontext.Value(n.chain.header(b)), nil
	case "eth_getBlockByHash":
		var p []string
		json.Unmarshal(params, &p, json.RejectUnknownMembers(false))
		if len(p) == 0 {
			return jsontext.Value("null"), nil
		}
		b, ok := n.chain.number(p[0])
		if !ok || b > head {
			return jsontext.Value("null"), nil
		}
		return jsontext.Value(n.chain.header(b)), nil
	case "eth_subscribe":
		n.subs.Add(1)
		id := jsontext.Value(fmt.Sprintf(`"0x%x"`, n.subs.Load()))
		s, err := jsonrpc.Subscribe(ctx, id)
		if err != nil {
			return nil, err
		}
		go func() {
			for {
				select {
				case <-s.Done():
					return
				case h := <-n.chain.next():
					h -= n.lag.Load()
					if !s.Notify([]byte(`{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":` + string(id) + `,"result":` + n.chain.header(h) + `}}`)) {
						return
					}
				}
			}
		}()
		return id, nil
	case "eth_unsubscribe":
		return jsonrpc.Unsubscribe(ctx, jsontext.Value(strings.Trim(string(params), "[]"))), nil
	}
	return nil, &jsonrpc.Error{Code: -32601, Message: "method " + method + " not found"}
}

// subsEnv is a gateway in front of fake WebSocket nodes.
func subsEnv(t testing.TB, limits func(*gateway.Limits), nodes ...*fakeWSNode) (*gateway.Gateway, string) {
	return subsEnvMetered(t, limits, nil, nil, nodes...)
}

// subsEnvMetered is subsEnv with a meter and the keys it knows.
func subsEnvMetered(t testing.TB, limits func(*gateway.Limits), keys gateway.Authenticator, meter gateway.Meter, nodes ...*fakeWSNode) (*gateway.Gateway, string) {
	t.Helper()
	var members []upstream.Member
	for i, n := range nodes {
		members = append(members, upstream.Member{Name: fmt.Sprintf("node-%d", i), Node: upstream.NewWebSocket(n.url(), nil)})
	}
	table := evm.Table()
	pool := upstream.NewPool(upstream.PoolConfig{Network: "net", Members: members, Chain: table.Chain, PollInterval: 50 * time.Millisecond})
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	methods, err := gateway.NewMethods(table, gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	l := gateway.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 10, MaxBatchResponseBytes: 1 << 20, MaxWSMessageBytes: 1 << 20,
		MaxConnections: 1000, MaxWSConnections: 1000, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		IdleTimeout: 5 * time.Second, WSIdleTimeout: time.Minute, MaxSubscriptionsPerConnection: 10, MaxSubscriptionsPerKey: 1000}
	if limits != nil {
		limits(&l)
	}
	if keys == nil {
		keys = apikey.NewSet(apikey.Entry{Name: "tester", Hash: apikey.Sum(testKey)})
	}
	gw := gateway.New(gateway.Config{
		Keys:     keys,
		Networks: []*gateway.Network{served("net", methods, pool, nil, false, meter, nil)},
		Limits:   l,
		Meter:    meter,
	})
	srv := startServer(t, gw, gw.NetworkHandler("net"))
	t.Cleanup(func() { gw.Close(); srv.close() })
	return gw, "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/v3/" + testKey
}

// subscribeHeads opens a client that subscribes to newHeads.
func subscribeHeads(t testing.TB, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 22)
	t.Cleanup(func() { c.CloseNow() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`)); err != nil {
		t.Fatal(err)
	}
	_, b, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(b), `"result":"0x`) {
		t.Fatalf("subscribe: %s %v", b, err)
	}
	return c
}

// readHead reads the next head number a client gets.
func readHead(ctx context.Context, c *websocket.Conn) (uint64, error) {
	_, b, err := c.Read(ctx)
	if err != nil {
		return 0, err
	}
	var n struct {
		Params struct {
			Result struct {
				Number string `json:"number"`
			} `json:"result"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &n, json.RejectUnknownMembers(false)); err != nil {
		return 0, fmt.Errorf("%s: %w", b, err)
	}
	return strconv.ParseUint(strings.TrimPrefix(n.Params.Result.Number, "0x"), 16, 64)
}

// TestSubscriptionFanOut: 100 clients on one subscription make one
// upstream subscription; the node dies mid-stream and every client keeps
// receiving heads from the other node, with no gap and no duplicate.
func TestSubscriptionFanOut(t *testing.T) {
	chain := newFakeChain(t, 20*time.Millisecond, 0)
	a, b := newFakeWSNode(t, chain), newFakeWSNode(t, chain)
	_, url := subsEnv(t, nil, a, b)
	const clients = 100
	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		conns[i] = subscribeHeads(t, url)
	}
	if a.subs.Load() != 1 || b.subs.Load() != 0 {
		t.Fatalf("upstream subscriptions: %d and %d, want 1 and 0", a.subs.Load(), b.subs.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	// The node is killed once client 0 has had 10 heads, or has ended
	// without them (its error is reported below; the test must not wait
	// for a kill that never comes).
	killed := make(chan struct{})
	var kill sync.Once
	for i, c := range conns {
		wg.Go(func() {
			if i == 0 {
				defer kill.Do(func() { close(killed) })
			}
			var prev uint64
			for k := range 40 {
				n, err := readHead(ctx, c)
				if err != nil {
					errs <- fmt.Errorf("client %d, head %d: %w", i, k, err)
					return
				}
				if k > 0 && n != prev+1 {
					errs <- fmt.Errorf("client %d: head %d after %d", i, n, prev)
					return
				}
				prev = n
				if i == 0 && k == 10 {
					kill.Do(func() { close(killed) })
				}
			}
		})
	}
	<-killed
	a.kill()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if b.subs.Load() != 1 {
		t.Errorf("the other node got %d upstream subscriptions, want 1", b.subs.Load())
	}
}

// TestLaggingNodeHoldsTheView: when the node ahead dies and the one left
// is a few blocks behind on the same chain, the view keeps its head until
// that node passes it: the blocks between are no reorg, and a newHeads
// client gets each block once, in order.
func TestLaggingNodeHoldsTheView(t *testing.T) {
	chain := newFakeChain(t, 20*time.Millisecond, 0)
	a, b := newFakeWSNode(t, chain), newFakeWSNode(t, chain)
	b.lag.Store(3)
	_, url := subsEnv(t, nil, a, b)
	c := subscribeHeads(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var prev uint64
	for k := range 40 {
		n, err := readHead(ctx, c)
		if err != nil {
			t.Fatalf("head %d: %v", k, err)
		}
		if k > 0 && n != prev+1 {
			t.Fatalf("head %d after %d", n, prev)
		}
		prev = n
		if k == 10 {
			a.kill()
		}
	}
}

// TestSlowSubscriber: a client that never reads its notifications is
// disconnected with 1008 once its bounded queue is full; the others go
// on. The test waits on heads delivered, not on time, so that a loaded
// machine, which makes heads slower, only makes it longer.
func TestSlowSubscriber(t *testing.T) {
	const head = 64 << 10
	every, total := 5*time.Millisecond, int64(64<<20) // 64 KB heads, up to 13 MB/s, 64 MB
	if raceDetector {
		// The race detector slows the process several times: at 13 MB/s
		// the topic itself falls behind its queue's bound, and every
		// client is cut off (before this test's subject changed too).
		every, total = 40*time.Millisecond, 16<<20
	}
	chain := newFakeChain(t, every, head)
	n := newFakeWSNode(t, chain)
	_, url := subsEnv(t, func(l *gateway.Limits) { l.MaxNotificationQueue = 16 }, n)
	slow := subscribeHeads(t, url)
	reader := subscribeHeads(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got atomic.Int64
	more := make(chan struct{}, 1)
	go func() {
		for {
			if _, err := readHead(ctx, reader); err != nil {
				return
			}
			got.Add(1)
			select {
			case more <- struct{}{}:
			default:
			}
		}
	}()
	// waitHeads waits until the reading client has had n heads in all.
	waitHeads := func(n int64) {
		t.Helper()
		for got.Load() < n {
			select {
			case <-more:
			case <-ctx.Done():
				t.Fatalf("the reading client had %d heads, want %d", got.Load(), n)
			}
		}
	}
	// The slow client reads nothing while 64 MB of heads (16 under the
	// race detector) go out to the reading one: far more than socket
	// buffers and a queue of 16 hold. Then it finds what reached its
	// socket, and the close.
	waitHeads(total / head)
	var err error
	for err == nil {
		_, _, err = slow.Read(ctx)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != jsonrpc.ReasonSlowReader {
		t.Fatalf("slow client ended with %v", err)
	}
	waitHeads(got.Load() + 10) // the reading client goes on
}

// oneKey accepts the test key as a stored key with a daily balance.
type oneKey struct{ id apikey.Identity }

func (k oneKey) Authenticate(_ context.Context, key string) (apikey.Identity, error) {
	if key != testKey {
		return apikey.Identity{}, portico.ErrKeyUnknown
	}
	return k.id, nil
}

// TestSubscriptionCredits: subscribing and each notification cost
// credits; when the balance runs out mid-stream the client is told why
// (-32005 with data.limit), its subscription stops, its connection closes
// with the reason, and the balance is exact.
func TestSubscriptionCredits(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const daily = evm.CostSubscribe + 3*evm.CostNewHeadNotification + 20 // three heads, and change
	k, _, err := st.Create(ctx, store.KeySpec{Name: "tester", DailyCredits: daily})
	if err != nil {
		t.Fatal(err)
	}
	id := apikey.Identity{Name: k.Name, ID: k.ID, DailyCredits: k.DailyCredits}
	meter, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(st.Spent, nil), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer meter.Close()
	chain := newFakeChain(t, 20*time.Millisecond, 0)
	_, url := subsEnvMetered(t, nil, oneKey{id}, meter, newFakeWSNode(t, chain))
	c := subscribeHeads(t, url)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for i := range 3 {
		if _, err := readHead(rctx, c); err != nil {
			t.Fatalf("head %d: %v", i, err)
		}
	}
	_, b, err := c.Read(rctx)
	if err != nil || !strings.Contains(string(b), `"error":{"code":-32005,"message":"daily credit balance exhausted for key \"tester\"`) || !strings.Contains(string(b), `"limit":"daily"`) {
		t.Fatalf("after the balance ran out: %s %v", b, err)
	}
	_, _, err = c.Read(rctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.HasPrefix(ce.Reason, "daily credit balance exhausted") {
		t.Fatalf("the connection ended with %v", err)
	}
	bal, err := meter.Balance(ctx, id)
	if err != nil || bal.Used != evm.CostSubscribe+3*evm.CostNewHeadNotification {
		t.Fatalf("used %d of %d, want %d: %v", bal.Used, daily, evm.CostSubscribe+3*evm.CostNewHeadNotification, err)
	}
}

// TestSubscribeRefusals: params are checked at the edge with -32602 naming
// the field, subscriptions need a WebSocket, unknown ids and limits get
// the family's and Portico's errors.
func TestSubscribeRefusals(t *testing.T) {
	chain := newFakeChain(t, time.Hour, 0)
	_, url := subsEnv(t, func(l *gateway.Limits) { l.MaxSubscriptionsPerConnection = 2 }, newFakeWSNode(t, chain))
	c, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	cases := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["nope"]}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid params: param 1 (kind): want one of newHeads, logs, newPendingTransactions, got string \"nope\"","data":{"source":"portico"}}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"eth_subscribe","params":["logs",{"topics":[["0x12"]]}]}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"invalid params: param 2 (filter.topics[0][0]): want a 32-byte hash, 0x and 64 hex digits, got string \"0x12\"","data":{"source":"portico"}}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"eth_subscribe","params":["newHeads",{}]}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"invalid params: param 2 (options): newHeads takes no options but {\"resumeFrom\": block hash}, got an object","data":{"source":"portico"}}}`},
		{`{"jsonrpc":"2.0","id":4,"method":"eth_unsubscribe","params":["0x1234"]}`, `{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"subscription not found"}}`},
	}
	for _, tc := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c.Write(ctx, websocket.MessageText, []byte(tc.in))
		_, got, err := c.Read(ctx)
		cancel()
		if err != nil || string(got) != tc.want {
			t.Errorf("%s\n got %s %v\nwant %s", tc.in, got, err, tc.want)
		}
	}
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":9,"method":"eth_subscribe","params":["newHeads"]}`))
		_, got, _ := c.Read(ctx)
		cancel()
		if i == 2 && string(got) != `{"jsonrpc":"2.0","id":9,"error":{"code":-32055,"message":"too many subscriptions on this connection: limit is 2"}}` {
			t.Errorf("third subscription: %s", got)
		}
	}
	// Over HTTP.
	httpURL := "http" + strings.TrimPrefix(strings.Replace(url, "/ws/v3/", "/v3/", 1), "ws")
	resp, err := http.Post(httpURL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"notifications not supported: subscribe over a WebSocket"}}`; string(b) != want {
		t.Errorf("over HTTP: %s", b)
	}
}
