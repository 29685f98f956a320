package network

import (
	"fmt"
	"testing"

	"github.com/porticohq/portico/jsonrpc"
)

// TestParseRefusal reads the real messages of each node and hosted
// provider (as they answered, collected in docs/logs.md).
func TestParseRefusal(t *testing.T) {
	tests := []struct {
		name, msg string
		ok        bool
		want      refusal
	}{
		{"geth rangelimit", "exceed maximum block range 5000", true, refusal{max: 5000}},
		{"bsc", "exceed maximum block range: 50000", true, refusal{max: 50000}},
		{"reth range", "query exceeds max block range 100000", true, refusal{max: 100000}},
		{"reth results", "query exceeds max results 20000, retry with the range 24383075-24383096", true,
			refusal{results: true, suggest: true, from: 24383075, to: 24383096}},
		{"erigon range", "query block range exceeds server limit, narrow your filter: 1000", true, refusal{max: 1000}},
		{"erigon results", "query returns too many logs, narrow your filter: 20000", true, refusal{results: true}},
		{"nethermind", "Block range 20001 exceeds the maximum of 10000 blocks per logs request. Use a narrower fromBlock/toBlock range or increase Receipt.MaxBlockDepth.", true,
			refusal{max: 10000}},
		{"alchemy range", "You can make eth_getLogs requests with up to a 500 block range. Based on your parameters, this block range should work: [0x123c9b2, 0x123cba5]", true,
			refusal{max: 500, suggest: true, from: 0x123c9b2, to: 0x123cba5}},
		{"alchemy results", "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters, this block range should work: [0x1, 0x2]", true,
			refusal{results: true, suggest: true, from: 1, to: 2}},
		{"alchemy results old", "Log response size exceeded. Please reduce query block range.", true, refusal{results: true}},
		{"infura results", "query returned more than 10000 results", true, refusal{results: true}},
		{"infura range", "range 1000000 exceeds limit of 10000", true, refusal{max: 10000}},
		{"quicknode", "eth_getLogs and eth_newFilter are limited to a 10,000 blocks range", true, refusal{max: 10000}},
		{"quicknode short", "eth_getLogs is limited to a 10,000 range", true, refusal{max: 10000}},
		{"frontier", "block range is too wide (maximum 1024)", true, refusal{max: 1024}},
		{"cdk-erigon", "block range too large, max range: 1000", true, refusal{max: 1000}},
		{"rate limit", "limit exceeded", false, refusal{}},
		{"infura rate", "project ID request rate exceeded", false, refusal{}},
		{"header", "header not found", false, refusal{}},
		{"bad range", "invalid block range params", false, refusal{}},
		{"future", "block range extends beyond current head block", false, refusal{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := nodeRefusal(fmt.Errorf("node: %w", &jsonrpc.Error{Code: -32602, Message: tc.msg}))
			if ok != tc.ok || got != tc.want {
				t.Errorf("nodeRefusal(%q) = %+v, %v; want %+v, %v", tc.msg, got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := nodeRefusal(fmt.Errorf("exceed maximum block range 5")); ok {
		t.Error("a transport error read as a node's refusal")
	}
}

// FuzzParseRefusal: any message is read without a panic, and a range a
// node suggests is never backwards.
func FuzzParseRefusal(f *testing.F) {
	f.Add("query exceeds max results 20000, retry with the range 24383075-24383096")
	f.Add("this block range should work: [0x123c9b2, 0x123cba5]")
	f.Add("exceed maximum block range: 99999999999999999999999")
	f.Add("range 1 exceeds limit of ,,,")
	f.Fuzz(func(t *testing.T, msg string) {
		r, ok := parseRefusal(msg)
		if ok && r.suggest && r.from > r.to {
			t.Errorf("%q: suggested range [%d, %d] is backwards", msg, r.from, r.to)
		}
	})
}
