package starkproof_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/porticohq/portico/families/starknet/starkproof"
	"github.com/porticohq/portico/network/verify"
)

// TestVerifyAgainstDevnetState asks the devnet to prove every contract,
// slot and class of its state at its head (plus an absent contract, slot
// and class), verifies the answer against the head's state root (its
// header checked against its hash), then changes each felt of the proof
// in turn and expects every change to be caught.
func TestVerifyAgainstDevnetState(t *testing.T) {
	c := devnetChain(t, 4)
	w, blockHash, root := c.world, c.blockHash, c.root
	req := w.everything()
	nobody := feltU(0x5eed)
	slots := 0
	for _, cs := range w.contracts {
		slots += len(cs.storage)
	}
	raw := c.proof(t, "latest", req)
	for _, id := range []any{map[string]any{"block_hash": hexOf(blockHash)}} {
		if other := c.proof(t, id, req); !bytes.Equal(other, raw) {
			t.Fatalf("the proof at %v differs from the proof at latest", id)
		}
	}

	p, err := starkproof.Verify(raw, blockHash, root, req)
	if err != nil {
		t.Fatal(err)
	}
	for a, c := range w.contracts {
		got := p.Contracts[a]
		if !got.Deployed || got.Nonce != c.nonce || got.ClassHash != c.class {
			t.Fatalf("contract %s: %+v", hexOf(a), got)
		}
		if h, ok := p.ClassHashAt(a); !ok || string(h) != `"`+hexOf(c.class)+`"` {
			t.Fatalf("class hash %s", h)
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
	if v, ok := p.Storage[nobody][feltU(1)]; !ok || !v.IsZero() {
		t.Fatal("a slot of an absent contract is not proven zero")
	}
	for h, compiled := range w.classes {
		if p.Classes[h] != starkproof.ClassLeaf(compiled) {
			t.Fatalf("class %s", hexOf(h))
		}
	}
	if v := p.Classes[feltU(0xc1a55)]; !v.IsZero() {
		t.Fatal("undeclared class has a leaf")
	}
	t.Logf("%d contracts, %d slots, %d classes proven in %d bytes", len(w.contracts), slots, len(w.classes), len(raw))

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
