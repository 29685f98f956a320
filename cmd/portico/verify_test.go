package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/evmcontracts"
)

// liar is a JSON-RPC proxy in front of a real node that changes what the
// node answers: the fault a verifying network must catch. Each lie keeps
// what a lazy check would look at (a header's hash stays the node's).
type liar struct {
	node string          // the real node's URL
	addr string          // the liar's own
	lies map[string]bool // which lies it tells
	told atomic.Int64

	mu     sync.Mutex
	calls  map[string]int // the calls it passed on, by method
	called chan struct{}  // a token after each call counted (at most one waits)
}

// count is how many calls of a method the liar passed on.
func (l *liar) count(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[method]
}

// The lies.
const (
	lieBalance = "balance" // eth_getProof's and eth_getBalance's balance
	lieStorage = "storage" // storage values, in proofs and eth_getStorageAt
	lieCode    = "code"    // eth_getCode
	lieLogData = "logdata" // a log's data, in eth_getLogs and receipts
	lieOmitLog = "omitlog" // one log left out of eth_getLogs
	lieCall    = "call"    // eth_call's result
	lieHeader  = "header"  // a header field, the hash kept
	lieHashes  = "hashes"  // another hash for a block asked by number (not by tag)

	// The rollup's lies.
	lieSnNonce  = "sn-nonce"  // a contract's nonce, in storage proofs and getNonce
	lieSnClass  = "sn-class"  // a contract's class hash, in proofs and getClassHashAt
	lieSnValue  = "sn-value"  // a storage proof's nodes (the value's path), and getStorageAt
	lieSnRoots  = "sn-roots"  // a storage proof's contracts tree root
	lieSnHeader = "sn-header" // a header's new_root, its block_hash kept
)

