package starkproof_test

import (
	"errors"
	"testing"

	"github.com/porticohq/portico/verify"
	"github.com/porticohq/portico/verify/starkproof"
)

// FuzzVerify starts from a proof the test builder writes for a small
// world: nothing may panic, every failure is of a verify kind, and what
// verifies is the world's.
func FuzzVerify(f *testing.F) {
	w := &world{contracts: map[felt]*contractState{}, classes: map[felt]felt{feltU(0xc1): feltU(0xc2)}}
	for i := range 5 {
		c := &contractState{nonce: feltU(uint64(i)), class: feltU(0xc1), storage: map[felt]felt{}}
		for k := range 4 {
			c.storage[feltU(uint64(k*7919+i))] = feltU(uint64(k + 1))
		}
		w.contracts[feltU(uint64(0x1000+i*0x333))] = c
	}
	req := starkproof.Request{Classes: []felt{feltU(0xc1), feltU(0xc3)}}
	for a, c := range w.contracts {
		req.Contracts = append(req.Contracts, a)
		ck := starkproof.ContractKeys{Contract: a}
		for k := range c.storage {
			ck.Keys = append(ck.Keys, k)
		}
		req.Storage = append(req.Storage, ck)
	}
	contracts, _, classes := w.tries()
	root := starkproof.StateRoot(contracts.root, classes.root)
	block := feltU(0xb10c)
	f.Add(w.storageProof(block, req))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := starkproof.Verify(raw, block, root, req)
		if err != nil {
			if !errors.Is(err, verify.ErrMismatch) && !errors.Is(err, verify.ErrMalformed) && !errors.Is(err, verify.ErrUnverifiable) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		for a, c := range w.contracts {
			for k, v := range c.storage {
				if p.Storage[a][k] != v {
					t.Fatalf("verified a false slot")
				}
			}
		}
	})
}
