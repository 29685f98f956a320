package starknettx

import (
	"math/big"
	"testing"
)

// A signature verifies for its key and hash only, and Cairo's ranges are
// enforced on both sides.
func TestSignVerify(t *testing.T) {
	priv := big.NewInt(0x1234567890abcdef)
	pub, err := PublicKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := PublicKey(big.NewInt(99))
	hash := PoseidonMany(ShortString("portico"), FeltU64(1))
	r, s, err := Sign(priv, hash)
	if err != nil {
		t.Fatal(err)
	}
	one := FeltU64(1)
	var rPlus, sNeg, big251 Felt
	rPlus.Add(&r, &one)
	sNeg.Neg(&s)
	big251.SetBigInt(two251)
	cases := []struct {
		name         string
		pub, h, r, s Felt
		want         bool
	}{
		{"good", pub, hash, r, s, true},
		{"other key", other, hash, r, s, false},
		{"other hash", pub, PoseidonMany(ShortString("portico"), FeltU64(2)), r, s, false},
		{"r changed", pub, hash, rPlus, s, false},
		{"s negated (out of range)", pub, hash, r, sNeg, false},
		{"zero r", pub, hash, Felt{}, s, false},
		{"hash at 2^251", pub, big251, r, s, false},
		{"key not on the curve", FeltU64(0), hash, r, s, false},
	}
	for _, c := range cases {
		if got := Verify(c.pub, c.h, c.r, c.s); got != c.want {
			t.Errorf("%s: Verify = %v, want %v", c.name, got, c.want)
		}
	}
	if _, _, err := Sign(priv, big251); err != ErrHashTooLarge {
		t.Errorf("Sign of a hash at 2^251: %v", err)
	}
	for _, bad := range []*big.Int{big.NewInt(0), CurveOrder(), big.NewInt(-1)} {
		if _, _, err := Sign(bad, hash); err != ErrBadPrivateKey {
			t.Errorf("Sign with key %v: %v", bad, err)
		}
	}
}