func startLiar(t testing.TB, node string, lies ...string) *liar {
	l := &liar{node: node, lies: map[string]bool{}, called: make(chan struct{}, 1)}
	for _, x := range lies {
		l.lies[x] = true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.addr = ln.Addr().String()
	srv := &http.Server{Handler: l}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return l
}

func (l *liar) url() string { return "http://" + l.addr }

func (l *liar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	resp, err := http.Post(l.node, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var req struct {
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	var env map[string]any
	if json.Unmarshal(body, &req) == nil {
		l.mu.Lock()
		if l.calls == nil {
			l.calls = map[string]int{}
		}
		l.calls[req.Method]++
		l.mu.Unlock()
		select {
		case l.called <- struct{}{}:
		default:
		}
	}
	if json.Unmarshal(body, &req) == nil && json.Unmarshal(out, &env) == nil && env["result"] != nil {
		if req.Method == "eth_getBlockByNumber" && l.lies[lieHashes] && len(req.Params) > 0 && strings.HasPrefix(string(req.Params[0]), `"0x`) {
			req.Method = "byNumber"
		}
		if res, lied := l.lie(req.Method, env["result"]); lied {
			env["result"] = res
			out, _ = json.Marshal(env)
			l.told.Add(1)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// lie changes a result as the liar's lies say, and reports whether it did.
func (l *liar) lie(method string, res any) (any, bool) {
	obj, _ := res.(map[string]any)
	list, _ := res.([]any)
	switch {
	case method == "eth_getProof" && l.lies[lieBalance] && obj != nil:
		obj["balance"] = "0xdeadbeef"
		return obj, true
	case method == "eth_getProof" && l.lies[lieStorage] && obj != nil:
		sp, _ := obj["storageProof"].([]any)
		lied := false
		for _, s := range sp {
			if m, ok := s.(map[string]any); ok {
				m["value"] = "0x1234"
				lied = true
			}
		}
		return obj, lied
	case method == "eth_getBalance" && l.lies[lieBalance]:
		return "0xdeadbeef", true
	case method == "eth_getStorageAt" && l.lies[lieStorage]:
		return "0x0000000000000000000000000000000000000000000000000000000000001234", true
	case method == "eth_getCode" && l.lies[lieCode]:
		if s, ok := res.(string); ok && len(s) > 2 {
			return s + "00", true
		}
	case method == "eth_call" && l.lies[lieCall]:
		return "0x" + strings.Repeat("ab", 32), true
	case method == "eth_getLogs" && l.lies[lieOmitLog] && len(list) > 1:
		return append(list[:len(list)/2:len(list)/2], list[len(list)/2+1:]...), true
	case method == "eth_getLogs" && l.lies[lieLogData] && len(list) > 0:
		list[0].(map[string]any)["data"] = "0x" + strings.Repeat("ee", 32)
		return list, true
	case (method == "eth_getBlockReceipts" || method == "eth_getTransactionReceipt") && l.lies[lieLogData]:
		receipts := list
		if obj != nil {
			receipts = []any{obj}
		}
		lied := false
		for _, r := range receipts {
			logs, _ := r.(map[string]any)["logs"].([]any)
			if len(logs) > 0 {
				logs[0].(map[string]any)["data"] = "0x" + strings.Repeat("ee", 32)
				lied = true
			}
		}
		return res, lied
	case method == "byNumber" && obj != nil:
		obj["hash"] = "0x" + strings.Repeat("66", 32)
		return obj, true
	case method == "starknet_getStorageProof" && obj != nil:
		return l.lieProof(obj)
	case method == "starknet_getNonce" && l.lies[lieSnNonce],
		method == "starknet_getClassHashAt" && l.lies[lieSnClass],
		method == "starknet_getStorageAt" && l.lies[lieSnValue]:
		return "0x1234", true
	case method == "starknet_getBlockWithTxHashes" && l.lies[lieSnHeader] && obj != nil:
		obj["new_root"] = "0x1234"
		return obj, true
	case (method == "eth_getBlockByNumber" || method == "eth_getBlockByHash") && l.lies[lieHeader] && obj != nil:
		obj["extraData"] = "0x0badc0de"
		return obj, true
	}
	return res, false
}

// lieProof changes a starknet_getStorageProof answer as the rollup lies
// say.
func (l *liar) lieProof(p map[string]any) (any, bool) {
	lied := false
	cp, _ := p["contracts_proof"].(map[string]any)
	leaves, _ := cp["contract_leaves_data"].([]any)
	for _, x := range leaves {
		leaf, _ := x.(map[string]any)
		if l.lies[lieSnNonce] && leaf != nil {
			leaf["nonce"], lied = "0x99", true
		}
		if l.lies[lieSnClass] && leaf != nil {
			leaf["class_hash"], lied = "0x1234", true
		}
	}
	if l.lies[lieSnValue] {
		proofs, _ := p["contracts_storage_proofs"].([]any)
		for _, x := range proofs {
			nodes, _ := x.([]any)
			for _, n := range nodes {
				entry, _ := n.(map[string]any)
				node, _ := entry["node"].(map[string]any)
				for _, k := range []string{"child", "right"} {
					if _, ok := node[k]; ok {
						node[k], lied = "0x1234", true
					}
				}
			}
		}
	}
	if g, _ := p["global_roots"].(map[string]any); l.lies[lieSnRoots] && g != nil {
		g["contracts_tree_root"], lied = "0x1234", true
	}
	return p, lied
}

// verifyChain is one anvil with the test's contracts: a token, a reader
// that reads three of its slots and calls the token, an emitter whose
// transaction left three logs.
type verifyChain struct {
	url                     string
	dev, token, reader, emt common.Address
	emitTx                  common.Hash
}

func nodeRPC(t testing.TB, url, method string, params ...any) json.RawMessage {
	t.Helper()
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	if env.Error != nil {
		t.Fatalf("%s: %s", method, env.Error)
	}
	return env.Result
}

func startVerifyChain(t testing.TB, ctx context.Context) *verifyChain {
	node := startAnvil(t, ctx)
	c := &verifyChain{url: node.URL()}
	var accounts []common.Address
	json.Unmarshal(nodeRPC(t, c.url, "eth_accounts"), &accounts)
	c.dev = accounts[0]
	holder := accounts[1]
	send := func(to *common.Address, data []byte) (common.Hash, json.RawMessage) {
		tx := map[string]any{"from": c.dev, "data": hexutil.Bytes(data), "gas": "0x1000000"}
		if to != nil {
			tx["to"] = to
		}
		var hash common.Hash
		json.Unmarshal(nodeRPC(t, c.url, "eth_sendTransaction", tx), &hash)
		for {
			// anvil mines on its own time: wait for the receipt.
			if r := nodeRPC(t, c.url, "eth_getTransactionReceipt", hash); string(r) != "null" {
				return hash, r
			}
			select {
			case <-ctx.Done():
				t.Fatalf("transaction %s not mined", hash)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	deploy := func(code []byte) common.Address {
		_, r := send(nil, code)
		var rc struct {
			ContractAddress common.Address `json:"contractAddress"`
		}
		json.Unmarshal(r, &rc)
		return rc.ContractAddress
	}
	c.token = deploy(evmcontracts.TokenInit(map[common.Address]uint64{holder: 1000, c.dev: 7}))
	c.reader = deploy(evmcontracts.ReaderInit(c.token, holder))
	c.emt = deploy(evmcontracts.EmitterInit())
	c.emitTx, _ = send(&c.emt, common.LeftPadBytes([]byte{42}, 32))
	send(&c.emt, common.LeftPadBytes([]byte{43}, 32))
	return c
}

// verifyCase is one client call and the lie that should not reach the
// client.
type verifyCase struct {
	name   string
	lies   []string
	method string
	params func(c *verifyChain) []any
	// fault is the node call the liar's answer fails in.
	fault string
}

var verifyCases = []verifyCase{
	{"balance", []string{lieBalance}, "eth_getBalance", func(c *verifyChain) []any { return []any{c.dev, "latest"} }, "eth_getProof"},
	{"storage", []string{lieStorage}, "eth_getStorageAt", func(c *verifyChain) []any { return []any{c.reader, "0x1", "latest"} }, "eth_getProof"},
	{"code", []string{lieCode}, "eth_getCode", func(c *verifyChain) []any { return []any{c.reader, "latest"} }, "eth_getCode"},
	{"log data", []string{lieLogData}, "eth_getLogs", func(c *verifyChain) []any {
		return []any{map[string]any{"fromBlock": "0x0", "toBlock": "latest", "address": c.emt}}
	}, "eth_getLogs"},
	{"log left out", []string{lieOmitLog}, "eth_getLogs", func(c *verifyChain) []any {
		return []any{map[string]any{"fromBlock": "0x0", "toBlock": "latest", "address": c.emt}}
	}, "eth_getLogs"},
	{"receipt", []string{lieLogData}, "eth_getTransactionReceipt", func(c *verifyChain) []any { return []any{c.emitTx} }, "eth_getBlockReceipts"},
	// The reader reads three of its slots and calls the token: the call is
	// run locally, and the liar's state (and its own eth_call answer) is
	// never taken.
	{"call", []string{lieCall, lieStorage}, "eth_call", func(c *verifyChain) []any {
		return []any{map[string]any{"to": c.reader}, "latest"}
	}, "eth_getProof"},
	{"balanceOf", []string{lieCall, lieStorage}, "eth_call", func(c *verifyChain) []any {
		return []any{map[string]any{"to": c.token, "data": hexutil.Bytes(evmcontracts.BalanceOfCall(c.dev))}, "latest"}
	}, "eth_getProof"},
	{"header", []string{lieHeader}, "eth_getBlockByNumber", func(c *verifyChain) []any { return []any{"latest", true} }, "eth_getBlockByHash"},
}

// comparable drops what a verified block answer does not pass on as the
// node sent it (docs/verify.md): totalDifficulty, and size recomputed.
func comparable(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "totalDifficulty")
		delete(m, "size")
	}
	return v
}

func verifyConfigFor(urls map[string]string, order []string, mode string) config.Config {
	return verifyNetworkConfig("evm", "anvil", urls, order, mode)
}

// verifyNetworkConfig is one verifying network of a family over the
// named nodes, in order.
func verifyNetworkConfig(family portico.Family, name string, urls map[string]string, order []string, mode string) config.Config {
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "verify", Key: "verify0123456789abcdef0123456789", DailyCredits: 1e12}}
	n := config.Network{Name: name, Family: family, Verify: mode, PollInterval: 100 * time.Millisecond,
		Hedge: config.Hedge{Disabled: true}}
	for _, name := range order {
		n.Upstreams = append(n.Upstreams, config.Upstream{Name: name, URL: urls[name]})
	}
	cfg.Networks = []config.Network{n}
	return cfg
}

// gatewayCall posts one call (to portico, or straight to a node) and
// returns the result (or error) and the X-Portico-Verified header.
func gatewayCall(t *testing.T, url, method string, params any) (json.RawMessage, *struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return env.Result, env.Error, resp.Header.Get("X-Portico-Verified")
}

// counterValue reads a counter of the running portico.
func counterValue(t *testing.T, s *started, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := s.m.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metric
				}
			}
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// TestVerifiedAnswers: one anvil behind three nodes, two direct and a
// liar in front, first in order. With verify: on every answer the client
// gets equals the honest node's and says it was verified; the liar is
// benched, counted per node and method, and logged with what did not
// match. With the liar alone and verify: strict, the call is refused
// with -32058.
func TestVerifiedAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	chain := startVerifyChain(t, ctx)
	for _, tc := range verifyCases {
		t.Run(tc.name, func(t *testing.T) {
			liarCaught(t, "evm", chain.url, tc.method, tc.params(chain), tc.lies, tc.fault)
		})
	}
}

// liarCaught runs one call through a verifying network of three nodes of
// one chain (two honest, the liar first) and then the liar alone in
// strict: the client gets the honest node's answer, marked verified, and
// the liar is benched, counted under the node call fault and logged;
// alone in strict it is refused with -32058.
func liarCaught(t *testing.T, family portico.Family, node, method string, params []any, lies []string, fault string) {
	t.Helper()
	const name = "net"
	l := startLiar(t, node, lies...)
	want := nodeRPC(t, node, method, params...)

	s := start(t, verifyNetworkConfig(family, name, map[string]string{"liar": l.url(), "a": node, "b": node}, []string{"liar", "a", "b"}, "on"))
	got, rpcErr, verified := gatewayCall(t, s.url(t, name), method, params)
	if rpcErr != nil {
		t.Fatalf("verify on: error %d %s", rpcErr.Code, rpcErr.Message)
	}
	if !reflect.DeepEqual(comparable(t, got), comparable(t, want)) {
		t.Errorf("verify on: got %s\nwant the honest node's %s", got, want)
	}
	if verified != "true" {
		t.Errorf("X-Portico-Verified = %q, want true", verified)
	}
	if l.told.Load() == 0 {
		t.Fatal("the liar told no lie: the case tests nothing")
	}
	if n := counterValue(t, s, "portico_verify_faults_total", map[string]string{"node": "liar", "method": fault}); n < 1 {
		t.Errorf("portico_verify_faults_total{node=liar,method=%s} = %v, want at least 1", fault, n)
	}
	if n := counterValue(t, s, "portico_verify_faults_total", map[string]string{"node": "a"}) + counterValue(t, s, "portico_verify_faults_total", map[string]string{"node": "b"}); n != 0 {
		t.Errorf("honest nodes counted %v faults", n)
	}
	benched := false
	for _, st := range s.m.Pool(name).Nodes() {
		if st.Name == "liar" {
			benched = st.Benched
		}
	}
	if !benched {
		t.Error("the liar is not benched")
	}
	if logs := s.logs.String(); !strings.Contains(logs, "wrong answer from node") || !strings.Contains(logs, "node=liar") || !strings.Contains(logs, "method="+fault) {
		t.Errorf("no log line naming the node, the method and the mismatch:\n%s", logs)
	}

	strictLiar := startLiar(t, node, lies...)
	s2 := start(t, verifyNetworkConfig(family, name, map[string]string{"liar": strictLiar.url()}, []string{"liar"}, "strict"))
	got, rpcErr, verified = gatewayCall(t, s2.url(t, name), method, params)
	if rpcErr == nil || rpcErr.Code != -32058 {
		t.Errorf("verify strict, the liar alone: got %s, error %+v; want -32058", got, rpcErr)
	}
	if verified != "false" {
		t.Errorf("strict refusal: X-Portico-Verified = %q, want false", verified)
	}
}

// TestVerifyStrictRefusesUncheckable: with verify: strict a method whose
// answer nothing commits to is refused; with on it is passed on marked
// unverified.
func TestVerifyStrictRefusesUncheckable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chain := startVerifyChain(t, ctx)
	for _, mode := range []string{"on", "strict"} {
		s := start(t, verifyConfigFor(map[string]string{"a": chain.url, "b": chain.url}, []string{"a", "b"}, mode))
		got, rpcErr, verified := gatewayCall(t, s.url(t, "anvil"), "eth_gasPrice", nil)
		switch mode {
		case "on":
			if rpcErr != nil || len(got) == 0 || verified != "false" {
				t.Errorf("on: eth_gasPrice = %s, %+v, verified %q; want the node's answer marked false", got, rpcErr, verified)
			}
		case "strict":
			if rpcErr == nil || rpcErr.Code != -32058 || verified != "false" {
				t.Errorf("strict: eth_gasPrice = %s, %+v; want -32058", got, rpcErr)
			}
		}
		got, rpcErr, verified = gatewayCall(t, s.url(t, "anvil"), "eth_getBalance", []any{chain.dev, "latest"})
		if want := nodeRPC(t, chain.url, "eth_getBalance", chain.dev, "latest"); rpcErr != nil || string(got) != string(want) || verified != "true" {
			t.Errorf("%s: eth_getBalance = %s, %+v, verified %q; want %s, true", mode, got, rpcErr, verified, want)
		}
	}
}

// TestVerifiedMethods: every verified method through a strict network of
// two honest nodes answers what the node answers (less what docs/verify.md
// says a verified block leaves out), marked verified.
func TestVerifiedMethods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chain := startVerifyChain(t, ctx)
	var rc struct {
		BlockHash   common.Hash    `json:"blockHash"`
		BlockNumber hexutil.Uint64 `json:"blockNumber"`
	}
	json.Unmarshal(nodeRPC(t, chain.url, "eth_getTransactionReceipt", chain.emitTx), &rc)
	s := start(t, verifyConfigFor(map[string]string{"a": chain.url, "b": chain.url}, []string{"a", "b"}, "strict"))
	readerCall := map[string]any{"to": chain.reader}
	writeCall := map[string]any{"from": chain.dev, "to": chain.reader, "data": "0x01"}
	cases := []struct {
		method string
		params []any
	}{
		{"eth_chainId", nil},
		{"eth_blockNumber", nil},
		{"eth_getBalance", []any{chain.dev, "latest"}},
		{"eth_getTransactionCount", []any{chain.dev, "latest"}},
		{"eth_getStorageAt", []any{chain.reader, "0x2", "latest"}},
		{"eth_getStorageAt", []any{chain.token, evmcontracts.BalanceSlot(chain.dev), map[string]any{"blockHash": rc.BlockHash}}},
		{"eth_getCode", []any{chain.token, "latest"}},
		{"eth_getProof", []any{chain.reader, []any{common.HexToHash("0x1"), common.HexToHash("0x5")}, "latest"}},
		{"eth_getBlockByNumber", []any{"0x1", false}},
		{"eth_getBlockByNumber", []any{rc.BlockNumber, true}},
		{"eth_getBlockByHash", []any{rc.BlockHash, false}},
		{"eth_getTransactionByBlockNumberAndIndex", []any{rc.BlockNumber, "0x0"}},
		{"eth_getTransactionByBlockHashAndIndex", []any{rc.BlockHash, "0x0"}},
		{"eth_getTransactionByHash", []any{chain.emitTx}},
		{"eth_getTransactionReceipt", []any{chain.emitTx}},
		{"eth_getBlockReceipts", []any{rc.BlockNumber}},
		{"eth_getLogs", []any{map[string]any{"blockHash": rc.BlockHash}}},
		{"eth_getLogs", []any{map[string]any{"fromBlock": "earliest", "toBlock": "latest", "topics": []any{nil, common.HexToHash("0xbb")}}}},
		{"eth_call", []any{readerCall, "latest"}},
		{"eth_call", []any{map[string]any{"to": chain.token, "data": "0x12345678"}, "latest"}}, // reverts: unknown selector
		{"eth_estimateGas", []any{writeCall, "latest"}},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			got, rpcErr, verified := gatewayCall(t, s.url(t, "anvil"), tc.method, tc.params)
			if verified != "true" {
				t.Errorf("X-Portico-Verified = %q (error %+v)", verified, rpcErr)
			}
			// The node's own answer, asked directly.
			wantResult, wantErr, _ := gatewayCall(t, chain.url, tc.method, append([]any{}, tc.params...))
			if wantErr != nil {
				if rpcErr == nil || rpcErr.Code != wantErr.Code || rpcErr.Message != wantErr.Message {
					t.Errorf("error %+v, want the node's %+v", rpcErr, wantErr)
				}
				return
			}
			if rpcErr != nil {
				t.Fatalf("error %d %s", rpcErr.Code, rpcErr.Message)
			}
			if !reflect.DeepEqual(comparable(t, got), comparable(t, wantResult)) {
				t.Errorf("got %s\nwant %s", got, wantResult)
			}
		})
	}
}

