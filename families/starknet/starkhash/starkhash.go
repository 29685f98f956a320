// Package starkhash is Starknet's two hash functions over the Stark
// field: Pedersen (gnark-crypto's) and Poseidon (the Hades permutation
// Starknet fixes: width 3, S-box x^3, 8 full and 83 partial rounds, the
// MDS matrix [[3,1,1],[1,-1,1],[1,1,-2]], round constants derived from
// sha256("Hades" + i)). gnark-crypto has no Starknet Poseidon, so it is
// written here once; families/starknet/starkproof, starknettx and through it the
// rollup devnet use it.
package starkhash

import (
	"crypto/sha256"
	"strconv"

	"github.com/consensys/gnark-crypto/ecc/stark-curve/fp"
	pedersenhash "github.com/consensys/gnark-crypto/ecc/stark-curve/pedersen-hash"
)

// Felt is an element of the Stark field.
type Felt = fp.Element

// Pedersen is Starknet's pedersen_hash(a, b).
func Pedersen(a, b *Felt) Felt { return pedersenhash.Pedersen(a, b) }

const (
	fullRounds    = 8
	partialRounds = 83
	rounds        = fullRounds + partialRounds
)

// roundKeys are the 273 round constants: sha256("Hades" + decimal i) as
// a big-endian integer modulo the prime. Computed once at start and never
// written after.
var roundKeys = func() (k [rounds][3]fp.Element) {
	for i := range rounds * 3 {
		sum := sha256.Sum256([]byte("Hades" + strconv.Itoa(i)))
		k[i/3][i%3].SetBytes(sum[:])
	}
	return k
}()

// permute is the Hades permutation, in place.
func permute(s *[3]fp.Element) {
	var t, sq, d fp.Element
	for r := range rounds {
		k := &roundKeys[r]
		s[0].Add(&s[0], &k[0])
		s[1].Add(&s[1], &k[1])
		s[2].Add(&s[2], &k[2])
		full := r < fullRounds/2 || r >= fullRounds/2+partialRounds
		for i := range 3 {
			if full || i == 2 {
				sq.Square(&s[i])
				s[i].Mul(&s[i], &sq)
			}
		}
		// The MDS product, with t = s0+s1+s2: (t+2·s0, t−2·s1, t−3·s2).
		t.Add(&s[0], &s[1]).Add(&t, &s[2])
		d.Double(&s[0])
		s[0].Add(&t, &d)
		d.Double(&s[1])
		s[1].Sub(&t, &d)
		d.Double(&s[2]).Add(&d, &s[2])
		s[2].Sub(&t, &d)
	}
}

// Poseidon is poseidon_hash(x, y): the first element of the permutation
// of (x, y, 2).
func Poseidon(x, y *Felt) Felt {
	s := [3]fp.Element{*x, *y, fp.NewElement(2)}
	permute(&s)
	return s[0]
}

// PoseidonSingle is poseidon_hash_single(x): the first element of the
// permutation of (x, 0, 1).
func PoseidonSingle(x *Felt) Felt {
	s := [3]fp.Element{*x, {}, fp.NewElement(1)}
	permute(&s)
	return s[0]
}

// PoseidonMany is poseidon_hash_many: a sponge absorbing two values at a
// time, the input padded with 1 and then zero to an even length.
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
		permute(&s)
	}
	return s[0]
}

// ShortString is a Cairo short string (at most 31 ASCII bytes) as a
// felt: its bytes read as a big-endian integer.
func ShortString(s string) Felt {
	var f Felt
	f.SetBytes([]byte(s))
	return f
}
