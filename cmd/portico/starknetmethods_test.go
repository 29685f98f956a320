package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
)

// newRollupMethods are the methods of spec 0.8 that Portico's default list
// lacked before: the storage proof, L1 message statuses, compiled code and
// the trace API.
var newRollupMethods = []string{"starknet_getStorageProof", "starknet_getMessagesStatus", "starknet_getCompiledCasm",
	"starknet_traceTransaction", "starknet_traceBlockTransactions", "starknet_simulateTransactions"}

// TestStarknetRecordedMethods sends the new rollup methods through Portico's
// default configuration to a node answering with a real node's recorded
// answers: each answer is the recording, byte for byte, and the node got
// the params as the client sent them (named or positional, spaces and all).
func TestStarknetRecordedMethods(t *testing.T) {
	s, fx := startWithFixtures(t)
	url := s.url(t, "starknet")
	raw, err := os.ReadFile(filepath.Join(fixtures, "starknet", "starknetgo_trace_sepoliaSimulateInvokeTx_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var simulate struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &simulate); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ method, params string }{
		{"starknet_traceTransaction", `{"transaction_hash": "0x6a4a9c4f1a530f7d6dd7bba9b71f090a70d1e3bbde80998fde11a08aab8b282"}`},
		{"rollup_traceTransaction", `["0x6a4a9c4f1a530f7d6dd7bba9b71f090a70d1e3bbde80998fde11a08aab8b282"]`},
		{"starknet_traceBlockTransactions", `{"block_id":{"block_hash":"0x42a4c6a4c3dffee2cce78f04259b499437049b0084c3296da9fbbec7eda79b2"}}`},
		{"starknet_simulateTransactions", string(simulate.Params)},
		{"starknet_getCompiledCasm", `{"class_hash":"0x00816dd0297efc55dc1e7559020a3a825e81ef734b558f03c83325d4da7e6253"}`},
		{"starknet_getStorageProof", `{"block_id":"latest","contract_addresses":["0x4718f5a0fc34cc1af16a1cdee98ffb20c31f5cd61d6ab07201858f4287c938d"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			real := strings.Replace(tc.method, "rollup_", "starknet_", 1)
			status, got := post(t, url, `{"jsonrpc":"2.0","id":7,"method":"`+tc.method+`","params":`+tc.params+`}`)
			want := `{"jsonrpc":"2.0","id":7,"result":` + string(fx.Recorded(real)) + `}`
			if status != 200 || got != want {
				t.Fatalf("got %d %.300s", status, got)
			}
			// A tag is pinned to a number; everything else reaches the node
			// as it came.
			if p := fx.LastParams(real); p != tc.params && !strings.Contains(tc.params, `"latest"`) {
				t.Fatalf("node got params %s, want %s", p, tc.params)
			}
		})
	}
}

// TestStarknetDevnetNewMethods sends the new rollup methods through Portico
// to the embedded rollup devnet and to the devnet directly: Portico no
// longer refuses them, and whatever the devnet answers (it serves only
// some methods of the spec) reaches the client byte for byte.
func TestStarknetDevnetNewMethods(t *testing.T) {
	d := startStarknetDevnet(t)
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: "test0123456789abcdef0123456789ab"}}
	cfg.Networks = []config.Network{{Name: "starknet", Family: "starknet", Upstreams: []config.Upstream{{URL: d.HTTPURL()}}}}
	s := start(t, cfg)
	params := map[string]string{
		"starknet_getStorageProof":        `{"block_id":{"block_number":0}}`,
		"starknet_getMessagesStatus":      `{"transaction_hash":"0x2b8cd5a5a4c6a1ff2a0fa4fc1e8a2d4ab6c2b7b1d7c3a7fdb3ad2a3e0bd4e0d1"}`,
		"starknet_getCompiledCasm":        `{"class_hash":"0x1"}`,
		"starknet_traceTransaction":       `{"transaction_hash":"0x1"}`,
		"starknet_traceBlockTransactions": `{"block_id":{"block_number":0}}`,
		"starknet_simulateTransactions":   `{"block_id":{"block_number":0},"transactions":[],"simulation_flags":[]}`,
	}
	for _, method := range newRollupMethods {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params[method] + `}`)
		_, direct := postBytes(t, d.HTTPURL(), body)
		_, via := postBytes(t, s.url(t, "starknet"), body)
		if string(via) != string(direct) {
			t.Errorf("%s: Portico's answer is not the devnet's\nportico %.300s\n devnet %.300s", method, via, direct)
		}
		if strings.Contains(string(via), `"source":"portico"`) {
			t.Errorf("%s: answered by Portico: %s", method, via)
		}
	}
}
