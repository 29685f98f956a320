package starkproof_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/porticohq/portico/devnet/starknetdevnet"
	"github.com/porticohq/portico/verify"
	"github.com/porticohq/portico/verify/starkproof"
)

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

// TestBuilderPapyrusRoots checks the test's trie builder against
// papyrus's recorded roots of height-64 Pedersen tries keyed by index
// (values 1..n).
func TestBuilderPapyrusRoots(t *testing.T) {
	for n, want := range []string{"0x0", "0x268a9d47dde48af4b6e2c33932ed1c13adec25555abaa837c376af4ea2f8ad4", "0x599927f1181d5633c6f680dbf039534de49c44e0b9903c5305b2582dfd6a56a", "0x231e110514ca3a27707cd6c365e00685142d43b03d26f6274db51cbfa91aa1c"} {
		values := map[felt]felt{}
		for i := range n {
			values[feltU(uint64(i))] = feltU(uint64(i + 1))
		}
		if got := build(values, 64, pedersen).root; hexOf(got) != want {
			t.Errorf("root of 1..%d = %s, want %s", n, hexOf(got), want)
		}
	}
}

// devnetWorld runs the rollup devnet for a few blocks of traffic and
// rebuilds its state from its state updates, checking at every block
// that the rebuilt tries give the block's new_root.
func devnetWorld(t *testing.T) (*world, felt, felt) {
	t.Helper()
	d, err := starknetdevnet.New(starknetdevnet.Config{BlockPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() { tr.CloseIdleConnections(); d.Close() })
	hc := &http.Client{Transport: tr}
	rpc := func(method string, params any, out any) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		resp, err := hc.Post(d.HTTPURL(), "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env struct {
			Result json.RawMessage
			Error  json.RawMessage
		}
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Error != nil {
			t.Fatalf("%s: %v %s", method, err, env.Error)
		}
		if err := json.Unmarshal(env.Result, out); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		for range 3 {
			if err := d.GenerateTraffic(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.SealBlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var head uint64
	rpc("starknet_blockNumber", []any{}, &head)
	w := &world{contracts: map[felt]*contractState{}, classes: map[felt]felt{}}
	contract := func(a felt) *contractState {
		c := w.contracts[a]
		if c == nil {
			c = &contractState{storage: map[felt]felt{}}
			w.contracts[a] = c
		}
		return c
	}
	var blockHash, root felt
	for n := uint64(0); n <= head; n++ {
		var su struct {
			BlockHash string `json:"block_hash"`
			NewRoot   string `json:"new_root"`
			Diff      struct {
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
		rpc("starknet_getStateUpdate", map[string]any{"block_id": map[string]any{"block_number": n}}, &su)
		for _, dc := range su.Diff.Deployed {
			contract(mustFelt(t, dc.Address)).class = mustFelt(t, dc.ClassHash)
		}
		for _, r := range su.Diff.Replaced {
			contract(mustFelt(t, r.Address)).class = mustFelt(t, r.ClassHash)
		}
		for _, s := range su.Diff.Storage {
			c := contract(mustFelt(t, s.Address))
			for _, e := range s.Entries {
				c.storage[mustFelt(t, e.Key)] = mustFelt(t, e.Value)
			}
		}
		for _, nn := range su.Diff.Nonces {
			contract(mustFelt(t, nn.Address)).nonce = mustFelt(t, nn.Nonce)
		}
		for _, dc := range su.Diff.Declared {
			w.classes[mustFelt(t, dc.ClassHash)] = mustFelt(t, dc.Compiled)
		}
		contracts, _, classes := w.tries()
		blockHash, root = mustFelt(t, su.BlockHash), mustFelt(t, su.NewRoot)
		if got := starkproof.StateRoot(contracts.root, classes.root); got != root {
			t.Fatalf("block %d: rebuilt state root %s, devnet's %s", n, hexOf(got), hexOf(root))
		}
	}
	if len(w.contracts) < 3 || len(w.classes) == 0 {
		t.Fatalf("%d contracts, %d classes", len(w.contracts), len(w.classes))
	}
	return w, blockHash, root
}

// TestVerifyAgainstDevnetState proves every contract, slot and class of
// the devnet's state at its head (plus an absent contract, slot and
// class) against the head's state root, then changes each felt of the
// proof in turn and expects every change to be caught.
func TestVerifyAgainstDevnetState(t *testing.T) {
	w, blockHash, root := devnetWorld(t)
	var req starkproof.Request
	slots := 0
	for a, c := range w.contracts {
		req.Contracts = append(req.Contracts, a)
		ck := starkproof.ContractKeys{Contract: a, Keys: []felt{feltU(0xdead)}}
		for k := range c.storage {
			ck.Keys = append(ck.Keys, k)
			slots++
		}
		req.Storage = append(req.Storage, ck)
	}
	nobody := feltU(0x5eed)
	req.Contracts = append(req.Contracts, nobody)
	for h := range w.classes {
		req.Classes = append(req.Classes, h)
	}
	req.Classes = append(req.Classes, feltU(0xc1a55))
	raw := w.storageProof(blockHash, req)

	p, err := starkproof.Verify(raw, blockHash, root, req)
	if err != nil {
		t.Fatal(err)
	}
	for a, c := range w.contracts {
		got := p.Contracts[a]
		if !got.Deployed || got.Nonce != c.nonce || got.ClassHash != c.class {
			t.Fatalf("contract %s: %+v", hexOf(a), got)
		}
		for k, v := range c.storage {
			if ans, ok := p.StorageAt(a, k); !ok || string(ans) != `"`+hexOf(v)+`"` {
				t.Fatalf("slot %s: %s", hexOf(k), ans)
			}
		}
		if v := p.Storage[a][feltU(0xdead)]; !v.IsZero() {
			t.Fatal("absent slot not zero")
		}
		if n, ok := p.Nonce(a); !ok || string(n) != `"`+hexOf(c.nonce)+`"` {
			t.Fatalf("nonce %s", n)
		}
	}
	if p.Contracts[nobody].Deployed {
		t.Fatal("absent contract deployed")
	}
	if _, ok := p.ClassHashAt(nobody); ok {
		t.Fatal("class hash of an absent contract")
	}
	for h, compiled := range w.classes {
		if p.Classes[h] != starkproof.ClassLeaf(compiled) {
			t.Fatalf("class %s", hexOf(h))
		}
	}
	if v := p.Classes[feltU(0xc1a55)]; !v.IsZero() {
		t.Fatal("undeclared class has a leaf")
	}
	t.Logf("%d contracts, %d slots, %d classes proven", len(w.contracts), slots, len(w.classes))

	// Every felt and every length in the proof matters.
	var doc any
	json.Unmarshal(raw, &doc)
	changes := 0
	var visit func(v any, set func(any))
	visit = func(v any, set func(any)) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				visit(e, func(n any) { x[k] = n })
			}
		case []any:
			for i, e := range x {
				visit(e, func(n any) { x[i] = n })
			}
		case string:
			set(flip(x))
			check(t, doc, blockHash, root, req, x)
			set(x)
			changes++
		case float64:
			set(x + 1)
			check(t, doc, blockHash, root, req, fmt.Sprint(x))
			set(x)
			changes++
		}
	}
	visit(doc, func(any) {})
	if changes < 50 {
		t.Fatalf("only %d changes", changes)
	}
	// Another root, another block: caught.
	if _, err := starkproof.Verify(raw, blockHash, feltU(1), req); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("other root: %v", err)
	}
	if _, err := starkproof.Verify(raw, feltU(1), root, req); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("other block: %v", err)
	}
}

func check(t *testing.T, doc any, blockHash, root felt, req starkproof.Request, what string) {
	t.Helper()
	bad, _ := json.Marshal(doc)
	if _, err := starkproof.Verify(bad, blockHash, root, req); err == nil {
		t.Fatalf("changing %s was not caught", what)
	}
}

// flip changes a hex felt's last digit.
func flip(s string) string {
	b := []byte(s)
	if b[len(b)-1] == '1' {
		b[len(b)-1] = '2'
	} else {
		b[len(b)-1] = '1'
	}
	return string(b)
}
