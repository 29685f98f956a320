package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/families/solana"
	"github.com/porticohq/portico/families/starknet"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/network/upstream"
)

// chainNode is a counting node of any family: heads and hashes it is told,
// the answers a test gives it, and how often each call reached it.
type chainNode struct {
	mu     sync.Mutex
	heads  portico.Heads
	fork   string // changes the hashes of blocks above finalized
	answer func(method, params string) string
	counts map[string]int
	srv    *httptest.Server
}

func newChainNode(t *testing.T, answer func(n *chainNode, method, params string) string) *chainNode {
	n := &chainNode{counts: map[string]int{}, heads: portico.Heads{Latest: 20, Safe: 15, Finalized: 10}}
	n.answer = func(m, p string) string { return answer(n, m, p) }
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls, _, _ := jsonrpc.Decode(body)
		c := calls[0]
		n.mu.Lock()
		n.counts[c.Method+" "+string(c.Params)]++
		n.mu.Unlock()
		res := n.answer(c.Method, string(c.Params))
		w.Write(jsonrpc.AppendResult(nil, c.ID, []byte(res)))
	}))
	t.Cleanup(n.srv.Close)
	return n
}

func (n *chainNode) count(method, params string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts[method+" "+params]
}

func (n *chainNode) set(f func(h *portico.Heads)) {
	n.mu.Lock()
	f(&n.heads)
	n.mu.Unlock()
}

func (n *chainNode) state() (portico.Heads, string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.heads, n.fork
}

// hashOf is block n's hash on the node's current fork.
func (n *chainNode) hashOf(b uint64) string {
	h, fork := n.state()
	if b > h.Finalized {
		return fmt.Sprintf("0x%064x", b*1000+uint64(len(fork)))
	}
	return fmt.Sprintf("0x%064x", b*1000)
}

// blockOf finds the block whose hash is in params, on the node's current
// fork.
func (n *chainNode) blockOf(params string) (uint64, bool) {
	i := strings.Index(params, "0x")
	if i < 0 || len(params) < i+66 {
		return 0, false
	}
	hash := params[i : i+66]
	var v uint64
	fmt.Sscanf(hash, "0x%x", &v)
	b := v / 1000
	return b, n.hashOf(b) == hash
}

// evmNode answers the EVM tracking calls from its heads, and echoes every
// other call.
func evmNode(n *chainNode, method, params string) string {
	h, _ := n.state()
	switch {
	case method == "eth_chainId":
		return `"0x1"`
	case method == "eth_getBlockByNumber" && strings.HasSuffix(params, "false]"):
		var p []any
		json.Unmarshal([]byte(params), &p)
		var b uint64
		switch p[0] {
		case "latest":
			b = h.Latest
		case "safe":
			b = h.Safe
		case "finalized":
			b = h.Finalized
		default:
			fmt.Sscanf(p[0].(string), "0x%x", &b)
		}
		return fmt.Sprintf(`{"number":"0x%x","hash":%q,"parentHash":%q}`, b, n.hashOf(b), n.hashOf(b-1))
	case method == "eth_getBlockByHash" && strings.HasSuffix(params, "false]"):
		b, ok := n.blockOf(params)
		if !ok {
			return "null"
		}
		return fmt.Sprintf(`{"number":"0x%x","hash":%q,"parentHash":%q}`, b, n.hashOf(b), n.hashOf(b-1))
	case method == "eth_getTransactionReceipt" && strings.Contains(params, "aaaa"):
		return `{"blockNumber":"0x5","status":"0x1"}` // a final block
	case method == "eth_getTransactionReceipt" && strings.Contains(params, "bbbb"):
		return fmt.Sprintf(`{"blockNumber":"0x%x","status":"0x1"}`, h.Latest) // not final
	case method == "eth_getTransactionReceipt":
		return `null`
	}
	return `{"echo":` + jsonOr(params) + `}`
}