// TestVerifyCheckpoint: two nodes that never agree on a hash by number
// (one lies about it) and a quorum of 2: nothing is trusted and strict
// refuses; with the head's hash as verify_checkpoint, calls at the head
// and below it (by parent links) are verified.
func TestVerifyCheckpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chain := startVerifyChain(t, ctx)
	l := startLiar(t, chain.url, lieHashes)
	var head struct {
		Hash   common.Hash    `json:"hash"`
		Number hexutil.Uint64 `json:"number"`
	}
	json.Unmarshal(nodeRPC(t, chain.url, "eth_getBlockByNumber", "latest", false), &head)
	cfg := verifyConfigFor(map[string]string{"a": chain.url, "liar": l.url()}, []string{"a", "liar"}, "strict")
	cfg.Networks[0].VerifyQuorum = 2
	s := start(t, cfg)
	if _, rpcErr, _ := gatewayCall(t, s.url(t, "anvil"), "eth_getBalance", []any{chain.dev, "latest"}); rpcErr == nil || rpcErr.Code != -32058 {
		t.Fatalf("no quorum, no checkpoint: error %+v, want -32058", rpcErr)
	}
	if l.told.Load() == 0 {
		t.Fatal("the liar told no lie")
	}
	cfg.Networks[0].VerifyCheckpoint = head.Hash.Hex()
	s = start(t, cfg)
	for _, block := range []any{"latest", hexutil.Uint64(uint64(head.Number) - 1)} {
		got, rpcErr, verified := gatewayCall(t, s.url(t, "anvil"), "eth_getBalance", []any{chain.dev, block})
		want := nodeRPC(t, chain.url, "eth_getBalance", chain.dev, block)
		if rpcErr != nil || string(got) != string(want) || verified != "true" {
			t.Errorf("checkpoint, block %v: %s, %+v, verified %q; want %s", block, got, rpcErr, verified, want)
		}
	}
}

