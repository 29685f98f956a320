package keyderiv

import (
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"golang.org/x/crypto/sha3"
)

// Rounds is the number of Feistel rounds of circomlib's MiMC sponge.
const Rounds = 220

// constantsSeed is hashed, then re-hashed, to make the round constants.
const constantsSeed = "mimcsponge"

// Sponge is circomlib's MiMC sponge over the BN254 scalar field: a Feistel
// permutation of 220 rounds with x^5, keyed by a field element. The zero
// value is not usable; make one with NewSponge. A Sponge is read-only once
// made and safe for concurrent use.
type Sponge struct {
	c [Rounds]fr.Element
}

// NewSponge computes the round constants: c[0] and c[219] are 0; c[i] for
// 0 < i < 219 is the i-th keccak256 of the chain that starts with
// keccak256("mimcsponge") and hashes the previous 32-byte digest each step,
// read as a big-endian integer mod p.
func NewSponge() *Sponge {
	s := new(Sponge)
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(constantsSeed))
	d := h.Sum(nil)
	for i := 1; i < Rounds-1; i++ {
		h.Reset()
		h.Write(d)
		d = h.Sum(d[:0])
		s.c[i].SetBytes(d) // SetBytes reduces mod p
	}
	return s
}

// Hash runs the permutation on (xL, xR) with round key k and returns both
// halves, as circomlib's mimcsponge.hash does.
func (s *Sponge) Hash(xL, xR, k fr.Element) (fr.Element, fr.Element) {
	var t, t2 fr.Element
	for i := range Rounds {
		t.Add(&xL, &k)
		if i > 0 {
			t.Add(&t, &s.c[i])
		}
		// t^5 = (t^2)^2 · t
		t2.Square(&t)
		t2.Square(&t2)
		t2.Mul(&t2, &t)
		if i < Rounds-1 {
			var nl fr.Element
			nl.Add(&xR, &t2)
			xR = xL
			xL = nl
		} else {
			xR.Add(&xR, &t2)
		}
	}
	return xL, xR
}

// MultiHash absorbs inputs one at a time into the sponge (rate 1, capacity
// 1, state starting at zero) and squeezes outputs field elements, as
// circomlib's mimcsponge.multiHash does.
func (s *Sponge) MultiHash(inputs []fr.Element, k fr.Element, outputs int) []fr.Element {
	var r, c fr.Element
	for i := range inputs {
		r.Add(&r, &inputs[i])
		r, c = s.Hash(r, c, k)
	}
	out := make([]fr.Element, 0, outputs)
	if outputs > 0 {
		out = append(out, r)
	}
	for len(out) < outputs {
		r, c = s.Hash(r, c, k)
		out = append(out, r)
	}
	return out
}

// Element returns x mod p as a field element. It exists for callers that
// hold big integers (a key or a client id wider than the field).
func Element(x *big.Int) fr.Element {
	var e fr.Element
	e.SetBigInt(x)
	return e
}
