package starkproof_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"testing"

	"github.com/porticohq/portico/families/starknet/starkblock"
	"github.com/porticohq/portico/families/starknet/starknetdevnet"
	"github.com/porticohq/portico/families/starknet/starkproof"
)

// The proofs these tests verify are the rollup devnet's answers to
// starknet_getStorageProof, over RPC: the devnet's tries are one
// implementation, the verifier's walk another, and the state they are
// checked against is rebuilt here from the devnet's state updates.

type felt = starkproof.Felt

func hexOf(f felt) string {
	var n big.Int
	f.BigInt(&n)
	return "0x" + n.Text(16)
}

func mustFelt(t testing.TB, s string) felt {
	t.Helper()
	f, err := starkproof.ParseFelt(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func feltU(n uint64) felt {
	var f felt
	f.SetUint64(n)
	return f
}

// world is a rollup state: contracts with nonce, class and storage, and
// declared classes with their compiled class hash.
type world struct {
	contracts map[felt]*contractState
	classes   map[felt]felt
}

type contractState struct {
	nonce, class felt
	storage      map[felt]felt
}

// chain is a devnet with a few blocks of traffic, its head's hash and
// state root (from the head's header, whose hash starkblock checks), and
// its state rebuilt from its state updates.
type chain struct {
	rpc             func(method string, params any) (json.RawMessage, error)
	close           func() // stops the devnet before the test ends
	world           *world
	blockHash, root felt
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// devnetChain starts the devnet on loopback, runs blocks of traffic and
// rebuilds the head's state.
func devnetChain(t testing.TB, blocks int) *chain {
	t.Helper()
	d, err := starknetdevnet.New(starknetdevnet.Config{BlockPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	stop := func() {
		tr.CloseIdleConnections()
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	hc := &http.Client{Transport: tr}
	c := &chain{close: stop, rpc: func(method string, params any) (json.RawMessage, error) {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		if err != nil {
			return nil, err
		}
		resp, err := hc.Post(d.HTTPURL(), "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var env struct {
			Result json.RawMessage
			Error  *rpcError
		}
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
			return nil, err
		}
		if env.Error != nil {
			return nil, env.Error
		}
		return env.Result, nil
	}}
	must := func(method string, params any, out any) {
		t.Helper()
		raw, err := c.rpc(method, params)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
	for range blocks {
		for range 3 {
			if err := d.GenerateTraffic(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.SealBlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// A pending block that changes the state: proofs are of the sealed head.
	if err := d.GenerateTraffic(); err != nil {
		t.Fatal(err)
	}
	var head uint64
	must("starknet_blockNumber", []any{}, &head)
	w := &world{contracts: map[felt]*contractState{}, classes: map[felt]felt{}}
	contract := func(a felt) *contractState {
		cs := w.contracts[a]
		if cs == nil {
			cs = &contractState{storage: map[felt]felt{}}
			w.contracts[a] = cs
		}
		return cs
	}
	for n := uint64(0); n <= head; n++ {
		var su struct {
			Diff struct {
				Storage []struct {
					Address string
					Entries []struct{ Key, Value string } `json:"storage_entries"`
				} `json:"storage_diffs"`
				Declared []struct {
					ClassHash string `json:"class_hash"`
					Compiled  string `json:"compiled_class_hash"`
				} `json:"declared_classes"`
				Deployed []struct {
					Address   string
					ClassHash string `json:"class_hash"`
				} `json:"deployed_contracts"`
				Replaced []struct {
					Address   string `json:"contract_address"`
					ClassHash string `json:"class_hash"`
				} `json:"replaced_classes"`
				Nonces []struct {
					Address string `json:"contract_address"`
					Nonce   string
				}
			} `json:"state_diff"`
		}
		must("starknet_getStateUpdate", map[string]any{"block_id": map[string]any{"block_number": n}}, &su)
		for _, dc := range su.Diff.Deployed {
			contract(mustFelt(t, dc.Address)).class = mustFelt(t, dc.ClassHash)
		}
		for _, r := range su.Diff.Replaced {
			contract(mustFelt(t, r.Address)).class = mustFelt(t, r.ClassHash)
		}
		for _, s := range su.Diff.Storage {
			cs := contract(mustFelt(t, s.Address))
			for _, e := range s.Entries {
				cs.storage[mustFelt(t, e.Key)] = mustFelt(t, e.Value)
			}
		}
		for _, nn := range su.Diff.Nonces {
			contract(mustFelt(t, nn.Address)).nonce = mustFelt(t, nn.Nonce)
		}
		for _, dc := range su.Diff.Declared {
			w.classes[mustFelt(t, dc.ClassHash)] = mustFelt(t, dc.Compiled)
		}
	}
	if len(w.contracts) < 3 || len(w.classes) == 0 {
		t.Fatalf("%d contracts, %d classes", len(w.contracts), len(w.classes))
	}
	c.world = w
	raw, err := c.rpc("starknet_getBlockWithTxHashes", []any{"latest"})
	if err != nil {
		t.Fatal(err)
	}
	h, hash, err := starkblock.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.Hash(); err != nil || got != hash {
		t.Fatalf("head header hashes to %s (%v), block_hash %s", hexOf(got), err, hexOf(hash))
	}
	c.blockHash, c.root = hash, h.StateRoot
	return c
}

// proof asks the devnet for a storage proof of the request at its head.
func (c *chain) proof(t testing.TB, blockID any, req starkproof.Request) []byte {
	t.Helper()
	hexes := func(fs []felt) []string {
		out := []string{}
		for _, f := range fs {
			out = append(out, hexOf(f))
		}
		return out
	}
	storage := []any{}
	for _, ck := range req.Storage {
		storage = append(storage, map[string]any{"contract_address": hexOf(ck.Contract), "storage_keys": hexes(ck.Keys)})
	}
	raw, err := c.rpc("starknet_getStorageProof", map[string]any{
		"block_id": blockID, "class_hashes": hexes(req.Classes), "contract_addresses": hexes(req.Contracts), "contracts_storage_keys": storage,
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// everything asks for every contract, slot and class of the world, and an
// absent contract, slot (of every contract, and of the absent contract)
// and class.
func (w *world) everything() starkproof.Request {
	var req starkproof.Request
	for a, cs := range w.contracts {
		req.Contracts = append(req.Contracts, a)
		ck := starkproof.ContractKeys{Contract: a, Keys: []felt{feltU(0xdead)}}
		for k := range cs.storage {
			ck.Keys = append(ck.Keys, k)
		}
		req.Storage = append(req.Storage, ck)
	}
	nobody := feltU(0x5eed)
	req.Contracts = append(req.Contracts, nobody)
	req.Storage = append(req.Storage, starkproof.ContractKeys{Contract: nobody, Keys: []felt{feltU(1)}})
	for h := range w.classes {
		req.Classes = append(req.Classes, h)
	}
	req.Classes = append(req.Classes, feltU(0xc1a55))
	return req
}

// sample asks for n contracts with storage (in address order) with up to
// slots of their slots each, n classes, and an absent contract, slot and
// class.
func (w *world) sample(n, slots int) starkproof.Request {
	var req starkproof.Request
	addrs := slices.SortedFunc(maps.Keys(w.contracts), func(a, b felt) int { return a.Cmp(&b) })
	for _, a := range addrs {
		cs := w.contracts[a]
		if len(req.Contracts) == n || len(cs.storage) == 0 {
			continue
		}
		keys := slices.SortedFunc(maps.Keys(cs.storage), func(a, b felt) int { return a.Cmp(&b) })
		req.Contracts = append(req.Contracts, a)
		req.Storage = append(req.Storage, starkproof.ContractKeys{Contract: a, Keys: append(keys[:min(slots, len(keys))], feltU(0xdead))})
	}
	req.Contracts = append(req.Contracts, feltU(0x5eed))
	classes := slices.SortedFunc(maps.Keys(w.classes), func(a, b felt) int { return a.Cmp(&b) })
	req.Classes = append(classes[:min(n, len(classes))], feltU(0xc1a55))
	return req
}
