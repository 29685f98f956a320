package starkproof_test

import (
	"errors"
	"testing"

	"github.com/porticohq/portico/verify"
	"github.com/porticohq/portico/verify/starkproof"
)

// FuzzVerify starts from the devnet's proof of its whole state (plus
// absent keys) at its head: nothing may panic, every failure is of a
// verify kind, and what verifies is the state's.
func FuzzVerify(f *testing.F) {
	c := devnetChain(f, 2)
	req := c.world.everything()
	f.Add(c.proof(f, "latest", req))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := starkproof.Verify(raw, c.blockHash, c.root, req)
		if err != nil {
			if !errors.Is(err, verify.ErrMismatch) && !errors.Is(err, verify.ErrMalformed) && !errors.Is(err, verify.ErrUnverifiable) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		for a, cs := range c.world.contracts {
			if got := p.Contracts[a]; !got.Deployed || got.Nonce != cs.nonce || got.ClassHash != cs.class {
				t.Fatalf("verified a false contract leaf")
			}
			for k, v := range cs.storage {
				if p.Storage[a][k] != v {
					t.Fatalf("verified a false slot")
				}
			}
		}
		for h, compiled := range c.world.classes {
			if p.Classes[h] != starkproof.ClassLeaf(compiled) {
				t.Fatalf("verified a false class leaf")
			}
		}
	})
}
