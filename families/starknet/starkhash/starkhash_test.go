package starkhash_test

import (
	"math/big"
	"testing"

	"github.com/porticohq/portico/families/starknet/starkhash"
)

func dec(t *testing.T, s string) starkhash.Felt {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 0)
	if !ok {
		t.Fatalf("bad number %s", s)
	}
	var f starkhash.Felt
	f.SetBigInt(n)
	return f
}

func seq(n int) []starkhash.Felt {
	out := make([]starkhash.Felt, n)
	for i := range out {
		out[i].SetUint64(uint64(i))
	}
	return out
}

// Vectors: cairo-lang's builtin_poseidon program (hash of two) and
// starknet.dart's hash_many cases; Pedersen from cairo-lang's signature
// test data.
func TestPoseidon(t *testing.T) {
	a, b := dec(t, "1253795"), dec(t, "18540013156130945068")
	if got, want := starkhash.Poseidon(&a, &b), dec(t, "37282360750367388068593128053386029947772104009544220786084510532118246655"); !got.Equal(&want) {
		t.Errorf("hash(1253795, 18540013156130945068) = %s", got.String())
	}
	three, two, one := dec(t, "3"), dec(t, "2"), dec(t, "1")
	cases := []struct {
		in   []starkhash.Felt
		want string
	}{
		{[]starkhash.Felt{{}}, "2384960345383653703825803024708982182127528589318022519244349682493582074337"},
		{[]starkhash.Felt{three, two, one, {}}, "959881287299178068212229797802921067420697642955658182090092369705512874535"},
		{seq(24), "2800526046406372876670877767246181706986966856687646706671678894003401414331"},
		{seq(128), "3530668544792995162958732882451140094230265759699749633300982879733486600710"},
	}
	for _, c := range cases {
		if got, want := starkhash.PoseidonMany(c.in...), dec(t, c.want); !got.Equal(&want) {
			t.Errorf("hash_many(%d values) = %s, want %s", len(c.in), got.String(), c.want)
		}
	}
}

func TestPedersen(t *testing.T) {
	a := dec(t, "0x03d937c035c878245caf64531a5756109c53068da139362728feb561405371cb")
	b := dec(t, "0x0208a0a10250e382e1e4bbe2880906c2791bf6275695e02fbbc6aeff9cd8b31a")
	if got, want := starkhash.Pedersen(&a, &b), dec(t, "0x030e480bed5fe53fa909cc0f8c4d99b8f9f2c016be4c41e13a4848797979c662"); !got.Equal(&want) {
		t.Errorf("pedersen = %s", got.String())
	}
}

func TestShortString(t *testing.T) {
	if got, want := starkhash.ShortString("STARKNET_STATE_V0"), dec(t, "0x535441524b4e45545f53544154455f5630"); !got.Equal(&want) {
		t.Errorf("short string = %s", got.String())
	}
}
