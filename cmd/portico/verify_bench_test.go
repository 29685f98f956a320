package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/porticohq/portico/internal/evmcontracts"
)

// BenchmarkVerify: one honest node (anvil), portico in front with
// verify off and on, the answer cache off in both so that every call
// reaches the node (or, for a verified call or state read, the block's
// proven state): calls one at a time, with calls per second and the p50
// and p99 latency of each call. The rows named "...12blocks" read the
// same account or slot at each of the last 12 blocks in turn, by number:
// more blocks than the verifier keeps proven state for (8), so every
// verified read asks the node for a proof and checks it, the cost of a
// read not made at that block before. docs/benchmarks.md, issue 27.
func BenchmarkVerify(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	chain := startVerifyChainB(b, ctx)
	type benchCall struct {
		name   string
		method string
		params []any
		// blocks, when set, are put in turn as the last param, call by
		// call.
		blocks []any
	}
	last12 := make([]any, 12)
	for i := range last12 {
		last12[i] = hexutil.Uint64(chain.logsFrom + 9 - uint64(i))
	}
	calls := []benchCall{
		{"getBalance", "eth_getBalance", []any{chain.dev, "latest"}, nil},
		{"getStorageAt", "eth_getStorageAt", []any{chain.token, evmcontracts.BalanceSlot(chain.dev), "latest"}, nil},
		{"getBalance12blocks", "eth_getBalance", []any{chain.dev, nil}, last12},
		{"getStorageAt12blocks", "eth_getStorageAt", []any{chain.token, evmcontracts.BalanceSlot(chain.dev), nil}, last12},
		{"getLogs10", "eth_getLogs", []any{map[string]any{"fromBlock": hexutil.Uint64(chain.logsFrom), "toBlock": hexutil.Uint64(chain.logsFrom + 9), "address": chain.emt}}, nil},
		{"call_balanceOf", "eth_call", []any{map[string]any{"to": chain.token, "data": hexutil.Bytes(evmcontracts.BalanceOfCall(chain.dev))}, "latest"}, nil},
		// The node alone, for what the verified path asks it instead.
		{"getProof", "eth_getProof", []any{chain.dev, []any{}, "latest"}, nil},
		{"getProof12blocks", "eth_getProof", []any{chain.dev, []any{}, nil}, last12},
	}
	for _, mode := range []string{"node", "off", "on"} {
		url := chain.url
		if mode != "node" {
			cfg := verifyConfigFor(map[string]string{"anvil": chain.url}, []string{"anvil"}, mode)
			cfg.Cache.MaxBytes = 0
			url = start(b, cfg).url(b, "anvil")
		}
		client := &http.Client{}
		for _, c := range calls {
			blocks := c.blocks
			if blocks == nil {
				blocks = []any{nil} // the params as they are
			}
			var bodies [][]byte
			for _, blk := range blocks {
				params := slices.Clone(c.params)
				if blk != nil {
					params[len(params)-1] = blk
				}
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": c.method, "params": params})
				bodies = append(bodies, body)
			}
			n := 0
			call := func() time.Duration {
				body := bodies[n%len(bodies)]
				n++
				start := time.Now()
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.Contains(out, []byte(`"result"`)) {
					b.Fatalf("%s: %s", c.method, out)
				}
				if mode == "on" && resp.Header.Get("X-Portico-Verified") != "true" {
					b.Fatalf("%s: not verified: %s", c.method, out)
				}
				return time.Since(start)
			}
			name := c.name + "/verify=" + mode
			if mode == "node" {
				name = c.name + "/anvil-direct"
			}
			b.Run(name, func(b *testing.B) {
				for range bodies {
					call() // warm: connections, trusted headers, the block's state
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				began := time.Now()
				for range b.N {
					lat = append(lat, call())
				}
				took := time.Since(began)
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(b.N)/took.Seconds(), "calls/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}

// benchChain is verifyChain with ten blocks of logs from logsFrom on.
type benchChain struct {
	verifyChain
	logsFrom uint64
}

func startVerifyChainB(b *testing.B, ctx context.Context) *benchChain {
	vc := startVerifyChain(b, ctx)
	c := &benchChain{verifyChain: *vc}
	var n hexutil.Uint64
	json.Unmarshal(nodeRPC(b, vc.url, "eth_blockNumber"), &n)
	c.logsFrom = uint64(n) + 1
	for i := range 10 {
		var hash common.Hash
		tx := map[string]any{"from": vc.dev, "to": vc.emt, "data": hexutil.Bytes(common.LeftPadBytes([]byte{byte(i)}, 32))}
		json.Unmarshal(nodeRPC(b, vc.url, "eth_sendTransaction", tx), &hash)
		for string(nodeRPC(b, vc.url, "eth_getTransactionReceipt", hash)) == "null" {
			time.Sleep(5 * time.Millisecond) // anvil mines on its own time
		}
	}
	return c
}
