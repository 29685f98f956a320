package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/config"
)

// TestStarknetDevnetThroughGateway runs `portico serve` with the embedded
// rollup devnet and pages through its events and state updates through the
// gateway, under the real and the seed's method names.
func TestStarknetDevnetThroughGateway(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Networks = []config.Network{{Name: "starknet-devnet", Family: "starknet", Devnet: config.Devnet{BlockPeriod: 150 * time.Millisecond}}}
	s := start(t, cfg)
	url := s.url(t, "starknet-devnet")

	// Wait for a few blocks with traffic.
	var head uint64
	for deadline := time.Now().Add(60 * time.Second); head < 3; {
		if time.Now().After(deadline) {
			t.Fatal("the devnet made no blocks")
		}
		rpcCall(t, url, "starknet_blockNumber", `[]`, &head)
		time.Sleep(100 * time.Millisecond)
	}

	type event struct {
		BlockHash       string   `json:"block_hash"`
		BlockNumber     uint64   `json:"block_number"`
		Data            []string `json:"data"`
		FromAddress     string   `json:"from_address"`
		Keys            []string `json:"keys"`
		TransactionHash string   `json:"transaction_hash"`
	}
	type page struct {
		Events            []event `json:"events"`
		ContinuationToken string  `json:"continuation_token"`
	}
	hexRE := regexp.MustCompile(`^0x[0-9a-f]{1,64}$`)
	all := map[string][]event{}
	for _, method := range []string{"starknet_getEvents", "rollup_getEvents"} {
		token, pages := "", 0
		for {
			filter := fmt.Sprintf(`{"from_block":{"block_number":0},"to_block":{"block_number":%d},"chunk_size":7`, head)
			if token != "" {
				filter += `,"continuation_token":"` + token + `"`
			}
			var p page
			rpcCall(t, url, method, `{"filter":`+filter+`}}`, &p)
			pages++
			if len(p.Events) > 7 {
				t.Fatalf("%s: %d events in a page of 7", method, len(p.Events))
			}
			for _, e := range p.Events {
				if !hexRE.MatchString(e.BlockHash) || !hexRE.MatchString(e.FromAddress) || !hexRE.MatchString(e.TransactionHash) || len(e.Keys) == 0 || e.BlockNumber > head {
					t.Fatalf("%s: event %+v", method, e)
				}
			}
			all[method] = append(all[method], p.Events...)
			if p.ContinuationToken == "" {
				break
			}
			token = p.ContinuationToken
		}
		if pages < 2 || len(all[method]) == 0 {
			t.Fatalf("%s: %d events in %d pages", method, len(all[method]), pages)
		}
	}
	a, _ := json.Marshal(all["starknet_getEvents"])
	b, _ := json.Marshal(all["rollup_getEvents"])
	if string(a) != string(b) {
		t.Fatal("the two names paged different events")
	}

	// Filter by the first event's contract and selector: every event
	// matches, and positional params are accepted too.
	first := all["rollup_getEvents"][0]
	var filtered page
	rpcCall(t, url, "rollup_getEvents", fmt.Sprintf(`[{"from_block":{"block_number":0},"to_block":"latest","address":%q,"keys":[[%q]],"chunk_size":100}]`, first.FromAddress, first.Keys[0]), &filtered)
	if len(filtered.Events) == 0 {
		t.Fatal("filter matched nothing")
	}
	for _, e := range filtered.Events {
		if e.FromAddress != first.FromAddress || e.Keys[0] != first.Keys[0] {
			t.Fatalf("filter let through %+v", e)
		}
	}

	// State updates chain their roots from block to block.
	type stateUpdate struct {
		BlockHash string `json:"block_hash"`
		OldRoot   string `json:"old_root"`
		NewRoot   string `json:"new_root"`
		StateDiff struct {
			StorageDiffs []struct {
				Address        string `json:"address"`
				StorageEntries []struct {
					Key   string `json:"key"`
					Value string `json:"value"`
				} `json:"storage_entries"`
			} `json:"storage_diffs"`
		} `json:"state_diff"`
	}
	var prev stateUpdate
	for n := uint64(0); n <= head; n++ {
		var su stateUpdate
		method := []string{"starknet_getStateUpdate", "rollup_getStateUpdate"}[n%2]
		rpcCall(t, url, method, fmt.Sprintf(`{"block_id":{"block_number":%d}}`, n), &su)
		if !hexRE.MatchString(su.BlockHash) || !hexRE.MatchString(su.NewRoot) || (n > 0 && su.OldRoot != prev.NewRoot) {
			t.Fatalf("block %d: %+v after %+v", n, su, prev)
		}
		if n > 0 && len(su.StateDiff.StorageDiffs) == 0 {
			t.Fatalf("block %d: no storage diffs", n)
		}
		prev = su
	}
	var pending map[string]json.RawMessage
	rpcCall(t, url, "rollup_getStateUpdate", `{"block_id":"pending"}`, &pending)
	if _, ok := pending["block_hash"]; ok || pending["old_root"] == nil {
		t.Fatalf("pending state update: %v", pending)
	}

	// Errors: the node's for a missing block, the gateway's for bad params.
	for _, c := range []struct{ method, params, want string }{
		{"rollup_getStateUpdate", `{"block_id":{"block_number":999999999}}`, `{"code":24,"message":"Block not found"}`},
		{"rollup_getStateUpdate", `{"block_id":{"block_number":1,"block_hash":"0x1"}}`, `"code":-32602`},
		{"rollup_getEvents", `{"filter":{"from_block":"latest","to_block":"latest"}}`, `"code":-32602`},
	} {
		_, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+c.method+`","params":`+c.params+`}`)
		if !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %s, want %s", c.method, c.params, body, c.want)
		}
	}
}

