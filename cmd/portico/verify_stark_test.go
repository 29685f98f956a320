package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/families/starknet/starknetdevnet"
)

// starkChain is the rollup devnet after a few blocks of traffic, with a
// contract that holds storage and an account that has sent transactions.
type starkChain struct {
	url                  string
	contract, key        string // a slot the last block wrote
	account              string // a contract whose nonce the last block raised
	blockHash, blockRoot string
}

// startStarknetDevnet runs a rollup devnet that seals blocks only when
// told (SealBlock), closed with the test.
func startStarknetDevnet(t *testing.T) *starknetdevnet.Devnet {
	t.Helper()
	d, err := starknetdevnet.New(starknetdevnet.Config{BlockPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func startStarkChain(t *testing.T) *starkChain {
	t.Helper()
	d := startStarknetDevnet(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 3 {
		for range 3 {
			if err := d.GenerateTraffic(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.SealBlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := &starkChain{url: d.HTTPURL()}
	var su struct {
		BlockHash string `json:"block_hash"`
		NewRoot   string `json:"new_root"`
		Diff      struct {
			Storage []struct {
				Address string `json:"address"`
				Entries []struct {
					Key string `json:"key"`
				} `json:"storage_entries"`
			} `json:"storage_diffs"`
			Nonces []struct {
				Address string `json:"contract_address"`
			} `json:"nonces"`
		} `json:"state_diff"`
	}
	if err := json.Unmarshal(nodeRPC(t, c.url, "starknet_getStateUpdate", "latest"), &su); err != nil {
		t.Fatal(err)
	}
	if len(su.Diff.Storage) == 0 || len(su.Diff.Storage[0].Entries) == 0 || len(su.Diff.Nonces) == 0 {
		t.Fatalf("the last block wrote no storage or nonce: %+v", su)
	}
	c.contract, c.key = su.Diff.Storage[0].Address, su.Diff.Storage[0].Entries[0].Key
	c.account = su.Diff.Nonces[0].Address
	c.blockHash, c.blockRoot = su.BlockHash, su.NewRoot
	return c
}

// TestVerifiedAnswersStarknet: the rollup devnet behind three nodes, two
// direct and a liar in front, first in order. Every state read is
// answered from a storage proof checked against the new_root of a header
// whose fields were hashed to its block hash: a lie in a proof, in the
// node's own answer to the read, or in a header field (its hash kept)
// never reaches the client, and the liar is benched and counted; alone in
// strict it is refused.
func TestVerifiedAnswersStarknet(t *testing.T) {
	chain := startStarkChain(t)
	latest := "latest"
	cases := []struct {
		name   string
		lies   []string
		method string
		params []any
		fault  string
	}{
		{"nonce", []string{lieSnNonce}, "starknet_getNonce", []any{latest, chain.account}, "starknet_getStorageProof"},
		{"class hash", []string{lieSnClass}, "starknet_getClassHashAt", []any{latest, chain.contract}, "starknet_getStorageProof"},
		{"storage value", []string{lieSnValue}, "starknet_getStorageAt", []any{chain.contract, chain.key, latest}, "starknet_getStorageProof"},
		{"proof roots", []string{lieSnRoots}, "starknet_getStorageProof", []any{latest, []string{}, []string{chain.contract, chain.account},
			[]any{map[string]any{"contract_address": chain.contract, "storage_keys": []string{chain.key, "0x5eed"}}}}, "starknet_getStorageProof"},
		{"header", []string{lieSnHeader}, "starknet_getStorageAt", []any{chain.contract, chain.key, latest}, "starknet_getBlockWithTxHashes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			liarCaught(t, "starknet", chain.url, tc.method, tc.params, tc.lies, tc.fault)
		})
	}
}

// TestVerifiedMethodsStarknet: every verified rollup method through
// strict with two honest nodes equals the node's own answer, by name and
// by position, at the head by tag, number and hash; a contract that is
// not deployed gets the node's error 20, verified.
func TestVerifiedMethodsStarknet(t *testing.T) {
	chain := startStarkChain(t)
	s := start(t, verifyNetworkConfig("starknet", "net", map[string]string{"a": chain.url, "b": chain.url}, []string{"a", "b"}, "strict"))
	var head uint64
	json.Unmarshal(nodeRPC(t, chain.url, "starknet_blockNumber"), &head)
	byNumber := map[string]any{"block_number": head}
	byHash := map[string]any{"block_hash": chain.blockHash}
	cases := []struct {
		method string
		params any
	}{
		{"starknet_blockNumber", []any{}},
		{"starknet_blockHashAndNumber", []any{}},
		{"starknet_getNonce", []any{"latest", chain.account}},
		{"starknet_getNonce", map[string]any{"block_id": byNumber, "contract_address": chain.account}},
		{"starknet_getClassHashAt", []any{byHash, chain.contract}},
		{"starknet_getStorageAt", []any{chain.contract, chain.key, byNumber}},
		{"starknet_getStorageAt", map[string]any{"contract_address": chain.contract, "key": "0x5eed", "block_id": "latest"}},
		{"starknet_getStorageProof", map[string]any{"block_id": byHash, "contract_addresses": []string{chain.account, "0x5eed"},
			"contracts_storage_keys": []any{map[string]any{"contract_address": chain.account, "storage_keys": []string{"0x1"}}}}},
	}
	for _, tc := range cases {
		got, gotErr, verified := gatewayCall(t, s.url(t, "net"), tc.method, tc.params)
		want, wantErr, _ := gatewayCall(t, chain.url, tc.method, tc.params)
		if gotErr != nil || wantErr != nil {
			t.Errorf("%s %v: error %+v, node's %+v", tc.method, tc.params, gotErr, wantErr)
			continue
		}
		if !jsonEqual(got, want) {
			t.Errorf("%s %v:\n got %s\nwant %s", tc.method, tc.params, got, want)
		}
		if verified != "true" {
			t.Errorf("%s: X-Portico-Verified = %q", tc.method, verified)
		}
	}
	for _, method := range []string{"starknet_getNonce", "starknet_getClassHashAt"} {
		_, gotErr, verified := gatewayCall(t, s.url(t, "net"), method, []any{"latest", "0x5eed"})
		_, wantErr, _ := gatewayCall(t, chain.url, method, []any{"latest", "0x5eed"})
		if gotErr == nil || wantErr == nil || *gotErr != *wantErr || verified != "true" {
			t.Errorf("%s of no contract: error %+v (verified %q), node's %+v", method, gotErr, verified, wantErr)
		}
	}
	// An older block than the node keeps proofs for (error 42): strict
	// refuses it, saying why.
	_, err, _ := gatewayCall(t, s.url(t, "net"), "starknet_getNonce", []any{map[string]any{"block_number": head - 1}, chain.account})
	if err == nil || err.Code != -32058 || !strings.Contains(err.Message, "error 42") {
		t.Errorf("a block without proofs in strict: %+v, want -32058 naming error 42", err)
	}
	// Pending state has no header: strict refuses it.
	if _, err, _ := gatewayCall(t, s.url(t, "net"), "starknet_getNonce", []any{"pre_confirmed", chain.account}); err == nil || err.Code != -32058 {
		t.Errorf("pre_confirmed in strict: %+v, want -32058", err)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
