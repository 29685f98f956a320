package evmverify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/core/vm/program"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/internal/anvil"
	"github.com/porticohq/portico/internal/evmcontracts"
	"github.com/porticohq/portico/network/verify"
)

// rpcSource is the executor's ProofSource over a node's JSON-RPC, asking
// at a block by hash (EIP-1898), as the gateway will.
type rpcSource struct{ c *rpc.Client }

func at(h common.Hash) map[string]any { return map[string]any{"blockHash": h} }

func (s rpcSource) GetProof(ctx context.Context, a common.Address, slots []common.Hash, h common.Hash) ([]byte, error) {
	var raw json.RawMessage
	if slots == nil {
		slots = []common.Hash{}
	}
	err := s.c.CallContext(ctx, &raw, "eth_getProof", a, slots, at(h))
	return raw, err
}

func (s rpcSource) GetCode(ctx context.Context, a common.Address, h common.Hash) ([]byte, error) {
	var raw json.RawMessage
	err := s.c.CallContext(ctx, &raw, "eth_getCode", a, at(h))
	return raw, err
}

func (s rpcSource) CreateAccessList(ctx context.Context, call []byte, h common.Hash) ([]byte, error) {
	var raw json.RawMessage
	err := s.c.CallContext(ctx, &raw, "eth_createAccessList", json.RawMessage(call), at(h))
	return raw, err
}

// anvilChain is anvil with the two test contracts deployed.
type anvilChain struct {
	c       *rpc.Client
	dev     common.Address
	holder  common.Address
	token   common.Address
	reader  common.Address
	chain   *evmverify.Chain
	holders []common.Address
}

func startAnvil(t testing.TB) *anvilChain {
	t.Helper()
	ctx := context.Background()
	// Blocks are mined on request (evm_mine), so a test knows when its
	// transaction is in.
	n, err := anvil.Start(ctx, anvil.Options{Args: []string{"--no-mining"}})
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	c, err := rpc.DialContext(ctx, n.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	a := &anvilChain{c: c, dev: crypto.PubkeyToAddress(n.DevKeys()[0].PublicKey), chain: evmverify.NewChain(evmverify.ConfigFor(31337))}
	a.holder = common.HexToAddress("0x00000000000000000000000000000000000b0b01")
	balances := map[common.Address]uint64{a.holder: 1000}
	for i := range 50 {
		h := common.BigToAddress(new(big.Int).Lsh(big.NewInt(1), uint(100+i)))
		a.holders = append(a.holders, h)
		balances[h] = uint64(i + 1)
	}
	a.token = a.deploy(t, evmcontracts.TokenInit(balances))
	a.reader = a.deploy(t, evmcontracts.ReaderInit(a.token, a.holder))
	return a
}

// deploy sends a creation from the dev account and mines a block.
func (a *anvilChain) deploy(t testing.TB, code []byte) common.Address {
	t.Helper()
	var hash common.Hash
	tx := map[string]any{"from": a.dev, "data": hexutil.Bytes(code), "gas": hexutil.Uint64(3_000_000)}
	if err := a.c.Call(&hash, "eth_sendTransaction", tx); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Call(nil, "evm_mine"); err != nil {
		t.Fatal(err)
	}
	var r struct {
		ContractAddress *common.Address `json:"contractAddress"`
		Status          hexutil.Uint64  `json:"status"`
	}
	var raw json.RawMessage
	if err := a.c.Call(&raw, "eth_getTransactionReceipt", hash); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.ContractAddress == nil || r.Status != 1 {
		t.Fatalf("deploy: %s %v", raw, err)
	}
	return *r.ContractAddress
}

// head verifies the node's newest block; anvil is the only node here, so
// its hash is taken as trusted (the gateway takes it from a quorum).
func (a *anvilChain) head(t testing.TB) *evmverify.Header {
	t.Helper()
	var raw json.RawMessage
	if err := a.c.Call(&raw, "eth_getBlockByNumber", "latest", true); err != nil {
		t.Fatal(err)
	}
	b, err := a.chain.VerifyBlock(raw, common.Hash{})
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	return b.Header
}

// nodeAnswer is a node's result or error for a call.
type nodeAnswer struct {
	result  json.RawMessage
	code    int
	message string
	data    string
}

func (a *anvilChain) ask(t testing.TB, method string, call map[string]any, h common.Hash) nodeAnswer {
	t.Helper()
	var raw json.RawMessage
	err := a.c.Call(&raw, method, call, at(h))
	if err == nil {
		return nodeAnswer{result: raw}
	}
	var ec rpc.Error
	if !errors.As(err, &ec) {
		t.Fatal(err)
	}
	ans := nodeAnswer{code: ec.ErrorCode(), message: err.Error()}
	var de rpc.DataError
	if errors.As(err, &de) {
		ans.data, _ = de.ErrorData().(string)
	}
	return ans
}

// local runs the executor and returns its answer in the same form.
func local(t testing.TB, ex *evmverify.Executor, method string, call map[string]any, h *evmverify.Header) nodeAnswer {
	t.Helper()
	raw, _ := json.Marshal(call)
	var out []byte
	var err error
	if method == "eth_call" {
		out, err = ex.Call(context.Background(), h, raw)
	} else {
		out, err = ex.EstimateGas(context.Background(), h, raw)
	}
	if err == nil {
		return nodeAnswer{result: out}
	}
	var ce *evmverify.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: %v", method, err)
	}
	return nodeAnswer{code: ce.Code, message: ce.Message, data: ce.Data}
}

