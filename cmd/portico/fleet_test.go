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
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/porticohq/portico/config"
)

// fleetFront is one node of a mixed fleet in front of a real anvil: a
// full node that keeps the state of its newest keep blocks answers older
// state reads with its software's words (geth's, -32000, as real full
// nodes do); an archive (keep 0) answers everything, delay later. It
// counts the state reads it is sent.
type fleetFront struct {
	node  string
	keep  uint64
	words string // with %s for the block's state root
	delay time.Duration
	reads atomic.Int64
	srv   *httptest.Server
}

// fleetStateMethods are the state reads a front judges, with the index
// of their block param.
var fleetStateMethods = map[string]int{"eth_getBalance": 1, "eth_getTransactionCount": 1, "eth_getCode": 1, "eth_getStorageAt": 2, "eth_call": 1}

func newFleetFront(t *testing.T, f *fleetFront) *fleetFront {
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil {
			if pos, ok := fleetStateMethods[req.Method]; ok {
				f.reads.Add(1)
				if f.keep > 0 && pos < len(req.Params) {
					if n, root, ok := fleetBlock(t, f.node, req.Params[pos]); ok && fleetHead(t, f.node)-n >= f.keep {
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%q}}`, req.ID, fmt.Sprintf(f.words, root))
						return
					}
				}
				time.Sleep(f.delay)
			}
		}
		forwardTo(w, f.node, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// forwardTo passes a call's body on to node and its answer back, as a
// front that lets the call through.
func forwardTo(w http.ResponseWriter, node string, body []byte) {
	resp, err := http.Post(node, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	io.Copy(w, resp.Body)
}

// fleetHead is the node's newest block.
func fleetHead(t *testing.T, node string) uint64 {
	var n hexutil.Uint64
	json.Unmarshal(nodeRPC(t, node, "eth_blockNumber"), &n)
	return uint64(n)
}

// fleetBlock reads a block param (a number, a tag, or an EIP-1898
// object) as the node's block number and state root.
func fleetBlock(t *testing.T, node string, p json.RawMessage) (uint64, string, bool) {
	var block struct {
		Number    hexutil.Uint64 `json:"number"`
		StateRoot string         `json:"stateRoot"`
	}
	var s string
	var obj struct {
		BlockHash   *common.Hash    `json:"blockHash"`
		BlockNumber *hexutil.Uint64 `json:"blockNumber"`
	}
	switch {
	case json.Unmarshal(p, &s) == nil && s == "earliest":
		json.Unmarshal(nodeRPC(t, node, "eth_getBlockByNumber", "0x0", false), &block)
	case json.Unmarshal(p, &s) == nil && strings.HasPrefix(s, "0x"):
		json.Unmarshal(nodeRPC(t, node, "eth_getBlockByNumber", s, false), &block)
	case json.Unmarshal(p, &obj) == nil && obj.BlockHash != nil:
		json.Unmarshal(nodeRPC(t, node, "eth_getBlockByHash", obj.BlockHash, false), &block)
	case obj.BlockNumber != nil:
		json.Unmarshal(nodeRPC(t, node, "eth_getBlockByNumber", obj.BlockNumber, false), &block)
	default:
		return 0, "", false // latest, pending, safe, finalized: the newest state
	}
	return uint64(block.Number), block.StateRoot, block.StateRoot != ""
}

// fleetChain starts anvil with 80 blocks over which one account's balance
// and nonce change at every block, and returns its URL and the account.
func fleetChain(t *testing.T, ctx context.Context) (string, common.Address) {
	node := startAnvil(t, ctx)
	acct := common.HexToAddress("0x00000000000000000000000000000000000f1ee7")
	for i := 1; i <= 80; i++ {
		nodeRPC(t, node.URL(), "anvil_setBalance", acct, hexutil.Uint64(i*1_000_000_007))
		nodeRPC(t, node.URL(), "anvil_setNonce", acct, hexutil.Uint64(i))
		nodeRPC(t, node.URL(), "evm_mine")
	}
	return node.URL(), acct
}

// fleetConfig is a network over the fronts, in their order.
func fleetConfig(fronts []*fleetFront, history ...string) config.Config {
	urls, order := map[string]string{}, []string{}
	for i, f := range fronts {
		name := fmt.Sprintf("node%d", i)
		urls[name], order = f.srv.URL, append(order, name)
	}
	cfg := verifyConfigFor(urls, order, "off")
	for i := range history {
		cfg.Networks[0].Upstreams[i].History = history[i]
	}
	return cfg
}

// TestMixedFleet: two full nodes that keep 16 blocks of state (answering
// older reads with geth's two texts) before an archive node 30 ms slower,
// all in front of one anvil. 120 reads of old state (balances and nonces
// at blocks 1 to 60 of 80), by number, and more by tag and by hash, are
// all answered as the chain's node answers them, from the archive; fresh
// reads still go to the first full node. With the reach in the config,
// an old read costs one node call.
func TestMixedFleet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node, acct := fleetChain(t, ctx)
	full1 := newFleetFront(t, &fleetFront{node: node, keep: 16, words: "historical state %s is not available"})
	full2 := newFleetFront(t, &fleetFront{node: node, keep: 16, words: "missing trie node %s (path ) <nil>"})
	archive := newFleetFront(t, &fleetFront{node: node, delay: 30 * time.Millisecond})
	fronts := []*fleetFront{full1, full2, archive}
	url := start(t, fleetConfig(fronts)).url(t, "anvil")

	read := func(method string, block any) {
		t.Helper()
		got, rpcErr, _ := gatewayCall(t, url, method, []any{acct, block})
		if rpcErr != nil {
			t.Errorf("%s at %v: %d %s", method, block, rpcErr.Code, rpcErr.Message)
			return
		}
		if want := nodeRPC(t, node, method, acct, block); !bytes.Equal(got, want) {
			t.Errorf("%s at %v: %s, the node says %s", method, block, got, want)
		}
	}
	for n := 1; n <= 60; n++ {
		read("eth_getBalance", hexutil.Uint64(n))
		read("eth_getTransactionCount", hexutil.Uint64(n))
	}
	read("eth_getBalance", "earliest")
	for _, n := range []uint64{5, 20, 40} {
		var b struct{ Hash common.Hash }
		json.Unmarshal(nodeRPC(t, node, "eth_getBlockByNumber", hexutil.Uint64(n), false), &b)
		read("eth_getBalance", map[string]any{"blockHash": b.Hash})
		read("eth_getTransactionCount", map[string]any{"blockNumber": hexutil.Uint64(n)})
	}
	t.Logf("old reads: full1 %d, full2 %d, archive %d node calls", full1.reads.Load(), full2.reads.Load(), archive.reads.Load())
	before1, beforeArchive := full1.reads.Load(), archive.reads.Load()
	for i := range 5 {
		// Five accounts: the same read again would be the cache's.
		got, rpcErr, _ := gatewayCall(t, url, "eth_getBalance", []any{common.Address{byte(i + 1)}, "latest"})
		if rpcErr != nil || string(got) != `"0x0"` {
			t.Errorf("fresh read: %s %v", got, rpcErr)
		}
	}
	if full1.reads.Load()-before1 != 5 || archive.reads.Load() != beforeArchive {
		t.Errorf("fresh reads: full1 %d, archive %d; want all 5 on the first full node", full1.reads.Load()-before1, archive.reads.Load()-beforeArchive)
	}

	// The reach in config: one node call per old read.
	for _, f := range fronts {
		f.reads.Store(0)
	}
	url = start(t, fleetConfig(fronts, "16", "16", "archive")).url(t, "anvil")
	for n := 1; n <= 30; n++ {
		read("eth_getTransactionCount", hexutil.Uint64(n))
	}
	if a, f := archive.reads.Load(), full1.reads.Load()+full2.reads.Load(); a != 30 || f != 0 {
		t.Errorf("configured reach: 30 old reads cost archive %d and full nodes %d node calls; want 30 and 0", a, f)
	}
}

// TestConfigCheckReach: a history that is neither archive nor a number,
// and a method entry the family does not know, are refused by portico
// config check naming the field.
func TestConfigCheckReach(t *testing.T) {
	for _, c := range []struct {
		edit func(*config.Upstream)
		want string
	}{
		{func(u *config.Upstream) { u.History = "full" }, `networks[0].upstreams[0].history: "full" must be archive or a number of blocks`},
		{func(u *config.Upstream) { u.History = "0" }, `networks[0].upstreams[0].history: "0" must be archive`},
		{func(u *config.Upstream) { u.Lacks = []string{"eth_getProff"} }, `networks[0].upstreams[0].lacks[0]: "eth_getProff" is not a method or namespace of the evm family`},
		{func(u *config.Upstream) { u.Methods = []string{"eth_call", "nope_"} }, `networks[0].upstreams[0].methods[1]: "nope_" is not a method or namespace of the evm family`},
		{func(u *config.Upstream) { u.Methods = []string{"eth call"} }, `networks[0].upstreams[0].methods[0]: "eth call" is not a method name`},
		{func(u *config.Upstream) { u.Rate.Concurrent = -1 }, `networks[0].upstreams[0].rate.concurrent: must be 0 to`},
	} {
		cfg := verifyConfigFor(map[string]string{"a": "http://127.0.0.1:1"}, []string{"a"}, "off")
		c.edit(&cfg.Networks[0].Upstreams[0])
		err := checkConfig(&cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	cfg := verifyConfigFor(map[string]string{"a": "http://127.0.0.1:1"}, []string{"a"}, "off")
	cfg.Networks[0].Upstreams[0].History, cfg.Networks[0].Upstreams[0].Lacks = "128", []string{"debug_", "eth_getProof"}
	if err := checkConfig(&cfg); err != nil {
		t.Errorf("a good reach refused: %v", err)
	}
}

// slotFront is a slot-chain node in front of a real one that no longer
// has the blocks of slots below below: it answers getBlock for them with
// agave's words (code and message as rpc_custom_error.rs writes them).
type slotFront struct {
	node  string
	below uint64
	old   uint64 // calls about slots below it are counted
	code  int
	words string // with %d for the slot (and the first available one)
	calls atomic.Int64
	srv   *httptest.Server
}

func newSlotFront(t *testing.T, f *slotFront) *slotFront {
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		var slot uint64
		if json.Unmarshal(body, &req) == nil && req.Method == "getBlock" && len(req.Params) > 0 && json.Unmarshal(req.Params[0], &slot) == nil && slot < f.old {
			f.calls.Add(1) // a client's call about an old slot, not head tracking's
			if slot < f.below {
				w.Header().Set("Content-Type", "application/json")
				msg := strings.ReplaceAll(fmt.Sprintf(f.words, slot), "%!d(MISSING)", strconv.FormatUint(f.below, 10))
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, req.ID, f.code, msg)
				return
			}
		}
		forwardTo(w, f.node, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// TestSlotFleet: on the slot chain, a node that cleaned up old slots and
// one that says they were skipped (agave's -32001 and -32007) before one
// that has them: getBlock of an old slot is answered as the node with
// the slot answers it.
func TestSlotFleet(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Networks = []config.Network{{Name: "solana-devnet", Family: "solana"}}
	node := start(t, cfg).m.Devnets["solana-devnet"].HTTPURL()
	var slots []uint64
	deadline := time.Now().Add(time.Minute)
	for len(slots) < 12 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		json.Unmarshal(nodeRPC(t, node, "getBlocks", 0), &slots)
	}
	if len(slots) < 12 {
		t.Fatalf("the devnet made %d blocks in a minute", len(slots))
	}
	below := slots[len(slots)-1] + 1
	cleaned := newSlotFront(t, &slotFront{node: node, below: below, old: below, code: -32001,
		words: "Block %d cleaned up, does not exist on node. First available block: %d"})
	skipped := newSlotFront(t, &slotFront{node: node, below: below, old: below, code: -32007,
		words: "Slot %d was skipped, or missing due to ledger jump to recent snapshot"})
	full := newSlotFront(t, &slotFront{node: node, old: below})
	fleet := config.DefaultConfig()
	fleet.Keys = []config.Key{{Name: "k", Key: "slotfleet0123456789abcdef0123456", DailyCredits: 1e12}}
	fleet.Networks = []config.Network{{Name: "solana", Family: "solana", Hedge: config.Hedge{Disabled: true}, Upstreams: []config.Upstream{
		{Name: "cleaned", URL: cleaned.srv.URL}, {Name: "skipped", URL: skipped.srv.URL}, {Name: "full", URL: full.srv.URL}}}}
	url := start(t, fleet).url(t, "solana")
	for _, slot := range slots[1:8] {
		opts := map[string]any{"encoding": "json", "maxSupportedTransactionVersion": 0, "commitment": "confirmed", "rewards": false}
		got, rpcErr, _ := gatewayCall(t, url, "getBlock", []any{slot, opts})
		if rpcErr != nil {
			t.Fatalf("getBlock %d: %d %s", slot, rpcErr.Code, rpcErr.Message)
		}
		if want := nodeRPC(t, node, "getBlock", slot, opts); !bytes.Equal(got, want) {
			t.Errorf("getBlock %d: the gateway answered %.300s, the node %.300s", slot, got, want)
		}
	}
	if full.calls.Load() != 7 || cleaned.calls.Load() != 1 || skipped.calls.Load() != 1 {
		t.Errorf("getBlock calls: the node with the slots %d of 7, the others %d and %d; want each asked once, then learned",
			full.calls.Load(), cleaned.calls.Load(), skipped.calls.Load())
	}
	t.Logf("node calls: cleaned %d, skipped %d, full %d", cleaned.calls.Load(), skipped.calls.Load(), full.calls.Load())
}
