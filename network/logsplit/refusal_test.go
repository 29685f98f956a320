package logsplit

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
		want      Refusal
	}{
		{"geth rangelimit", "exceed maximum block range 5000", true, Refusal{max: 5000}},
		{"bsc", "exceed maximum block range: 50000", true, Refusal{max: 50000}},
		{"reth range", "query exceeds max block range 100000", true, Refusal{max: 100000}},
		{"reth results", "query exceeds max results 20000, retry with the range 24383075-24383096", true,
			Refusal{results: true, suggest: true, from: 24383075, to: 24383096}},
		{"erigon range", "query block range exceeds server limit, narrow your filter: 1000", true, Refusal{max: 1000}},
		{"erigon results", "query returns too many logs, narrow your filter: 20000", true, Refusal{results: true}},
		{"nethermind", "Block range 20001 exceeds the maximum of 10000 blocks per logs request. Use a narrower fromBlock/toBlock range or increase Receipt.MaxBlockDepth.", true,
			Refusal{max: 10000}},
		{"alchemy range", "You can make eth_getLogs requests with up to a 500 block range. Based on your parameters, this block range should work: [0x123c9b2, 0x123cba5]", true,
			Refusal{max: 500, suggest: true, from: 0x123c9b2, to: 0x123cba5}},
		{"alchemy results", "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters, this block range should work: [0x1, 0x2]", true,
			Refusal{results: true, suggest: true, from: 1, to: 2}},
		{"alchemy results old", "Log response size exceeded. Please reduce query block range.", true, Refusal{results: true}},
		{"infura results", "query returned more than 10000 results", true, Refusal{results: true}},
		{"infura range", "range 1000000 exceeds limit of 10000", true, Refusal{max: 10000}},
		{"quicknode", "eth_getLogs and eth_newFilter are limited to a 10,000 blocks range", true, Refusal{max: 10000}},
		{"quicknode short", "eth_getLogs is limited to a 10,000 range", true, Refusal{max: 10000}},
		{"frontier", "block range is too wide (maximum 1024)", true, Refusal{max: 1024}},
		{"cdk-erigon", "block range too large, max range: 1000", true, Refusal{max: 1000}},
		{"rate limit", "limit exceeded", false, Refusal{}},
		{"infura rate", "project ID request rate exceeded", false, Refusal{}},
		{"header", "header not found", false, Refusal{}},
		{"bad range", "invalid block range params", false, Refusal{}},
		{"future", "block range extends beyond current head block", false, Refusal{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NodeRefusal(fmt.Errorf("node: %w", &jsonrpc.Error{Code: -32602, Message: tc.msg}))
			if ok != tc.ok || got != tc.want {
				t.Errorf("NodeRefusal(%q) = %+v, %v; want %+v, %v", tc.msg, got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := NodeRefusal(fmt.Errorf("exceed maximum block range 5")); ok {
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