// TestExecutorAgainstAnvil runs calls locally over verified state and
// compares every answer with anvil's own (another EVM implementation):
// a contract that reads several of its slots and calls another contract,
// its writing variant, the callee directly, a revert, and the gas
// estimates of each.
func TestExecutorAgainstAnvil(t *testing.T) {
	a := startAnvil(t)
	h := a.head(t)
	src := &countingSource{ProofSource: rpcSource{a.c}}
	ex := evmverify.NewExecutor(a.chain, src, evmverify.ExecutorOptions{})
	calls := map[string]map[string]any{
		"reader (reads 3 slots, calls the token)": {"to": a.reader},
		"reader writing":         {"to": a.reader, "data": "0x01", "from": a.dev},
		"token balanceOf":        {"to": a.token, "data": hexutil.Bytes(evmcontracts.BalanceOfCall(a.holder))},
		"token balanceOf nobody": {"to": a.token, "data": hexutil.Bytes(evmcontracts.BalanceOfCall(common.HexToAddress("0x1234")))},
		"token reverts":          {"to": a.token, "data": "0xdeadbeef"},
		"plain transfer":         {"from": a.dev, "to": common.HexToAddress("0x00000000000000000000000000000000000fee01"), "value": "0x1"},
	}
	for name, call := range calls {
		for _, method := range []string{"eth_call", "eth_estimateGas"} {
			t.Run(name+"/"+method, func(t *testing.T) {
				want := a.ask(t, method, call, h.Hash())
				got := local(t, ex, method, call, h)
				if string(got.result) != string(want.result) || got.code != want.code || got.data != want.data || got.message != want.message {
					t.Fatalf("local %+v (%s)\nnode  %+v (%s)", got, got.result, want, want.result)
				}
			})
		}
	}
	// The reader's answer carries the token's balance: the call reached
	// the other contract through verified state.
	got := local(t, ex, "eth_call", calls["reader (reads 3 slots, calls the token)"], h)
	var words hexutil.Bytes
	json.Unmarshal(got.result, &words)
	if len(words) != 128 || words[31] != 11 || words[63] != 22 || words[95] != 33 || common.BytesToHash(words[96:]).Big().Int64() != 1000 {
		t.Fatalf("reader returned %x", words)
	}
	// A cold balanceOf costs five node calls in two round trips: the
	// access list, then together the token's proof with its slot, its
	// code, and the sender's (the zero address) proof and code, which
	// turns out empty: an account first seen has its code asked for with
	// its proof.
	cold := &countingSource{ProofSource: rpcSource{a.c}}
	local(t, evmverify.NewExecutor(a.chain, cold, evmverify.ExecutorOptions{}), "eth_call", calls["token balanceOf"], h)
	if n := cold.calls.Load(); n != 5 {
		t.Fatalf("cold balanceOf: %d node calls, want 5", n)
	}
	// Asked again at the same block, nothing is fetched.
	before := src.calls.Load()
	local(t, ex, "eth_call", calls["reader (reads 3 slots, calls the token)"], h)
	if n := src.calls.Load() - before; n != 0 {
		t.Fatalf("%d node calls for a cached call", n)
	}
}

// lyingSource changes what a node says: no access list at all, or a
// storage value that is not the one proven.
type lyingSource struct {
	evmverify.ProofSource
	noAccessList bool
	badValue     bool
}

