package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/internal/anvil"
	"github.com/porticohq/portico/internal/testsvc"
)

// slowNode is a real HTTP JSON-RPC server that takes 100 ms over each
// eth_gasPrice (the calls under test) and counts how many it holds at
// once; other calls (the gateway's head polls) it answers at once.
type slowNode struct {
	inFlight, most, calls atomic.Int64
}

func (n *slowNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.Method == "eth_gasPrice" {
		n.calls.Add(1)
		cur := n.inFlight.Add(1)
		for m := n.most.Load(); cur > m && !n.most.CompareAndSwap(m, cur); m = n.most.Load() {
		}
		time.Sleep(100 * time.Millisecond)
		// Counted out before the answer leaves, so that a call the
		// gateway has ended is never counted with the next.
		n.inFlight.Add(-1)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"0x539"}`, req.ID)
}

// boundedKey is the key: 20 calls a second, 4 in flight.
const boundedKey = "bounded-key-0123456789abcdef-000001"

// boundedInstances starts n instances in front of nodeURL sharing
// PostgreSQL dsn and the Redis at redisURL under prefix, with
// boundedKey; edit changes each one's config.
func boundedInstances(t *testing.T, n int, nodeURL, dsn, redisURL, prefix string, edit func(*config.Config)) []*started {
	t.Helper()
	four, twenty := 4, 20
	var out []*started
	for i := range n {
		cfg := config.DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.Networks = []config.Network{{Name: "evm", Family: evm.Family, Upstreams: []config.Upstream{{URL: nodeURL}}}}
		cfg.Keys = []config.Key{{Name: "bounded", Key: boundedKey, DailyCredits: 1_000_000_000, MaxConcurrent: &four, RequestsPerSecond: &twenty}}
		cfg.Cache.MaxBytes = 0 // every call reaches the node
		cfg.Cache.CoalesceDisabled = true
		cfg.Store.Postgres = dsn
		cfg.Metering.Redis = redisURL
		cfg.Metering.RedisPrefix = prefix
		cfg.Metering.Instance = fmt.Sprintf("instance-%d", i)
		if edit != nil {
			edit(&cfg)
		}
		out = append(out, start(t, cfg))
	}
	return out
}

// boundsLoad is what clients saw of a run.
type boundsLoad struct {
	admitted, refused, unavailable, other atomic.Int64
	took                                  time.Duration
}

// hammerFor sends eth_gasPrice from perInstance clients on each of urls
// until d has passed (or stop is closed).
func hammerFor(t *testing.T, urls []string, perInstance int, d time.Duration) *boundsLoad {
	t.Helper()
	var l boundsLoad
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	start := time.Now()
	end := start.Add(d)
	for _, url := range urls {
		for range perInstance {
			wg.Go(func() {
				for time.Now().Before(end) {
					resp, err := client.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_gasPrice"}`))
					if err != nil {
						l.other.Add(1)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch resp.StatusCode {
					case 200:
						l.admitted.Add(1)
					case 429:
						l.refused.Add(1)
						time.Sleep(5 * time.Millisecond) // spare the CPU
					case 503:
						l.unavailable.Add(1)
						time.Sleep(5 * time.Millisecond)
					default:
						l.other.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	l.took = time.Since(start)
	return &l
}

// mostAdmitted is what a bucket of rps calls a second admits in d, with
// the 10% the docs allow.
func mostAdmitted(rps int, d time.Duration) int64 {
	return int64(1.1 * float64(rps) * (d.Seconds() + 1))
}

// TestBoundsAcrossInstances: the run, shorter. Two and three
// instances share Redis and PostgreSQL; one key with requests_per_second
// 20 and max_concurrent 4; 8 clients on each instance against a node
// that takes 100 ms. The node never holds more than 4 of the key's calls,
// and the instances together admit no more than 20 a second (plus one
// second's burst).
func TestBoundsAcrossInstances(t *testing.T) {
	node := &slowNode{}
	srv := httptest.NewServer(node)
	defer srv.Close()
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d instances", n), func(t *testing.T) {
			node.most.Store(0)
			dsn := testsvc.Postgres(t)
			redisURL, prefix := testsvc.Redis(t)
			ins := boundedInstances(t, n, srv.URL, dsn, redisURL, prefix, nil)
			var urls []string
			for _, s := range ins {
				urls = append(urls, s.url(t, "evm"))
			}
			l := hammerFor(t, urls, 8, 3*time.Second)
			if l.other.Load() != 0 || l.unavailable.Load() != 0 {
				t.Fatalf("%d answers neither 200 nor 429, %d 503", l.other.Load(), l.unavailable.Load())
			}
			if most := node.most.Load(); most > 4 {
				t.Errorf("the node held %d of the key's calls at once; the key allows 4", most)
			}
			if got, most := l.admitted.Load(), mostAdmitted(20, l.took); got > most || got < 20 {
				t.Errorf("%d calls admitted in %v; the key allows at most %d", got, l.took, most)
			}
			var trips, ops int64
			for _, s := range ins {
				st := s.m.Bounds.Stats()
				trips, ops = trips+st.RoundTrips, ops+st.Operations
			}
			asked := l.admitted.Load() + l.refused.Load()
			t.Logf("%d instances: %d admitted, %d refused in %v; the node held at most %d at once; bounds: %d round trips for %d calls (%.2f a call), %d operations",
				n, l.admitted.Load(), l.refused.Load(), l.took.Round(time.Millisecond), node.most.Load(), trips, asked, float64(trips)/float64(asked), ops)
		})
	}
}

