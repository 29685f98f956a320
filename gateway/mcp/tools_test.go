package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/porticohq/portico/families/evm/evmtx"
	"github.com/porticohq/portico/gateway"
)

// echoInit deploys a contract whose every call returns its call data
// after the selector: what call_contract encodes comes back to be
// decoded.
var echoInit = common.FromHex("600e600c600039600e6000f3" + "3660049003806004600037" + "6000f3")

// charged is what a tool answer says it cost.
func charged(t testing.TB, m map[string]any) int64 {
	t.Helper()
	c, ok := m["credits"].(map[string]any)
	if !ok {
		t.Fatalf("no credits in %v", m)
	}
	return int64(c["charged"].(float64))
}

// costs sums the prices of methods on network.
func (e *env) costs(network string, methods ...string) int64 {
	var sum int64
	for _, n := range e.nets {
		if n.Name == network {
			for _, m := range methods {
				sum += int64(n.Methods.Lookup(m).Cost)
			}
		}
	}
	return sum
}

// TestEVMTools: every EVM tool's answer equals the JSON-RPC calls it
// stands for, and costs what they cost.
func TestEVMTools(t *testing.T) {
	e := newEnv(t, envOptions{})
	key := e.key(t, "agent", 100_000_000)
	cs, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ec, err := ethclient.Dial(e.dev.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	accts := e.dev.Accounts()
	sender := &evmtx.Sender{Client: ec, ChainID: e.dev.ChainID()}
	_, echo, err := sender.Deploy(ctx, accts[0].Key, echoInit)
	if err != nil {
		t.Fatal(err)
	}
	_, emitter, err := sender.Deploy(ctx, accts[1].Key, evmtx.EmitterInit)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dev.Commit(); err != nil {
		t.Fatal(err)
	}
	txHash, err := sender.Call(ctx, accts[2].Key, emitter)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dev.Commit(); err != nil {
		t.Fatal(err)
	}
	rcpt, err := ec.TransactionReceipt(ctx, common.HexToHash(txHash.Hex()))
	if err != nil {
		t.Fatal(err)
	}
	num := hexutil.EncodeBig(rcpt.BlockNumber)
	// The gateway follows the chain's head; a log query past it is
	// refused.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if h, _ := e.net.Served.Upstream().HeadsFresh(); h.Latest >= rcpt.BlockNumber.Uint64() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway's head stays before %s", rcpt.BlockNumber)
		}
	}

	// get_transaction: the transaction and its receipt, two calls.
	res := structured(t, call(t, cs, "get_transaction", map[string]any{"network": evmNet, "hash": txHash.Hex()}))
	if !sameJSON(t, res["transaction"], e.rpc(t, key, "eth_getTransactionByHash", []any{txHash.Hex()})) ||
		!sameJSON(t, res["receipt"], e.rpc(t, key, "eth_getTransactionReceipt", []any{txHash.Hex()})) {
		t.Fatalf("get_transaction: %v", res)
	}
	if got, want := charged(t, res), e.costs(evmNet, "eth_getTransactionByHash", "eth_getTransactionReceipt"); got != want {
		t.Fatalf("get_transaction charged %d, its calls cost %d", got, want)
	}

	// get_block by number (decimal and hex), by hash, with and without
	// whole transactions.
	want := e.rpc(t, key, "eth_getBlockByNumber", []any{num, false})
	for _, b := range []string{num, rcpt.BlockNumber.String()} {
		res = structured(t, call(t, cs, "get_block", map[string]any{"network": evmNet, "block": b}))
		if !sameJSON(t, res["block"], want) {
			t.Fatalf("get_block %s: %v", b, res["block"])
		}
	}
	if got, want := charged(t, res), e.costs(evmNet, "eth_getBlockByNumber"); got != want {
		t.Fatalf("get_block charged %d, eth_getBlockByNumber costs %d", got, want)
	}
	res = structured(t, call(t, cs, "get_block", map[string]any{"network": evmNet, "block": rcpt.BlockHash.Hex(), "full_transactions": true}))
	if !sameJSON(t, res["block"], e.rpc(t, key, "eth_getBlockByHash", []any{rcpt.BlockHash.Hex(), true})) {
		t.Fatalf("get_block by hash: %v", res["block"])
	}

	// get_logs: the emitter's log.
	filter := map[string]any{"address": emitter.Hex(), "fromBlock": "0x0", "toBlock": num}
	res = structured(t, call(t, cs, "get_logs", map[string]any{"network": evmNet, "address": []any{emitter.Hex()}, "from_block": "0", "to_block": num}))
	if !sameJSON(t, res["logs"], e.rpc(t, key, "eth_getLogs", []any{filter})) || res["count"].(float64) != 1 {
		t.Fatalf("get_logs: %v", res)
	}
	res = structured(t, call(t, cs, "get_logs", map[string]any{"network": evmNet, "block_hash": rcpt.BlockHash.Hex(),
		"topics": []any{evmtx.EmitterTopic.Hex()}}))
	if !sameJSON(t, res["logs"], e.rpc(t, key, "eth_getLogs", []any{map[string]any{"blockHash": rcpt.BlockHash.Hex(), "topics": []any{evmtx.EmitterTopic.Hex()}}})) || res["count"].(float64) != 1 {
		t.Fatalf("get_logs by block hash: %v", res)
	}

	// call_contract: the arguments ABI-encoded, the echo decoded by the
	// return types, the raw answer eth_call's.
	sig := "function echo(uint256 amount, address who, bool flag, bytes32 tag, int8 delta) view returns (uint256, address, bool, bytes32, int8)"
	args := []any{"1000000000000000000000", accts[3].Address.Hex(), true, "0x" + strings.Repeat("cd", 32), -5}
	res = structured(t, call(t, cs, "call_contract", map[string]any{"network": evmNet, "to": echo.Hex(), "signature": sig, "args": args, "block": num}))
	selector := crypto.Keccak256([]byte("echo(uint256,address,bool,bytes32,int8)"))[:4]
	if data := res["data"].(string); !strings.HasPrefix(data, hexutil.Encode(selector)) || len(data) != 2+8+5*64 {
		t.Fatalf("call data %s", data)
	}
	raw := e.rpc(t, key, "eth_call", []any{map[string]any{"to": echo.Hex(), "data": res["data"]}, num})
	if !sameJSON(t, res["raw"], raw) {
		t.Fatalf("call_contract raw %v, eth_call %s", res["raw"], raw)
	}
	wantDecoded := []any{"1000000000000000000000", accts[3].Address.Hex(), true, "0x" + strings.Repeat("cd", 32), "-5"}
	if !sameJSON(t, res["result"], wantDecoded) {
		t.Fatalf("decoded %v, want %v", res["result"], wantDecoded)
	}
	if got, want := charged(t, res), e.costs(evmNet, "eth_call"); got != want {
		t.Fatalf("call_contract charged %d, eth_call costs %d", got, want)
	}
	// Without return types: the raw bytes only.
	res = structured(t, call(t, cs, "call_contract", map[string]any{"network": evmNet, "to": echo.Hex(), "signature": "f(uint8[2])", "args": []any{[]any{1, 2}}, "block": num}))
	if _, ok := res["result"]; ok || res["raw"] != "0x"+strings.Repeat("0", 63)+"1"+strings.Repeat("0", 63)+"2" {
		t.Fatalf("call_contract without returns: %v", res)
	}
	// Arguments that do not fit their types are the tool's error, and
	// cost nothing.
	for _, bad := range []map[string]any{
		{"signature": "f(uint8)", "args": []any{256}},
		{"signature": "f(address)", "args": []any{"0x12"}},
		{"signature": "f(uint256)", "args": []any{}},
		{"signature": "f(uint256", "args": []any{1}},
		{"signature": "f(bytes4)", "args": []any{"0x1234"}},
	} {
		bad["network"], bad["to"] = evmNet, echo.Hex()
		r := call(t, cs, "call_contract", bad)
		if !r.IsError {
			t.Errorf("call_contract %v: %s", bad, text(r))
		}
	}

	// Tools of other families say which they serve.
	r := call(t, cs, "get_account", map[string]any{"network": evmNet, "address": "x"})
	if !r.IsError || !strings.Contains(text(r), "solana") {
		t.Fatalf("get_account on evm: %s", text(r))
	}
}