func (s lyingSource) CreateAccessList(ctx context.Context, call []byte, h common.Hash) ([]byte, error) {
	if s.noAccessList {
		return []byte(`{"accessList":[],"gasUsed":"0x5208"}`), nil
	}
	return s.ProofSource.CreateAccessList(ctx, call, h)
}

func (s lyingSource) GetProof(ctx context.Context, a common.Address, slots []common.Hash, h common.Hash) ([]byte, error) {
	raw, err := s.ProofSource.GetProof(ctx, a, slots, h)
	if err != nil || !s.badValue || len(slots) == 0 {
		return raw, err
	}
	var m map[string]any
	json.Unmarshal(raw, &m)
	m["storageProof"].([]any)[0].(map[string]any)["value"] = "0x2a"
	return json.Marshal(m)
}

// TestExecutorDistrustsNode runs the reader with a node that gives no
// access list (the executor finds the state by running, and still
// answers right) and with one that lies about a storage value (caught).
// A call at an older block answers from that block's state.
func TestExecutorDistrustsNode(t *testing.T) {
	a := startAnvil(t)
	old := a.head(t)
	call := map[string]any{"to": a.reader, "data": "0x01", "from": a.dev}

	ex := evmverify.NewExecutor(a.chain, lyingSource{ProofSource: rpcSource{a.c}, noAccessList: true}, evmverify.ExecutorOptions{})
	for _, m := range []string{"eth_call", "eth_estimateGas"} {
		if got, want := local(t, ex, m, call, old), a.ask(t, m, call, old.Hash()); string(got.result) != string(want.result) {
			t.Fatalf("%s without access list: %s, node %s", m, got.result, want.result)
		}
	}

	ex = evmverify.NewExecutor(a.chain, lyingSource{ProofSource: rpcSource{a.c}, badValue: true}, evmverify.ExecutorOptions{})
	raw, _ := json.Marshal(call)
	if _, err := ex.Call(context.Background(), old, raw); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("a lied storage value: %v", err)
	}

	// The writing call, mined, sets slot 4: storing there again costs
	// less gas, and each block's estimate is that block's.
	tx := map[string]any{"from": a.dev, "to": a.reader, "data": "0x01", "gas": hexutil.Uint64(200_000)}
	if err := a.c.Call(nil, "eth_sendTransaction", tx); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Call(nil, "evm_mine"); err != nil {
		t.Fatal(err)
	}
	now := a.head(t)
	ex = evmverify.NewExecutor(a.chain, rpcSource{a.c}, evmverify.ExecutorOptions{})
	gotOld, gotNow := local(t, ex, "eth_estimateGas", call, old), local(t, ex, "eth_estimateGas", call, now)
	wantOld, wantNow := a.ask(t, "eth_estimateGas", call, old.Hash()), a.ask(t, "eth_estimateGas", call, now.Hash())
	if string(gotOld.result) != string(wantOld.result) || string(gotNow.result) != string(wantNow.result) || string(gotOld.result) == string(gotNow.result) {
		t.Fatalf("estimates old %s (node %s), now %s (node %s)", gotOld.result, wantOld.result, gotNow.result, wantNow.result)
	}
}