// wsDial opens a WebSocket to url and reports the HTTP status of a
// refusal.
func wsDial(ctx context.Context, url string) (*websocket.Conn, int, error) {
	c, resp, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		return nil, status, err
	}
	return c, 101, nil
}

// wsCall sends one call on c and returns its answer.
func wsCall(ctx context.Context, t *testing.T, c *websocket.Conn, body string) map[string]any {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(body)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if _, note := m["method"]; !note { // skip notifications
			return m
		}
	}
}

// TestBoundsWebSocketsAcrossInstances: a key's WebSocket connections and
// subscriptions are bounded across two instances (anvil behind them).
func TestBoundsWebSocketsAcrossInstances(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	an, err := anvil.Start(ctx, anvil.Options{})
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip("anvil is not installed: run scripts/install-test-deps.sh")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer an.Close()
	dsn := testsvc.Postgres(t)
	redisURL, prefix := testsvc.Redis(t)
	ins := boundedInstances(t, 2, an.WSURL(), dsn, redisURL, prefix, func(c *config.Config) {
		c.Limits.MaxWSConnectionsPerKey = 3
		c.Limits.MaxSubscriptionsPerKey = 3
	})
	url := func(i int) string { return ins[i].wsURL(t, "evm") }
	var conns []*websocket.Conn
	for _, i := range []int{0, 0, 1} {
		c, status, err := wsDial(ctx, url(i))
		if err != nil {
			t.Fatalf("connection on instance %d: %d %v", i, status, err)
		}
		defer c.CloseNow()
		conns = append(conns, c)
	}
	for i := range 2 {
		// Refused as on one instance: 503 and "too many websocket
		// connections for this API key".
		if c, status, err := wsDial(ctx, url(i)); err == nil || status != 503 {
			if c != nil {
				c.CloseNow()
			}
			t.Fatalf("a fourth connection of 3, on instance %d: status %d, %v", i, status, err)
		}
	}
	// One closes on instance 0: instance 1 may open one.
	_ = conns[1].Close(websocket.StatusNormalClosure, "")
	var extra *websocket.Conn
	waitUntil(t, "a closed connection's slot", func() bool {
		c, _, err := wsDial(ctx, url(1))
		extra = c
		return err == nil
	})
	defer extra.CloseNow()

	sub := `{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`
	var ids []string
	for _, c := range []*websocket.Conn{conns[0], conns[0], conns[2]} {
		m := wsCall(ctx, t, c, sub)
		id, ok := m["result"].(string)
		if !ok {
			t.Fatalf("subscribe: %v", m)
		}
		ids = append(ids, id)
	}
	m := wsCall(ctx, t, extra, sub)
	if e, ok := m["error"].(map[string]any); !ok || !strings.Contains(fmt.Sprint(e["message"]), "too many subscriptions for this API key") {
		t.Fatalf("a fourth subscription of 3 on the other instance: %v", m)
	}
	m = wsCall(ctx, t, conns[0], `{"jsonrpc":"2.0","id":2,"method":"eth_unsubscribe","params":["`+ids[0]+`"]}`)
	if m["result"] != true {
		t.Fatalf("unsubscribe: %v", m)
	}
	waitUntil(t, "an ended subscription's slot", func() bool {
		m := wsCall(ctx, t, extra, sub)
		_, ok := m["result"].(string)
		return ok
	})
}

// waitUntil polls cond until it holds, with a generous deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