// rpcCall posts one JSON-RPC call and decodes its result into out.
func rpcCall(t *testing.T, url, method, params string, out any) {
	t.Helper()
	status, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || status != 200 || resp.Error != nil {
		t.Fatalf("%s %s: %d %s", method, params, status, body)
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		t.Fatalf("%s: result %s: %v", method, resp.Result, err)
	}
}

// TestDevnetCommand runs `portico devnet solana|starknet|evm` as nodes and
// a second gateway that uses them as upstreams.
func TestDevnetCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	solanaURL := runReady(ctx, t, []string{"devnet", "solana", "--block-period", "50ms"}, `serving JSON-RPC on (http://\S+)`)
	starknetURL := runReady(ctx, t, []string{"devnet", "starknet", "--block-period", "200ms", "--data-dir", t.TempDir()}, `serving JSON-RPC on (http://\S+)`)
	evmWS := runReady(ctx, t, []string{"devnet", "evm", "--listen", "127.0.0.1:0"}, `serving JSON-RPC on http://\S+ and (ws://\S+)`)

	cfg := config.DefaultConfig()
	cfg.Networks = []config.Network{
		{Name: "sol", Family: "solana", Upstreams: []config.Upstream{{URL: solanaURL}}},
		{Name: "stark", Family: "starknet", Upstreams: []config.Upstream{{URL: starknetURL}}},
		{Name: "eth", Family: "evm", Upstreams: []config.Upstream{{URL: evmWS}}},
	}
	s := start(t, cfg)
	var slot uint64
	rpcCall(t, s.url(t, "sol"), "getSlot", `[{"commitment":"processed"}]`, &slot)
	// The gateway does not know this upstream serves processed blocks, so
	// it asks for confirmed ones, which any node serves.
	var block map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; {
		rpcCall(t, s.url(t, "sol"), "getSlot", `[{"commitment":"finalized"}]`, &slot)
		if slot > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var blocks []uint64
	rpcCall(t, s.url(t, "sol"), "getBlocks", fmt.Sprintf(`[0,%d]`, slot), &blocks)
	rpcCall(t, s.url(t, "sol"), "getBlock", fmt.Sprintf(`[%d,{"commitment":"processed","transactionDetails":"none"}]`, blocks[len(blocks)-1]), &block)
	if block["blockhash"] == nil || block["rewards"] != nil {
		t.Fatalf("getBlock through a gateway in front of portico devnet: %v", block)
	}
	var chainID string
	rpcCall(t, s.url(t, "stark"), "starknet_chainId", `[]`, &chainID)
	if chainID != "0x534e5f504f525449434f" { // "SN_PORTICO"
		t.Fatalf("chain id %s", chainID)
	}
	rpcCall(t, s.url(t, "eth"), "eth_chainId", `[]`, &chainID)
	if chainID != "0x539" { // 1337, over the devnet's WebSocket
		t.Fatalf("evm chain id %s", chainID)
	}
}

// runReady runs a portico command in-process until ctx ends and returns the
// first submatch of ready once the command prints it.
func runReady(ctx context.Context, t *testing.T, args []string, ready string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, stdout, stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: %v\n%s", args, err, stderr)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%v did not stop", args)
		}
	})
	re := regexp.MustCompile(ready)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("%v exited: %v\n%s", args, err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v printed no ready line\n%s\n%s", args, stdout, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
