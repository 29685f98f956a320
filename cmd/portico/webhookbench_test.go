package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/gateway/webhook"
	"github.com/porticohq/portico/store"
)

// TestBenchWebhooks measures webhooks (docs/benchmarks.md, issue 38):
// the time from a block (anvil's evm_mine returning) to its delivery
// with PORTICO_BENCH_WEBHOOKS webhooks (default 1,000) to a fast
// receiver, against a plain newHeads WebSocket client of the same
// portico in the same run; deliveries a second through one instance
// when a burst of blocks arrives at once; and the heap and goroutines
// per webhook. It runs only when PORTICO_BENCH_WEBHOOKS is set.
func TestBenchWebhooks(t *testing.T) {
	n := 0
	if v := os.Getenv("PORTICO_BENCH_WEBHOOKS"); v == "" {
		t.Skip("set PORTICO_BENCH_WEBHOOKS=1000 to run the webhook benchmark")
	} else if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
		t.Fatalf("PORTICO_BENCH_WEBHOOKS=%q: want a number of webhooks", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx)
	cfg := config.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Keys = []config.Key{{Name: "hooks", Key: hookKey, DailyCredits: 1e15}}
	cfg.Webhooks.AllowPrivateURLs = true
	cfg.Limits.MaxSubscriptionsPerKey = n + 10
	cfg.Networks = []config.Network{{Name: "anvil", Family: "evm", PollInterval: 50 * time.Millisecond,
		Upstreams: []config.Upstream{{URL: node.URL(), WSURL: node.WSURL()}}}}
	s := start(t, cfg)
	raw, err := rpc.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	// The receiver: when each (webhook, block) arrived.
	var mu sync.Mutex
	arrived := map[string]time.Time{} // block hash + webhook -> first arrival
	perBlock := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now := time.Now()
		var p webhook.Payload
		if json.Unmarshal(body, &p) != nil {
			return
		}
		k := p.Block.Hash + p.Webhook
		mu.Lock()
		if _, ok := arrived[k]; !ok {
			arrived[k] = now
			perBlock[p.Block.Hash]++
		}
		mu.Unlock()
	}))
	defer recv.Close()

	// The baseline: a plain newHeads client of the same portico.
	wsc, _, err := websocket.Dial(ctx, s.wsURL(t, "anvil"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wsc.CloseNow()
	if err := wsc.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`)); err != nil {
		t.Fatal(err)
	}
	wsArrived := map[string]time.Time{}
	var wsMu sync.Mutex
	go func() {
		for {
			_, msg, err := wsc.Read(ctx)
			if err != nil {
				return
			}
			if h, ok := newHeadOf(msg); ok {
				wsMu.Lock()
				wsArrived[h.Hash.Hex()] = time.Now()
				wsMu.Unlock()
			}
		}
	}()

	heap0, gr0 := heapAfterGC(), runtime.NumGoroutine()
	for i := range n {
		if _, err := s.m.Store.CreateWebhook(ctx, "hooks", store.WebhookSpec{Network: "anvil", Event: "newHeads",
			URL: recv.URL + fmt.Sprintf("/%d", i), Secret: "receiver-secret-0123456789"}); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until every webhook delivers a block (each subscribes when its
	// worker starts, so the first block some see is a later one).
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if err := raw.CallContext(ctx, nil, "evm_mine"); err != nil {
			t.Fatal(err)
		}
		var head struct{ Hash string }
		if err := raw.CallContext(ctx, &head, "eth_getBlockByNumber", "latest", false); err != nil {
			t.Fatal(err)
		}
		if waitCountFor(&mu, perBlock, head.Hash, n, time.Minute) {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			got := perBlock[head.Hash]
			mu.Unlock()
			logs := s.logs.String()
			t.Fatalf("only %d of %d webhooks delivered block %s; %d warnings: %s", got, n, head.Hash,
				strings.Count(logs, "WARN"), firstWarnings(logs))
		}
	}
	heap1, gr1 := heapAfterGC(), runtime.NumGoroutine()

	// Latency: blocks one at a time, a second apart.
	const blocks = 10
	var lat, wsLat []time.Duration
	for range blocks {
		if err := raw.CallContext(ctx, nil, "evm_mine"); err != nil {
			t.Fatal(err)
		}
		mined := time.Now()
		var head struct{ Hash string }
		if err := raw.CallContext(ctx, &head, "eth_getBlockByNumber", "latest", false); err != nil {
			t.Fatal(err)
		}
		waitCount(t, &mu, perBlock, head.Hash, n)
		mu.Lock()
		for k, at := range arrived {
			if strings.HasPrefix(k, head.Hash) {
				lat = append(lat, at.Sub(mined))
			}
		}
		mu.Unlock()
		wsMu.Lock()
		if at, ok := wsArrived[head.Hash]; ok {
			wsLat = append(wsLat, at.Sub(mined))
		}
		wsMu.Unlock()
		time.Sleep(time.Second)
	}

	// Throughput: a burst of blocks at once.
	const burst = 5
	var hashes []string
	began := time.Now()
	for range burst {
		if err := raw.CallContext(ctx, nil, "evm_mine"); err != nil {
			t.Fatal(err)
		}
		var head struct{ Hash string }
		if err := raw.CallContext(ctx, &head, "eth_getBlockByNumber", "latest", false); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, head.Hash)
	}
	for _, h := range hashes {
		waitCount(t, &mu, perBlock, h, n)
	}
	took := time.Since(began)

	p := func(d []time.Duration, q float64) time.Duration {
		slices.Sort(d)
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(q*float64(len(d))))]
	}
	t.Logf("webhooks: %d on one instance (SQLite store, GOMAXPROCS %d)", n, runtime.GOMAXPROCS(0))
	t.Logf("block to delivery: p50 %v p99 %v over %d deliveries; a plain WebSocket client: p50 %v p99 %v",
		p(lat, 0.5).Round(time.Millisecond), p(lat, 0.99).Round(time.Millisecond), len(lat),
		p(wsLat, 0.5).Round(time.Millisecond), p(wsLat, 0.99).Round(time.Millisecond))
	t.Logf("burst: %d blocks x %d webhooks = %d deliveries in %v: %.0f deliveries/s",
		burst, n, burst*n, took.Round(time.Millisecond), float64(burst*n)/took.Seconds())
	t.Logf("per webhook: %.1f KiB of heap, %.1f goroutines", float64(int64(heap1)-int64(heap0))/float64(n)/1024, float64(gr1-gr0)/float64(n))
}

// waitCount waits until every webhook delivered block hash.
func waitCount(t *testing.T, mu *sync.Mutex, perBlock map[string]int, hash string, n int) {
	t.Helper()
	if !waitCountFor(mu, perBlock, hash, n, 5*time.Minute) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("block %s: %d of %d deliveries", hash, perBlock[hash], n)
	}
}

// waitCountFor waits up to d until every webhook delivered block hash.
func waitCountFor(mu *sync.Mutex, perBlock map[string]int, hash string, n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		mu.Lock()
		got := perBlock[hash]
		mu.Unlock()
		if got >= n {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// heapAfterGC is the heap in use after a collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// firstWarnings returns the first distinct warnings of logs.
func firstWarnings(logs string) string {
	seen := map[string]bool{}
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		i := strings.Index(l, "level=WARN")
		if i < 0 {
			continue
		}
		msg := l[i:]
		if j := strings.Index(msg, " webhook="); j > 0 {
			msg = msg[:j] + msg[strings.Index(msg[j+1:], " ")+j+1:]
		}
		if !seen[msg] && len(out) < 8 {
			seen[msg] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