// TestVerifyFollowsHeads: a new head's header is trusted in the
// background as the chain view reports it, so the first verified read at
// the new block asks the node for its proof alone, not for the hash and
// header first.
func TestVerifyFollowsHeads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx)
	// anvil's genesis header carries the empty trie's root whatever its
	// accounts hold: start one block on.
	nodeRPC(t, node.URL(), "evm_mine")
	proxy := startLiar(t, node.URL()) // tells no lie: it counts calls
	s := start(t, verifyConfigFor(map[string]string{"a": proxy.url()}, []string{"a"}, "on"))
	url := s.url(t, "anvil")
	var accounts []common.Address
	json.Unmarshal(nodeRPC(t, node.URL(), "eth_accounts"), &accounts)
	if _, rpcErr, _ := gatewayCall(t, url, "eth_getBalance", []any{accounts[0], "latest"}); rpcErr != nil {
		t.Fatalf("%s\n%s", rpcErr.Message, s.logs.String())
	}
	for range 2 {
		headers := proxy.count("eth_getBlockByHash")
		nodeRPC(t, node.URL(), "evm_mine")
		for proxy.count("eth_getBlockByHash") == headers {
			select {
			case <-ctx.Done():
				t.Fatal("the new head's header was not read before any call asked for it")
			case <-proxy.called: // another call reached the node: count again
			}
		}
		var head string
		json.Unmarshal(nodeRPC(t, node.URL(), "eth_blockNumber"), &head)
		before := map[string]int{}
		for _, m := range []string{"eth_getBlockByHash", "eth_getBlockByNumber", "eth_getProof"} {
			before[m] = proxy.count(m)
		}
		got, rpcErr, verified := gatewayCall(t, url, "eth_getBalance", []any{accounts[1], head})
		if rpcErr != nil || verified != "true" || string(got) != string(nodeRPC(t, node.URL(), "eth_getBalance", accounts[1], head)) {
			t.Fatalf("balance at %s: %s %+v verified %q", head, got, rpcErr, verified)
		}
		if d := proxy.count("eth_getProof") - before["eth_getProof"]; d != 1 {
			t.Errorf("%d proofs asked for one read", d)
		}
		if d := proxy.count("eth_getBlockByHash") - before["eth_getBlockByHash"]; d != 0 {
			t.Errorf("the read at the new head read %d headers: it was not trusted before", d)
		}
	}
}