func jsonOr(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// cacheEnv is a gateway with one network in front of a chainNode.
type cacheEnv struct {
	*env
	pool *upstream.Pool
	node *chainNode
}

func newCacheEnv(t *testing.T, table portico.Table, node *chainNode) *cacheEnv {
	cache := network.NewCache(1<<20, nil)
	return newCacheEnvWith(t, table, node, cache)
}

func newCacheEnvWith(t *testing.T, table portico.Table, node *chainNode, cache *network.Cache) *cacheEnv {
	methods, err := gateway.NewMethods(table, gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool(upstream.PoolConfig{Network: "net", Members: []upstream.Member{{Name: "n", Node: upstream.NewHTTP(node.srv.URL, nil)}},
		Chain: table.Chain, PollInterval: 20 * time.Millisecond})
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	t.Cleanup(cache.Close)
	gw := gateway.New(gateway.Config{
		Keys:     apikey.NewSet(apikey.Entry{Name: "tester", Hash: apikey.Sum(testKey)}),
		Networks: []*gateway.Network{served("net", methods, pool, cache, false, nil, nil)},
		Limits: gateway.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 10, MaxBatchResponseBytes: 1 << 20, MaxWSMessageBytes: 1 << 20,
			MaxConnections: 100, MaxWSConnections: 10, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
			IdleTimeout: 5 * time.Second, WSIdleTimeout: time.Minute},
	})
	e := &env{gw: gw, logs: &syncBuffer{}}
	e.srv = startServer(t, gw, gw.NetworkHandler("net"))
	t.Cleanup(func() { gw.Close(); e.srv.close() })
	return &cacheEnv{env: e, pool: pool, node: node}
}

// await waits until the pool's heads satisfy ok.
func (e *cacheEnv) await(t *testing.T, ok func(portico.Heads) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(e.pool.Heads()) {
		if time.Now().After(deadline) {
			t.Fatalf("heads never reached the wanted state: %+v", e.pool.Heads())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// call sends method with params and returns the result and X-Cache.
func (e *cacheEnv) call(t *testing.T, method, params string) (string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v3/"+testKey, strings.NewReader(body+"}"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.Header.Get(gateway.HeaderCache)
}

// cacheCase is one call and how often it may reach the node when sent
// twice: 1 when the second answer comes from cache.
type cacheCase struct {
	method, params string
	sent           string // the params the node gets, when they are pinned
	nodeCalls      int
}

func runCacheCases(t *testing.T, e *cacheEnv, cases []cacheCase) {
	t.Helper()
	for _, c := range cases {
		e.call(t, c.method, c.params)
		_, state := e.call(t, c.method, c.params)
		sent := c.params
		if c.sent != "" {
			sent = c.sent
		}
		if got := e.node.count(c.method, sent); got != c.nodeCalls {
			t.Errorf("%s %s: the node got %d calls, want %d (X-Cache %q)", c.method, c.params, got, c.nodeCalls, state)
		}
	}
}

// TestCacheEVM is the EVM family's table of calls: cached for good,
// cached until final or reorged, for one head, never.
func TestCacheEVM(t *testing.T) {
	node := newChainNode(t, evmNode)
	e := newCacheEnv(t, evm.Table(), node)
	e.await(t, func(h portico.Heads) bool { return h.Latest == 20 })
	const hash = `"0x` + "cc" + "000000000000000000000000000000000000000000000000000000000000cc" + `"`
	addr := `"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"`
	runCacheCases(t, e, []cacheCase{
		{"eth_getBlockByHash", `[` + hash + `,true]`, "", 1},
		{"eth_getBlockByNumber", `["0x2",true]`, "", 1},                 // final
		{"eth_getBlockByNumber", `["latest",true]`, `["0x14",true]`, 1}, // pinned to 20, unfinal
		{"eth_getBalance", `[` + addr + `,"finalized"]`, `[` + addr + `,"0xa"]`, 1},
		{"eth_gasPrice", `[]`, "", 1},
		{"eth_getTransactionReceipt", `["0x` + strings.Repeat("aa", 32) + `"]`, "", 1},
		{"eth_getTransactionReceipt", `["0x` + strings.Repeat("bb", 32) + `"]`, "", 2}, // block not final
		{"eth_getTransactionReceipt", `["0x` + strings.Repeat("dd", 32) + `"]`, "", 2}, // null
		{"eth_getBlockByNumber", `["pending",true]`, "", 2},
		{"eth_sendRawTransaction", `["0x01"]`, "", 2},
		{"eth_blockNumber", `[]`, "", 0}, // answered from the tracked head
	})
	if got, _ := e.call(t, "eth_blockNumber", `[]`); got != `{"jsonrpc":"2.0","id":1,"result":"0x14"}` {
		t.Errorf("eth_blockNumber: %s", got)
	}
	// The tracker asks eth_chainId too, so the header tells the hit.
	e.call(t, "eth_chainId", ``)
	if _, state := e.call(t, "eth_chainId", ``); state != "HIT" {
		t.Errorf("eth_chainId the second time: X-Cache %q", state)
	}

	// A new head drops answers about the old one, not the others.
	node.set(func(h *portico.Heads) { h.Latest = 21 })
	e.await(t, func(h portico.Heads) bool { return h.Latest == 21 })
	e.call(t, "eth_gasPrice", `[]`)
	e.call(t, "eth_getBlockByNumber", `["latest",true]`) // pinned to 21: a new call
	e.call(t, "eth_getBlockByNumber", `["0x14",true]`)   // 20, still cached
	if got := node.count("eth_gasPrice", `[]`); got != 2 {
		t.Errorf("eth_gasPrice after a new head: %d node calls, want 2", got)
	}
	if got := node.count("eth_getBlockByNumber", `["0x14",true]`); got != 1 {
		t.Errorf("block 20 after a new head: %d node calls, want 1", got)
	}

	// A reorg below cached unfinalized answers drops them; final ones stay.
	node.mu.Lock()
	node.fork = "x"
	node.mu.Unlock()
	node.set(func(h *portico.Heads) { h.Latest = 22 })
	e.await(t, func(h portico.Heads) bool { return h.Latest == 22 })
	time.Sleep(100 * time.Millisecond) // the listeners run after the heads are set
	e.call(t, "eth_getBlockByNumber", `["0x14",true]`)
	e.call(t, "eth_getBlockByNumber", `["0x2",true]`)
	if got := node.count("eth_getBlockByNumber", `["0x14",true]`); got != 2 {
		t.Errorf("block 20 after a reorg from 11: %d node calls, want 2", got)
	}
	if got := node.count("eth_getBlockByNumber", `["0x2",true]`); got != 1 {
		t.Errorf("final block 2 after a reorg: %d node calls, want 1", got)
	}
}

// TestCacheSolana is the slot chain's table.
func TestCacheSolana(t *testing.T) {
	node := newChainNode(t, func(n *chainNode, method, params string) string {
		h, _ := n.state()
		switch method {
		case "getGenesisHash":
			return `"GH"`
		case "getSlot":
			switch {
			case strings.Contains(params, "processed"):
				return fmt.Sprint(h.Latest)
			case strings.Contains(params, "confirmed"):
				return fmt.Sprint(h.Safe)
			}
			return fmt.Sprint(h.Finalized)
		case "getBlock":
			return `{"blockhash":"x","transactions":[]}`
		}
		return `{"echo":` + jsonOr(params) + `}`
	})
	e := newCacheEnv(t, solana.TableFor(solana.Options{NodeServesProcessed: true}), node)
	e.await(t, func(h portico.Heads) bool { return h.Latest == 20 })
	const sig = `"5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"`
	runCacheCases(t, e, []cacheCase{
		{"getBlock", `[5]`, `[5,{"rewards":false}]`, 1},
		{"getBlock", `[5,{"commitment":"confirmed"}]`, `[5,{"rewards":false,"commitment":"confirmed"}]`, 2},
		{"getTransaction", `[` + sig + `]`, "", 1},
		{"getTransaction", `[` + sig + `,{"commitment":"confirmed"}]`, "", 2},
		{"getBalance", `["11111111111111111111111111111111"]`, "", 1},
		{"getSignatureStatuses", `[[` + sig + `]]`, "", 2},
		{"requestAirdrop", `["11111111111111111111111111111111",1000]`, "", 2},
	})
	for params, want := range map[string]string{`[]`: "10", `[{"commitment":"processed"}]`: "20", `[{"commitment":"confirmed"}]`: "15"} {
		if got, _ := e.call(t, "getSlot", params); got != `{"jsonrpc":"2.0","id":1,"result":`+want+`}` {
			t.Errorf("getSlot %s: %s", params, got)
		}
	}
	if got := node.count("getSlot", `[{"commitment":"processed"}]`); got == 0 {
		t.Fatal("the tracker never asked for slots")
	}
}

// TestCacheStarknet is the rollup's table.
func TestCacheStarknet(t *testing.T) {
	node := newChainNode(t, func(n *chainNode, method, params string) string {
		h, _ := n.state()
		switch method {
		case "starknet_chainId":
			return `"0x534e"`
		case "starknet_blockHashAndNumber":
			return fmt.Sprintf(`{"block_hash":%q,"block_number":%d}`, n.hashOf(h.Latest), h.Latest)
		case "starknet_getBlockWithTxHashes":
			var b uint64
			switch {
			case strings.Contains(params, "l1_accepted"):
				b = h.Finalized
			case strings.Contains(params, "latest"):
				b = h.Latest
			case strings.Contains(params, "block_hash"):
				var ok bool
				if b, ok = n.blockOf(params); !ok {
					return "null"
				}
			default:
				if i := strings.Index(params, `"block_number":`); i >= 0 {
					fmt.Sscanf(params[i+len(`"block_number":`):], "%d", &b)
				}
			}
			return fmt.Sprintf(`{"block_hash":%q,"parent_hash":%q,"block_number":%d}`, n.hashOf(b), n.hashOf(b-1), b)
		case "starknet_getTransactionReceipt":
			return `{"block_number":3,"finality_status":"ACCEPTED_ON_L1"}`
		}
		return `{"echo":` + jsonOr(params) + `}`
	})
	e := newCacheEnv(t, starknet.Table(), node)
	e.await(t, func(h portico.Heads) bool { return h.Latest == 20 && h.Finalized == 10 })
	runCacheCases(t, e, []cacheCase{
		{"starknet_getStateUpdate", `{"block_id":{"block_hash":"0x1"}}`, "", 1},
		{"starknet_getStateUpdate", `{"block_id":"latest"}`, `{"block_id":{"block_number":20}}`, 1},
		{"starknet_getStateUpdate", `{"block_id":"pending"}`, "", 2},
		{"starknet_getNonce", `{"block_id":"l1_accepted","contract_address":"0x2"}`, `{"block_id":{"block_number":10},"contract_address":"0x2"}`, 1},
		{"starknet_getTransactionReceipt", `["0x1"]`, "", 1},
		{"starknet_addInvokeTransaction", `[{}]`, "", 2},
	})
	if got, _ := e.call(t, "starknet_blockNumber", ``); got != `{"jsonrpc":"2.0","id":1,"result":20}` {
		t.Errorf("starknet_blockNumber: %s", got)
	}
}
