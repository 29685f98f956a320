package starkproof_test

import (
	"errors"
	"testing"

	"github.com/porticohq/portico/families/starknet/starkproof"
	"github.com/porticohq/portico/network/verify"
)

// FuzzVerify starts from the devnet's proof of part of its state (two
// contracts with two slots each, two classes, and absent ones) at its
// head, built at start: nothing may panic, every failure is of a verify
// kind, and what verifies is the state's. The seed is kept small so that
// mutations reach its structure rather than spread over hundreds of nodes.
func FuzzVerify(f *testing.F) {
	c := devnetChain(f, 2)
	req := c.world.sample(2, 2)
	f.Add(c.proof(f, "latest", req))
	// The seed is all the target needs from the devnet.
	c.close()
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := starkproof.Verify(raw, c.blockHash, c.root, req)
		if err != nil {
			if !errors.Is(err, verify.ErrMismatch) && !errors.Is(err, verify.ErrMalformed) && !errors.Is(err, verify.ErrUnverifiable) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		for a, got := range p.Contracts {
			cs := c.world.contracts[a]
			if cs == nil && got.Deployed || cs != nil && (!got.Deployed || got.Nonce != cs.nonce || got.ClassHash != cs.class) {
				t.Fatalf("verified a false contract leaf")
			}
		}
		for a, slots := range p.Storage {
			for k, v := range slots {
				var want felt
				if cs := c.world.contracts[a]; cs != nil {
					want = cs.storage[k]
				}
				if v != want {
					t.Fatalf("verified a false slot")
				}
			}
		}
		for h, leaf := range p.Classes {
			var want felt
			if compiled, ok := c.world.classes[h]; ok {
				want = starkproof.ClassLeaf(compiled)
			}
			if leaf != want {
				t.Fatalf("verified a false class leaf")
			}
		}
	})
}
