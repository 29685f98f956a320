package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/internal/testredis"
	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/store"
)

// okNode is a real HTTP JSON-RPC server that answers every call with a
// fixed result, echoing the id; with failing set it answers HTTP 502.
type okNode struct {
	failing atomic.Bool
	calls   atomic.Int64
}

func (n *okNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.calls.Add(1)
	if n.failing.Load() {
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"0x539"}`, req.ID)
}

// meteredConfig is one EVM network in front of node, with no dev key.
func meteredConfig(t *testing.T, node string, dataDir string) config.Config {
	cfg := config.DefaultConfig()
	cfg.DataDir = dataDir
	cfg.Networks = []config.Network{{Name: "evm", Family: evm.Family, Upstreams: []config.Upstream{{URL: node}}}}
	cfg.Keys = []config.Key{{Name: "cfg", Key: "config-key-config-key-config-key-0001", DailyCredits: 1_000_000}}
	return cfg
}

const txByIndex = `{"jsonrpc":"2.0","id":%d,"method":"eth_getTransactionByBlockHashAndIndex","params":["0x` +
	`a4c1b7e2e3a0c1f0b5d2e8f3a6c9b1d4e7f0a3c6b9d2e5f8a1b4c7d0e3f6a9b2","0x0"]}`

type answer struct {
	status           int
	body             string
	used, remaining  int64
	retryAfter       string
	haveCreditHeader bool
}

func call(t *testing.T, url, body string) answer {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, body: string(b), retryAfter: resp.Header.Get("Retry-After")}
	if v := resp.Header.Get("X-Credits-Used"); v != "" {
		a.haveCreditHeader = true
		a.used, _ = strconv.ParseInt(v, 10, 64)
		a.remaining, _ = strconv.ParseInt(resp.Header.Get("X-Credits-Remaining"), 10, 64)
	}
	return a
}

// TestKeysCreateAcceptedAtOnce: a key made by `portico keys create` on the
// data directory of a running serve works at once, is charged per call, and
// runs out with 429 and -32005.
func TestKeysCreateAcceptedAtOnce(t *testing.T) {
	node := httptest.NewServer(&okNode{})
	defer node.Close()
	dir := t.TempDir()
	s := start(t, meteredConfig(t, node.URL, dir))

	var out bytes.Buffer
	err := run(context.Background(), []string{"keys", "create", "--data-dir", dir, "--name", "alice", "--daily-credits", "400"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	key := lines[len(lines)-1]
	url := s.url(t, "evm")[:strings.LastIndex(s.url(t, "evm"), "/")+1] + key

	a := call(t, url, fmt.Sprintf(txByIndex, 1))
	if a.status != 200 || a.used != 150 || a.remaining != 250 {
		t.Fatalf("first call: %+v", a)
	}
	// Bad params cost nothing.
	a = call(t, url, `{"jsonrpc":"2.0","id":2,"method":"eth_getTransactionByBlockHashAndIndex","params":["0x12","0x0"]}`)
	if !strings.Contains(a.body, "-32602") || a.used != 0 {
		t.Fatalf("bad params: %+v", a)
	}
	a = call(t, url, fmt.Sprintf(txByIndex, 3))
	if a.status != 200 || a.remaining != 100 {
		t.Fatalf("second call: %+v", a)
	}
	a = call(t, url, fmt.Sprintf(txByIndex, 4))
	if a.status != 429 || !strings.Contains(a.body, `"code":-32005`) || !strings.Contains(a.body, "daily credit balance exhausted") ||
		!strings.Contains(a.body, "resets at") || a.retryAfter == "" || a.used != 0 || a.remaining != 100 {
		t.Fatalf("over the balance: %+v", a)
	}
	// A cheaper call (at the default cost) still fits.
	a = call(t, url, `{"jsonrpc":"2.0","id":5,"method":"eth_gasPrice"}`)
	if a.status != 200 || a.remaining != 20 {
		t.Fatalf("eth_gasPrice: %+v", a)
	}
	// The balance method is free.
	a = call(t, url, `{"jsonrpc":"2.0","id":6,"method":"portico_getCredits"}`)
	if !strings.Contains(a.body, `"remaining":20`) || a.used != 0 {
		t.Fatalf("portico_getCredits: %+v", a)
	}

	// Usage history shows what was charged, per method.
	if err := s.m.Meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"usage", "--data-dir", dir, "--key", "alice"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"eth_getTransactionByBlockHashAndIndex      2      300", "eth_gasPrice      1       80", "total      3      380"} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("usage output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRefundOnUpstreamFailure: a call the upstream fails is not charged.
func TestRefundOnUpstreamFailure(t *testing.T) {
	n := &okNode{}
	node := httptest.NewServer(n)
	defer node.Close()
	cfg := meteredConfig(t, node.URL, t.TempDir())
	cfg.Networks[0].Timeout = 2 * time.Second
	s := start(t, cfg)
	url := s.url(t, "evm")
	n.failing.Store(true)
	a := call(t, url, fmt.Sprintf(txByIndex, 1))
	if a.status != 502 || a.used != 0 || a.remaining != 1_000_000 {
		t.Fatalf("failed call: %+v", a)
	}
	n.failing.Store(false)
	a = call(t, url, `[`+fmt.Sprintf(txByIndex, 1)+`,{"jsonrpc":"2.0","id":2,"method":"eth_gasPrice"},{"jsonrpc":"2.0","id":3,"method":"nope"}]`)
	if a.status != 200 || a.used != 230 || a.remaining != 1_000_000-230 {
		t.Fatalf("batch: %+v", a)
	}
	if err := s.m.Meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := s.m.Store.Usage(context.Background(), store.UsageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var credits, calls int64
	for _, r := range rows {
		credits, calls = credits+r.Credits, calls+r.Calls
	}
	if credits != 230 || calls != 2 {
		t.Fatalf("usage: %d calls, %d credits; want 2 and 230 (%+v)", calls, credits, rows)
	}
}

// hammerHTTP sends calls from n clients until the key's balance is gone
// and returns the credits of the answered calls as the headers reported
// them.
func hammerHTTP(t *testing.T, urls []string, n int) (charged int64, refused int64) {
	t.Helper()
	var total, no atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	for g := range n {
		url := urls[g%len(urls)]
		wg.Go(func() {
			cheap := false
			for i := 0; ; i++ {
				body := fmt.Sprintf(txByIndex, i)
				switch {
				case cheap:
					body = `{"jsonrpc":"2.0","id":0,"method":"eth_gasPrice"}`
				case i%3 == 1:
					body = fmt.Sprintf(`[%s,{"jsonrpc":"2.0","id":0,"method":"eth_gasPrice"}]`, body)
				}
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				used, _ := strconv.ParseInt(resp.Header.Get("X-Credits-Used"), 10, 64)
				switch resp.StatusCode {
				case 200:
					if used == 0 {
						t.Errorf("answered without a charge: %s", b)
						return
					}
					total.Add(used)
				case 429:
					no.Add(1)
					if rem, _ := strconv.ParseInt(resp.Header.Get("X-Credits-Remaining"), 10, 64); rem >= 80 {
						cheap = true // the dearer calls do not fit; the cheapest may
						continue
					}
					return
				default:
					t.Errorf("status %d: %s", resp.StatusCode, b)
					return
				}
			}
		})
	}
	wg.Wait()
	return total.Load(), no.Load()
}

// TestExactUnderConcurrency: 500 clients on one key. Credits charged equal
// the sum of accepted calls exactly, and the balance is never overspent.
func TestExactUnderConcurrency(t *testing.T) {
	node := httptest.NewServer(&okNode{})
	defer node.Close()
	cfg := meteredConfig(t, node.URL, t.TempDir())
	const daily = 400_000
	cfg.Keys[0].DailyCredits = daily
	cfg.Limits.MaxConnections = 2000
	s := start(t, cfg)
	charged, refused := hammerHTTP(t, []string{s.url(t, "evm")}, 500)
	if err := s.m.Meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkSpent(t, s.m.Store, charged, daily)
	if refused < 500 {
		t.Fatalf("%d refusals, want at least one per client", refused)
	}
}

func checkSpent(t *testing.T, st *store.Store, charged, daily int64) {
	t.Helper()
	ctx := context.Background()
	k, err := st.Get(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	day, _ := metering.BillingDay(time.Now())
	stored, err := st.Spent(ctx, k.ID, day)
	if err != nil {
		t.Fatal(err)
	}
	if stored != charged {
		t.Fatalf("store holds %d credits; answered calls were charged %d", stored, charged)
	}
	if charged > daily {
		t.Fatalf("overspent: %d of %d", charged, daily)
	}
	if daily-charged >= 80 {
		t.Fatalf("%d credits left although clients kept asking", daily-charged)
	}
	t.Logf("charged %d of %d credits", charged, daily)
}

// TestExactTwoInstances: two portico instances share Redis (balances) and
// PostgreSQL (keys, usage); 500 clients split between them. Credits stay
// exact with leases (the default) and without, on one Redis, on a Redis
// Cluster of three masters and through Sentinel.
func TestExactTwoInstances(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis func(t *testing.T, m *config.Metering)
	}{
		{"leases", func(t *testing.T, m *config.Metering) { m.Redis, m.RedisPrefix = testsvc.Redis(t) }},
		{"call by call", func(t *testing.T, m *config.Metering) {
			m.Redis, m.RedisPrefix = testsvc.Redis(t)
			m.LeaseTTL = 0
		}},
		{"cluster", func(t *testing.T, m *config.Metering) { m.RedisAddrs = testredis.Cluster(t) }},
		{"sentinel", func(t *testing.T, m *config.Metering) {
			m.RedisAddrs, m.RedisMasterName = testredis.Sentinel(t), testredis.MasterName
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := httptest.NewServer(&okNode{})
			defer node.Close()
			dsn := testsvc.Postgres(t)
			redisCfg := config.DefaultConfig().Metering
			tc.redis(t, &redisCfg)
			const daily = 300_000
			var urls []string
			var mains []*started
			for i := range 2 {
				cfg := meteredConfig(t, node.URL, t.TempDir())
				cfg.Keys[0].DailyCredits = daily
				cfg.Keys[0].Key = "two-instance-key-" + testsvc.Suffix() + "-0000000"
				if i == 1 {
					cfg.Keys[0].Key = mains[0].m.Config.Keys[0].Key
				}
				cfg.Store.Postgres = dsn
				redisCfg.Instance = fmt.Sprintf("instance-%d", i)
				cfg.Metering = redisCfg
				cfg.Limits.MaxConnections = 2000
				s := start(t, cfg)
				mains = append(mains, s)
				urls = append(urls, s.url(t, "evm"))
			}
			charged, _ := hammerHTTP(t, urls, 500)
			for _, s := range mains {
				if err := s.m.Meter.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			checkSpent(t, mains[0].m.Store, charged, daily)
		})
	}
}

// TestKeyAllowlists: a key's method, network and Origin allowlists refuse
// with -32002 and 403, and refused calls cost nothing.
func TestKeyAllowlists(t *testing.T) {
	node := httptest.NewServer(&okNode{})
	defer node.Close()
	cfg := meteredConfig(t, node.URL, t.TempDir())
	cfg.Networks = append(cfg.Networks, config.Network{Name: "evm2", Family: evm.Family, Upstreams: []config.Upstream{{URL: node.URL}}})
	s := start(t, cfg)
	ctx := context.Background()
	_, secret, err := s.m.Store.Create(ctx, store.KeySpec{Name: "narrow", DailyCredits: 10_000,
		AllowMethods: []string{"evm_getTransactionByBlockHashAndIndex"}, AllowNetworks: []string{"evm"},
		AllowOrigins: []string{"https://app.example.com", "*.example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(network, origin, body string) answer {
		req, _ := http.NewRequest("POST", "http://"+s.addr(t, network)+"/v3/"+secret, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		used, _ := strconv.ParseInt(resp.Header.Get("X-Credits-Used"), 10, 64)
		return answer{status: resp.StatusCode, body: string(b), used: used}
	}
	tx := fmt.Sprintf(txByIndex, 1)
	cases := []struct {
		name, network, origin, body string
		status                      int
		has                         string
	}{
		{"allowed, alias name", "evm", "https://app.example.com", tx, 200, `"result"`},
		{"allowed, subdomain", "evm", "https://a.b.example.org:8443", tx, 200, `"result"`},
		{"method", "evm", "https://app.example.com", `{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`, 403, `method \"eth_chainId\" is not allowed`},
		{"network", "evm2", "https://app.example.com", tx, 403, `network \"evm2\" is not allowed`},
		{"origin", "evm", "https://evil.example.com", tx, 403, `origin \"https://evil.example.com\" is not allowed`},
		{"no origin", "evm", "", tx, 403, "restricted by origin"},
		{"bare domain is not a subdomain", "evm", "https://example.org", tx, 403, "not allowed"},
	}
	for _, c := range cases {
		a := send(c.network, c.origin, c.body)
		if a.status != c.status || !strings.Contains(a.body, c.has) {
			t.Errorf("%s: %d %s; want %d and %q", c.name, a.status, a.body, c.status, c.has)
		}
		if c.status == 403 && (!strings.Contains(a.body, "-32002") || a.used != 0) {
			t.Errorf("%s: want -32002 and no charge, got %s (used %d)", c.name, a.body, a.used)
		}
	}
	// In a batch, the refused method is refused alone.
	a := send("evm", "https://app.example.com", `[`+tx+`,{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}]`)
	if a.status != 200 || a.used != 150 || !strings.Contains(a.body, "-32002") || !strings.Contains(a.body, `"result"`) {
		t.Errorf("batch: %+v", a)
	}
}