// TestExecutorBlockHashAndConcurrency reads the grandparent's hash with
// BLOCKHASH (an eth_call without "to": the init code's returned bytes
// are the answer): with the trusted ancestors given, the answer equals
// anvil's; without them it is unverifiable (the parent's hash alone is
// in the header itself). Then many calls at one block
// run at once on one executor (run with -race).
func TestExecutorBlockHashAndConcurrency(t *testing.T) {
	a := startAnvil(t)
	h := a.head(t)
	code := program.New().Op(vm.NUMBER).Push(2).Op(vm.SWAP1, vm.SUB, vm.BLOCKHASH).Push(0).Op(vm.MSTORE).Return(0, 32).Bytes()
	call := map[string]any{"data": hexutil.Bytes(code)}
	want := a.ask(t, "eth_call", call, h.Hash())

	// The ancestors, trusted by walking parent links from the head.
	trust := verify.NewTrust(0)
	trust.Checkpoint(h.Hash(), h.Number())
	ancestors := map[common.Hash]*evmverify.Header{}
	for cur := h; cur.Number() > 0; {
		var raw json.RawMessage
		if err := a.c.Call(&raw, "eth_getBlockByHash", cur.Eth().ParentHash, false); err != nil {
			t.Fatal(err)
		}
		if !trust.Link(cur) {
			t.Fatal("link")
		}
		parent, err := evmverify.VerifyHeader(raw, cur.Eth().ParentHash)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := trust.Trusted(parent.Hash()); !ok {
			t.Fatal("parent not trusted")
		}
		ancestors[parent.Hash()] = parent
		cur = parent
	}
	headers := func(hash common.Hash, _ uint64) *evmverify.Header { return ancestors[hash] }
	ex := evmverify.NewExecutor(a.chain, rpcSource{a.c}, evmverify.ExecutorOptions{Headers: headers})
	if got := local(t, ex, "eth_call", call, h); string(got.result) != string(want.result) || len(got.result) != 68 {
		t.Fatalf("BLOCKHASH: local %s, node %s", got.result, want.result)
	}
	raw, _ := json.Marshal(call)
	if _, err := evmverify.NewExecutor(a.chain, rpcSource{a.c}, evmverify.ExecutorOptions{}).Call(context.Background(), h, raw); !errors.Is(err, verify.ErrUnverifiable) {
		t.Fatalf("BLOCKHASH without ancestors: %v", err)
	}

	ex = evmverify.NewExecutor(a.chain, rpcSource{a.c}, evmverify.ExecutorOptions{})
	calls := []map[string]any{{"to": a.reader}, {"to": a.token, "data": hexutil.Bytes(evmcontracts.BalanceOfCall(a.holder))}}
	for _, hd := range a.holders[:6] {
		calls = append(calls, map[string]any{"to": a.token, "data": hexutil.Bytes(evmcontracts.BalanceOfCall(hd))})
	}
	wants := make([]nodeAnswer, len(calls))
	for i, c := range calls {
		wants[i] = a.ask(t, "eth_call", c, h.Hash())
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(calls)*3)
	for round := range 3 {
		for i, c := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw, _ := json.Marshal(c)
				out, err := ex.Call(context.Background(), h, raw)
				if err != nil || string(out) != string(wants[i].result) {
					errs <- fmt.Sprintf("round %d call %d: %s %v", round, i, out, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestExecutorCacheBounds: past CacheSlots a block's state is dropped
// (the next call fetches again), only CacheBlocks blocks are kept, a call
// needing more than MaxAccounts accounts at once is refused, and one
// fetch at a time still answers.
func TestExecutorCacheBounds(t *testing.T) {
	a := startAnvil(t)
	old := a.head(t)
	if err := a.c.Call(nil, "evm_mine"); err != nil {
		t.Fatal(err)
	}
	now := a.head(t)
	call := map[string]any{"to": a.reader}
	fetches := func(ex *evmverify.Executor, src *countingSource, h *evmverify.Header) int64 {
		before := src.calls.Load()
		if got := local(t, ex, "eth_call", call, h); got.code != 0 {
			t.Fatalf("call failed: %+v", got)
		}
		return src.calls.Load() - before
	}
	src := &countingSource{ProofSource: rpcSource{a.c}}
	small := evmverify.NewExecutor(a.chain, src, evmverify.ExecutorOptions{CacheSlots: 2})
	fetches(small, src, now)
	if n := fetches(small, src, now); n == 0 {
		t.Fatal("a block's state over CacheSlots was kept")
	}
	src = &countingSource{ProofSource: rpcSource{a.c}}
	one := evmverify.NewExecutor(a.chain, src, evmverify.ExecutorOptions{CacheBlocks: 1})
	fetches(one, src, now)
	if n := fetches(one, src, now); n != 0 {
		t.Fatalf("%d fetches for a cached block", n)
	}
	fetches(one, src, old)
	if n := fetches(one, src, now); n == 0 {
		t.Fatal("more blocks kept than CacheBlocks")
	}
	raw, _ := json.Marshal(call)
	if _, err := evmverify.NewExecutor(a.chain, rpcSource{a.c}, evmverify.ExecutorOptions{MaxAccounts: 1}).Call(context.Background(), now, raw); !errors.Is(err, verify.ErrUnverifiable) {
		t.Fatalf("over MaxAccounts: %v", err)
	}
	serial := evmverify.NewExecutor(a.chain, rpcSource{a.c}, evmverify.ExecutorOptions{MaxFetches: 1})
	if got, want := local(t, serial, "eth_call", call, now), a.ask(t, "eth_call", call, now.Hash()); string(got.result) != string(want.result) {
		t.Fatalf("one fetch at a time: %s, node %s", got.result, want.result)
	}
}
