package starknettx

import (
	"crypto/sha256"
	"strconv"

	"github.com/consensys/gnark-crypto/ecc/stark-curve/fp"
)

// Starknet's Poseidon: the Hades permutation over the Stark field with
// width 3 (rate 2, capacity 1), S-box x^3, 8 full rounds (4 before and 4
// after) and 83 partial rounds, and the MDS matrix
// [[3,1,1],[1,-1,1],[1,1,-2]].
const (
	hadesFullRounds    = 8
	hadesPartialRounds = 83
	hadesRounds        = hadesFullRounds + hadesPartialRounds
)

// hadesRoundKeys is the constant table of round constants. Starknet
// derives the i-th of its 273 constants as sha256("Hades" + decimal i) read
// as a big-endian integer, reduced modulo the prime. It is computed once at
// package initialisation and never written afterwards.
var hadesRoundKeys = func() (k [hadesRounds][3]fp.Element) {
	for i := range hadesRounds * 3 {
		sum := sha256.Sum256([]byte("Hades" + strconv.Itoa(i)))
		k[i/3][i%3].SetBytes(sum[:])
	}
	return k
}()

// hadesPermutation permutes the state in place.
func hadesPermutation(s *[3]fp.Element) {
	var t, sq fp.Element
	for r := range hadesRounds {
		k := &hadesRoundKeys[r]
		s[0].Add(&s[0], &k[0])
		s[1].Add(&s[1], &k[1])
		s[2].Add(&s[2], &k[2])
		full := r < hadesFullRounds/2 || r >= hadesFullRounds/2+hadesPartialRounds
		for i := range 3 {
			if full || i == 2 {
				sq.Square(&s[i])
				s[i].Mul(&s[i], &sq)
			}
		}
		// Multiply by the MDS matrix, with t = s0+s1+s2:
		// (t+2·s0, t−2·s1, t−3·s2).
		t.Add(&s[0], &s[1]).Add(&t, &s[2])
		var d fp.Element
		d.Double(&s[0])
		s[0].Add(&t, &d)
		d.Double(&s[1])
		s[1].Sub(&t, &d)
		d.Double(&s[2]).Add(&d, &s[2])
		s[2].Sub(&t, &d)
	}
}

// Poseidon is poseidon_hash(x, y): the first element of the permutation of
// (x, y, 2).
func Poseidon(x, y *Felt) Felt {
	s := [3]fp.Element{*x, *y, fp.NewElement(2)}
	hadesPermutation(&s)
	return s[0]
}

// PoseidonSingle is poseidon_hash_single(x): the permutation of (x, 0, 1).
func PoseidonSingle(x *Felt) Felt {
	s := [3]fp.Element{*x, {}, fp.NewElement(1)}
	hadesPermutation(&s)
	return s[0]
}

// PoseidonMany is poseidon_hash_many: a sponge over the values padded with
// 1 and then zeros to an even length, absorbing two at a time.
func PoseidonMany(values ...Felt) Felt {
	var s [3]fp.Element
	one := fp.One()
	for i := 0; i <= len(values); i += 2 {
		a, b := one, fp.Element{}
		if i < len(values) {
			a = values[i]
			if i+1 < len(values) {
				b = values[i+1]
			} else {
				b = one
			}
		}
		s[0].Add(&s[0], &a)
		s[1].Add(&s[1], &b)
		hadesPermutation(&s)
	}
	return s[0]
}
