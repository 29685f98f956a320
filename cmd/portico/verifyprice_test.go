package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/core/vm/program"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
)

// nodeCallCredits is what each node call of a verification costs on an
// EVM network that leaves default_cost as the table has it
// (docs/metering.md): the bound of node calls per credit.
const nodeCallCredits = 80

// quietPoll is the poll interval of the networks these tests count node
// calls on: no new block comes while they run, and the pool's polls are
// not the calls' work.
const quietPoll = time.Hour

// total is how many calls the proxy passed on, of every method.
func (l *liar) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		n += c
	}
	return n
}

// pricedCall posts one call and returns its result or error, the credits
// it cost and whether it was verified.
func pricedCall(t testing.TB, url, method string, params any) (json.RawMessage, *logsError, int64, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *logsError      `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	credits, _ := strconv.ParseInt(resp.Header.Get("X-Credits-Used"), 10, 64)
	return env.Result, env.Error, credits, resp.Header.Get("X-Portico-Verified")
}

// logsError is a JSON-RPC error as these tests read it.
type logsError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// readAccounts is init code that reads the balance of n accounts no one
// has asked about (from seed on) and stops: a call (eth_call without to)
// that a verifier must prove n accounts for.
func readAccounts(seed uint64, n int) []byte {
	p := program.New()
	for i := range n {
		var a common.Address
		a[0] = 0xaa
		binary.BigEndian.PutUint64(a[12:], seed+uint64(i))
		p.Push(a).Op(vm.BALANCE, vm.POP)
	}
	return p.Op(vm.STOP).Bytes()
}

// verifiedWork is what one verified call made the nodes do and cost.
type verifiedWork struct {
	calls    int
	credits  int64
	verified string
}

// measure makes one call through the gateway at url, whose only node is
// proxy, and counts the node calls it made.
func measure(t testing.TB, proxy *liar, url, method string, params any) verifiedWork {
	t.Helper()
	before := proxy.quiet()
	_, rpcErr, credits, verified := pricedCall(t, url, method, params)
	if rpcErr != nil {
		t.Fatalf("%s: %d %s", method, rpcErr.Code, rpcErr.Message)
	}
	return verifiedWork{calls: proxy.quiet() - before, credits: credits, verified: verified}
}

// quiet waits until the proxy has passed on no call for 300ms and returns
// its total: a verification's node calls in flight when the call's answer
// was sent (asked in parallel, the answer already known) reach the node a
// moment later, and count for the call that made them, not the next.
func (l *liar) quiet() int {
	n := l.total()
	for {
		time.Sleep(300 * time.Millisecond)
		m := l.total()
		if m == n {
			return n
		}
		n = m
	}
}

// accountsCase is a verifying network on a fresh anvil (through a proxy
// that counts node calls) and the call that reads n fresh accounts there.
func accountsCase(t testing.TB, ctx context.Context, n int) (proxy *liar, url string, call func(seed uint64) []any) {
	node := startAnvil(t, ctx)
	// anvil's genesis header carries the empty trie's root whatever its
	// accounts hold: start one block on.
	nodeRPC(t, node.URL(), "evm_mine")
	proxy = startLiar(t, node.URL())
	cfg := verifyConfigFor(map[string]string{"a": proxy.url()}, []string{"a"}, "on")
	cfg.Networks[0].PollInterval = quietPoll
	s := start(t, cfg)
	url = s.url(t, "anvil")
	// The head's header is trusted before anything is counted.
	if _, rpcErr, _, _ := pricedCall(t, url, "eth_getBalance", []any{common.Address{1}, "latest"}); rpcErr != nil {
		t.Fatal(rpcErr.Message)
	}
	return proxy, url, func(seed uint64) []any {
		return []any{map[string]any{"data": hexutil.Bytes(readAccounts(seed, n))}, "latest"}
	}
}

// logsCase is a verifying network on the logs chain (through a proxy that
// counts node calls), its head and the chain's node.
func logsCase(t testing.TB, edit func(*config.Config)) (proxy *liar, url string, head uint64, node string) {
	n, head := logsChain(t)
	proxy = startLiar(t, n.URL())
	cfg := verifyConfigFor(map[string]string{"a": proxy.url()}, []string{"a"}, "on")
	cfg.Networks[0].PollInterval = quietPoll
	if edit != nil {
		edit(&cfg)
	}
	s := start(t, cfg)
	url = s.url(t, "anvil")
	if _, rpcErr, _, _ := pricedCall(t, url, "eth_blockNumber", nil); rpcErr != nil {
		t.Fatal(rpcErr.Message)
	}
	return proxy, url, head, n.URL()
}

// TestVerifiedWorkPriced: a verified call never has the nodes answer
// more than one call per 80 credits it is charged (docs/metering.md), on
// anvil: an eth_call that reads 1,000 accounts nobody asked about (about
// 2,000 node calls: an access list, then a proof and a code read per
// account), on every call; an eth_getLogs over 3,000 blocks below the
// served chain's head (a header each, and a block and its receipts per
// block with logs). And what a verification holds counts against the
// memory budget: with a key budget of 256 KiB the same eth_getLogs is
// refused with -32057.
func TestVerifiedWorkPriced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Run("eth_call reading fresh accounts", func(t *testing.T) {
		proxy, url, call := accountsCase(t, ctx, 1000)
		for i := range 2 {
			w := measure(t, proxy, url, "eth_call", call(uint64(i+1)<<32))
			t.Logf("call %d: %d node calls, %d credits", i+1, w.calls, w.credits)
			if w.verified != "true" {
				t.Errorf("X-Portico-Verified %q", w.verified)
			}
			if w.calls < 1000 {
				t.Fatalf("%d node calls: the call did not read 1,000 fresh accounts", w.calls)
			}
			if int64(w.calls)*nodeCallCredits > w.credits {
				t.Errorf("%d node calls for %d credits: more than one per %d credits", w.calls, w.credits, nodeCallCredits)
			}
		}
	})
	t.Run("eth_getLogs over 3,000 blocks", func(t *testing.T) {
		proxy, url, head, node := logsCase(t, nil)
		from := head - 2999
		params := []any{map[string]any{"fromBlock": hexutil.Uint64(from), "toBlock": hexutil.Uint64(head)}}
		before := proxy.quiet()
		got, rpcErr, credits, verified := pricedCall(t, url, "eth_getLogs", params)
		if rpcErr != nil {
			t.Fatalf("%d %s", rpcErr.Code, rpcErr.Message)
		}
		calls := proxy.quiet() - before
		t.Logf("%d node calls, %d credits", calls, credits)
		sameLogs(t, "verified", got, nodeRPC(t, node, "eth_getLogs", params...))
		if verified != "true" {
			t.Errorf("X-Portico-Verified %q", verified)
		}
		if calls < 3000 {
			t.Fatalf("%d node calls: the headers were not read", calls)
		}
		if int64(calls)*nodeCallCredits > credits {
			t.Errorf("%d node calls for %d credits: more than one per %d credits", calls, credits, nodeCallCredits)
		}
	})
	t.Run("held against the memory budget", func(t *testing.T) {
		_, url, head, _ := logsCase(t, func(c *config.Config) { c.Limits.KeyMemoryBytes = 256 << 10 })
		params := []any{map[string]any{"fromBlock": hexutil.Uint64(head - 2999), "toBlock": hexutil.Uint64(head)}}
		_, rpcErr, _, _ := pricedCall(t, url, "eth_getLogs", params)
		if rpcErr == nil || rpcErr.Code != portico.CodeMemoryBusy {
			t.Fatalf("error %+v, want -32057: a window's headers (about 1.3 MB) do not fit a key budget of 256 KiB", rpcErr)
		}
	})
}

// BenchmarkVerifyNodeCallsPerCredit measures the two cases on
// anvil, each made once per iteration: a verified eth_getLogs over 10,000
// blocks of the logs chain, and a verified eth_call that reads 1,000
// fresh accounts. It reports node calls per credit (docs/benchmarks.md).
func BenchmarkVerifyNodeCallsPerCredit(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	b.Run("getLogs-10000-blocks", func(b *testing.B) {
		proxy, url, head, _ := logsCase(b, nil)
		params := []any{map[string]any{"fromBlock": hexutil.Uint64(head - 9999), "toBlock": hexutil.Uint64(head)}}
		var calls int
		var credits int64
		for b.Loop() {
			w := measure(b, proxy, url, "eth_getLogs", params)
			calls, credits = calls+w.calls, credits+w.credits
		}
		report(b, calls, credits)
	})
	b.Run("call-1000-accounts", func(b *testing.B) {
		proxy, url, call := accountsCase(b, ctx, 1000)
		var calls int
		var credits int64
		seed := uint64(1)
		for b.Loop() {
			w := measure(b, proxy, url, "eth_call", call(seed<<32))
			seed++
			calls, credits = calls+w.calls, credits+w.credits
		}
		report(b, calls, credits)
	})
}

// report puts node calls and credits per call, and their ratio, in the
// benchmark's line.
func report(b *testing.B, calls int, credits int64) {
	b.ReportMetric(float64(calls)/float64(b.N), "nodecalls/op")
	b.ReportMetric(float64(credits)/float64(b.N), "credits/op")
	b.ReportMetric(float64(calls)/float64(max(credits, 1)), "nodecalls/credit")
	b.Logf("%d node calls, %d credits a call", calls/b.N, credits/int64(b.N))
}
