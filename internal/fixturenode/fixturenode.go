// Package fixturenode is a JSON-RPC node that answers from recorded real
// responses (testdata/fixtures): Solana getBlock in each encoding, and
// Starknet events, state updates, traces, a simulation, compiled code and
// a storage proof. Tests and benchmarks use it as the
// upstream of the slot-chain and rollup families until their devnets serve
// them; it is a test double and never part of `portico serve`.
package fixturenode

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// Slots served by getBlock, one per recorded block.
const (
	// SlotSolders is the 2022 block recorded in json, base64 and jsonParsed.
	SlotSolders = 147078735
	// SlotChainstorage is mainnet slot 100000000, in json and jsonParsed.
	SlotChainstorage = 100000000
	// SlotVersioned holds a v0 transaction: without
	// maxSupportedTransactionVersion it gets the real node's -32015.
	SlotVersioned = 154808473
)

// Node answers from fixtures and remembers the params it was sent.
type Node struct {
	blocks map[blockKey]jsontext.Value
	events jsontext.Value
	update jsontext.Value
	pend   jsontext.Value
	// byMethod are answers recorded for a rollup method, served whatever
	// the params: traces, a simulation, compiled code, a storage proof.
	byMethod map[string]jsontext.Value

	rpc  *jsonrpc.Server
	mu   sync.Mutex
	last map[string]string
}

type blockKey struct {
	slot     uint64
	encoding string
}

// New loads the fixtures under dir (testdata/fixtures).
func New(dir string) (*Node, error) {
	n := &Node{blocks: map[blockKey]jsontext.Value{}, byMethod: map[string]jsontext.Value{}, last: map[string]string{}}
	n.rpc = jsonrpc.NewServer(n, jsonrpc.ServerOptions{Limits: jsonrpc.Limits{MaxBatch: 1000}})
	files := []struct {
		path string
		into func(jsontext.Value)
	}{
		{"solana/solders_get_block_json_encoding.json", n.block(SlotSolders, "json")},
		{"solana/solders_get_block_base64_encoding.json", n.block(SlotSolders, "base64")},
		{"solana/solders_get_block_json_parsed_encoding.json", n.block(SlotSolders, "jsonParsed")},
		{"solana/chainstorage_client_solana_block.json", n.block(SlotChainstorage, "json")},
		{"solana/chainstorage_client_solana_block_v2.json", n.block(SlotChainstorage, "jsonParsed")},
		{"solana/chainstorage_parser_solana_block_with_versioned_tx.json", n.block(SlotVersioned, "json")},
		{"starknet/starknetgo_events_sepoliaEvents.json", func(v jsontext.Value) { n.events = v }},
		{"starknet/starknetgo_stateUpdate_sepolia3100000.json", func(v jsontext.Value) { n.update = v }},
		{"starknet/starknetgo_stateUpdate_sepoliaPreConfirmed.json", func(v jsontext.Value) { n.pend = v }},
		{"starknet/starknetgo_trace_sepoliaInvokeTrace.json", n.method("starknet_traceTransaction")},
		{"starknet/starknetgo_trace_sepoliaBlockTrace.json", n.method("starknet_traceBlockTransactions")},
		{"starknet/starknetgo_trace_sepoliaSimulateInvokeTx.json", n.method("starknet_simulateTransactions")},
		{"starknet/starknetgo_compiledCasm_sepolia.json", n.method("starknet_getCompiledCasm")},
		{"starknet/starknetgo_storageProof_sepoliaLatest.json", n.method("starknet_getStorageProof")},
	}
	for _, f := range files {
		v, err := load(filepath.Join(dir, f.path))
		if err != nil {
			return nil, err
		}
		f.into(v)
	}
	return n, nil
}

func (n *Node) block(slot uint64, enc string) func(jsontext.Value) {
	return func(v jsontext.Value) { n.blocks[blockKey{slot, enc}] = v }
}

func (n *Node) method(name string) func(jsontext.Value) {
	return func(v jsontext.Value) { n.byMethod[name] = v }
}

// Recorded returns the answer recorded for a rollup method that is served
// whatever its params (nil for the others).
func (n *Node) Recorded(method string) jsontext.Value { return n.byMethod[method] }

// load reads a fixture: a whole response (its result is taken) or a bare
// result, compacted.
func load(path string) (jsontext.Value, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var env struct {
		Result jsontext.Value `json:"result"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	v := env.Result
	if v == nil {
		v = jsontext.Value(data)
	}
	v = bytes.Clone(v)
	if err := v.Compact(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Block returns the recorded getBlock result for a slot and encoding.
func (n *Node) Block(slot uint64, encoding string) jsontext.Value {
	return n.blocks[blockKey{slot, encoding}]
}

// LastParams returns the params of the last call of method, as received.
func (n *Node) LastParams(method string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last[method]
}

// ServeHTTP answers JSON-RPC over HTTP and WebSocket through the shared
// jsonrpc.Server.
func (n *Node) ServeHTTP(w http.ResponseWriter, r *http.Request) { n.rpc.ServeHTTP(w, r) }

// Close ends the node's WebSocket connections.
func (n *Node) Close() error { return n.rpc.Close() }

// ServeRPC answers one call from the fixtures, remembering its params.
func (n *Node) ServeRPC(_ context.Context, method string, params jsontext.Value) (any, error) {
	n.mu.Lock()
	n.last[method] = string(params)
	n.mu.Unlock()
	switch method {
	case "getSlot":
		return jsontext.Value(fmt.Sprint(SlotSolders)), nil
	case "getBlock":
		return n.getBlock(params)
	case "starknet_blockNumber":
		return jsontext.Value("3100000"), nil
	case "starknet_getEvents":
		return n.events, nil
	case "starknet_traceTransaction", "starknet_traceBlockTransactions", "starknet_simulateTransactions",
		"starknet_getCompiledCasm", "starknet_getStorageProof":
		return n.byMethod[method], nil
	case "starknet_getStateUpdate":
		if bytes.Contains(params, []byte(`"pending"`)) || bytes.Contains(params, []byte(`"pre_confirmed"`)) {
			return n.pend, nil
		}
		return n.update, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
}

// getBlock serves the recorded block in the requested encoding, following
// agave's rules for the fields it can check.
func (n *Node) getBlock(params jsontext.Value) (any, error) {
	var p []jsontext.Value
	if err := json.Unmarshal(params, &p); err != nil || len(p) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: invalid length 0, expected a tuple."}
	}
	var slot uint64
	if err := json.Unmarshal(p[0], &slot); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: invalid type, expected u64."}
	}
	cfg := struct {
		Encoding   string `json:"encoding"`
		Commitment string `json:"commitment"`
		MaxVersion *int   `json:"maxSupportedTransactionVersion"`
	}{Encoding: "json"}
	if len(p) > 1 {
		if p[1].Kind() == '"' {
			_ = json.Unmarshal(p[1], &cfg.Encoding)
		} else {
			_ = json.Unmarshal(p[1], &cfg)
		}
	}
	if cfg.Commitment == "processed" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Method does not support commitment below `confirmed`"}
	}
	if slot == SlotVersioned && cfg.MaxVersion == nil {
		return nil, &jsonrpc.Error{Code: -32015, Message: `Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0`}
	}
	if v, ok := n.blocks[blockKey{slot, cfg.Encoding}]; ok {
		return v, nil
	}
	if _, ok := n.blocks[blockKey{slot, "json"}]; ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "fixture node: encoding " + cfg.Encoding + " not recorded for this slot"}
	}
	return jsontext.Value("null"), nil
}