// TestSolanaTools: the slot chain's tools equal the JSON-RPC calls they
// stand for.
func TestSolanaTools(t *testing.T) {
	e := newEnv(t, envOptions{solana: true})
	key := e.key(t, "agent", 100_000_000)
	cs, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	// A block with transactions, from the traffic.
	var slot uint64
	var sig, payer string
	deadline := time.Now().Add(30 * time.Second)
	for sig == "" {
		if time.Now().After(deadline) {
			t.Fatal("no transaction in 30 s of traffic")
		}
		var cur uint64
		json.Unmarshal(e.rpcOn(t, key, solNet, "getSlot", []any{map[string]any{"commitment": "confirmed"}}), &cur)
		for s := cur; s > 0 && s+20 > cur && sig == ""; s-- {
			var blk struct {
				Transactions []struct {
					Transaction struct {
						Signatures []string `json:"signatures"`
						Message    struct {
							AccountKeys []string `json:"accountKeys"`
						} `json:"message"`
					} `json:"transaction"`
				} `json:"transactions"`
			}
			raw, ok := e.tryRPC(key, solNet, "getBlock", []any{s, map[string]any{"commitment": "confirmed", "encoding": "json", "transactionDetails": "full", "maxSupportedTransactionVersion": 0, "rewards": false}})
			if !ok || json.Unmarshal(raw, &blk) != nil || len(blk.Transactions) == 0 {
				continue
			}
			tx := blk.Transactions[0].Transaction
			slot, sig, payer = s, tx.Signatures[0], tx.Message.AccountKeys[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	opts := map[string]any{"commitment": "confirmed", "encoding": "json", "transactionDetails": "signatures", "maxSupportedTransactionVersion": 0, "rewards": false}
	res := structured(t, call(t, cs, "get_block", map[string]any{"network": solNet, "block": strconv.FormatUint(slot, 10)}))
	if !sameJSON(t, res["block"], e.rpcOn(t, key, solNet, "getBlock", []any{slot, opts})) {
		t.Fatalf("get_block %d: %v", slot, res["block"])
	}
	if got, want := charged(t, res), e.costs(solNet, "getBlock"); got != want {
		t.Fatalf("get_block charged %d, getBlock costs %d", got, want)
	}
	// A tag reads the slot first: two calls.
	res = structured(t, call(t, cs, "get_block", map[string]any{"network": solNet, "block": "finalized"}))
	if res["block"] == nil {
		t.Fatalf("get_block finalized: %v", res)
	}

	res = structured(t, call(t, cs, "get_transaction", map[string]any{"network": solNet, "hash": sig}))
	if !sameJSON(t, res["transaction"], e.rpcOn(t, key, solNet, "getTransaction", []any{sig, map[string]any{"commitment": "confirmed", "encoding": "json", "maxSupportedTransactionVersion": 0}})) {
		t.Fatalf("get_transaction: %v", res["transaction"])
	}
	if got, want := charged(t, res), e.costs(solNet, "getTransaction"); got != want {
		t.Fatalf("get_transaction charged %d, getTransaction costs %d", got, want)
	}

	// The system program's account and balance do not move.
	const system = "11111111111111111111111111111111"
	res = structured(t, call(t, cs, "get_account", map[string]any{"network": solNet, "address": system}))
	var got, wantAcct struct {
		Value json.RawMessage `json:"value"`
	}
	b, _ := json.Marshal(res["account"])
	json.Unmarshal(b, &got)
	json.Unmarshal(e.rpcOn(t, key, solNet, "getAccountInfo", []any{system, map[string]any{"encoding": "base64"}}), &wantAcct)
	if got.Value == nil || !sameJSON(t, got.Value, wantAcct.Value) {
		t.Fatalf("get_account: %s, getAccountInfo %s", got.Value, wantAcct.Value)
	}
	res = structured(t, call(t, cs, "get_balance", map[string]any{"network": solNet, "address": system}))
	var bal struct {
		Value json.Number `json:"value"`
	}
	json.Unmarshal(e.rpcOn(t, key, solNet, "getBalance", []any{system, map[string]any{}}), &bal)
	if res["balance"] != bal.Value.String() || res["unit"] != "lamports" {
		t.Fatalf("get_balance: %v, getBalance %s", res, bal.Value)
	}

	// The payer's signatures before the one found: history, fixed.
	res = structured(t, call(t, cs, "get_signatures_for_address", map[string]any{"network": solNet, "address": payer, "before": sig, "limit": 5}))
	sigs := func(v any) []string {
		b, _ := json.Marshal(v)
		var list []struct {
			Signature string `json:"signature"`
			Slot      uint64 `json:"slot"`
		}
		json.Unmarshal(b, &list)
		var out []string
		for _, l := range list {
			out = append(out, l.Signature+"@"+strconv.FormatUint(l.Slot, 10))
		}
		return out
	}
	wantSigs := sigs(json.RawMessage(e.rpcOn(t, key, solNet, "getSignaturesForAddress", []any{payer, map[string]any{"commitment": "confirmed", "limit": 5, "before": sig}})))
	if gotSigs := sigs(res["signatures"]); strings.Join(gotSigs, ",") != strings.Join(wantSigs, ",") {
		t.Fatalf("get_signatures_for_address %v, want %v", gotSigs, wantSigs)
	}
	if got, want := charged(t, res), e.costs(solNet, "getSignaturesForAddress"); got != want {
		t.Fatalf("get_signatures_for_address charged %d, costs %d", got, want)
	}
	if r := call(t, cs, "get_balance", map[string]any{"network": solNet, "address": system, "block": "latest"}); !r.IsError || !strings.Contains(text(r), "commitment") {
		t.Fatalf("get_balance with a tag on solana: %s", text(r))
	}
}

// TestStarknetTools: the rollup's tools equal the JSON-RPC calls they
// stand for.
func TestStarknetTools(t *testing.T) {
	e := newEnv(t, envOptions{starknet: true})
	key := e.key(t, "agent", 100_000_000)
	cs, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	// A block with transactions, from the traffic.
	var num uint64
	var txHash string
	deadline := time.Now().Add(30 * time.Second)
	for txHash == "" {
		if time.Now().After(deadline) {
			t.Fatal("no transaction in 30 s of traffic")
		}
		time.Sleep(200 * time.Millisecond)
		var cur uint64
		json.Unmarshal(e.rpcOn(t, key, starNet, "starknet_blockNumber", []any{}), &cur)
		for n := cur; n+10 > cur && txHash == ""; n-- {
			var blk struct {
				Transactions []string `json:"transactions"`
			}
			json.Unmarshal(e.rpcOn(t, key, starNet, "starknet_getBlockWithTxHashes", []any{map[string]any{"block_number": n}}), &blk)
			if len(blk.Transactions) > 0 {
				num, txHash = n, blk.Transactions[0]
			}
			if n == 0 {
				break
			}
		}
	}
	id := map[string]any{"block_number": num}
	res := structured(t, call(t, cs, "get_block", map[string]any{"network": starNet, "block": strconv.FormatUint(num, 10)}))
	if !sameJSON(t, res["block"], e.rpcOn(t, key, starNet, "starknet_getBlockWithTxHashes", []any{id})) {
		t.Fatalf("get_block: %v", res["block"])
	}
	// The embedded rollup devnet serves receipts but not
	// starknet_getTransactionByHash: the tool's error is that call's.
	r := call(t, cs, "get_transaction", map[string]any{"network": starNet, "hash": txHash})
	if _, ok := e.tryRPC(key, starNet, "starknet_getTransactionByHash", []any{txHash}); ok || !r.IsError || !strings.Contains(text(r), "starknet_getTransactionByHash") {
		t.Fatalf("get_transaction on a node without starknet_getTransactionByHash: %s", text(r))
	}
	res = structured(t, call(t, cs, "rpc_call", map[string]any{"network": starNet, "method": "starknet_getTransactionReceipt", "params": []any{txHash}}))
	if !sameJSON(t, res["result"], e.rpcOn(t, key, starNet, "starknet_getTransactionReceipt", []any{txHash})) {
		t.Fatalf("rpc_call starknet_getTransactionReceipt: %v", res)
	}
	if got, want := charged(t, res), e.costs(starNet, "starknet_getTransactionReceipt"); got != want {
		t.Fatalf("rpc_call charged %d, starknet_getTransactionReceipt costs %d", got, want)
	}
	res = structured(t, call(t, cs, "get_events", map[string]any{"network": starNet, "from_block": "0", "to_block": strconv.FormatUint(num, 10), "chunk_size": 5}))
	filter := map[string]any{"from_block": map[string]any{"block_number": 0}, "to_block": id, "chunk_size": 5}
	if !sameJSON(t, res["events"], e.rpcOn(t, key, starNet, "starknet_getEvents", map[string]any{"filter": filter})) {
		t.Fatalf("get_events: %v", res["events"])
	}
	if res["count"].(float64) == 0 {
		t.Fatalf("get_events found no events up to block %d", num)
	}
	if r = call(t, cs, "get_balance", map[string]any{"network": starNet, "address": "0x1"}); !r.IsError || !strings.Contains(text(r), "rpc_call") {
		t.Fatalf("get_balance on starknet: %s", text(r))
	}
}

// TestVerified: on a network that verifies answers, a tool's answer says
// whether it was verified, as X-Portico-Verified says for the same call
// over HTTP.
func TestVerified(t *testing.T) {
	e := newEnv(t, envOptions{verify: true})
	key := e.key(t, "agent", 100_000_000)
	cs, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dev.Commit(); err != nil {
		t.Fatal(err)
	}
	addr := e.dev.Accounts()[0].Address.Hex()
	// Verification needs a trusted header first: wait until HTTP says
	// an answer was verified.
	var header string
	for deadline := time.Now().Add(20 * time.Second); header != "true"; time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/v3/"+key, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["`+addr+`","latest"]}`))
		req.Host = evmHost
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		header = resp.Header.Get(gateway.HeaderVerified)
		if time.Now().After(deadline) {
			t.Fatalf("%s stays %q", gateway.HeaderVerified, header)
		}
	}
	res := call(t, cs, "get_balance", map[string]any{"network": evmNet, "address": addr})
	if m := structured(t, res); m["verified"] != true || !strings.Contains(text(res), "(verified)") {
		t.Fatalf("get_balance on a verified network: %v %q", m, text(res))
	}
	// Not verifiable (a method with no check): said so.
	res = call(t, cs, "rpc_call", map[string]any{"network": evmNet, "method": "eth_gasPrice", "params": []any{}})
	if m := structured(t, res); m["verified"] != false || !strings.Contains(text(res), "(not verified)") {
		t.Fatalf("eth_gasPrice on a verified network: %v %q", m, text(res))
	}
}
