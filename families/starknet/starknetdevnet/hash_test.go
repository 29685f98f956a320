package starknetdevnet

import (
	"math/big"
	"testing"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

func dec(t *testing.T, s string) Felt {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad decimal %s", s)
	}
	var f Felt
	f.SetBigInt(n)
	return f
}

func hexFelt(t *testing.T, s string) Felt {
	t.Helper()
	f, err := starknettx.ParseFelt(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return f
}

func seq(n int) []Felt {
	out := make([]Felt, n)
	for i := range out {
		out[i] = starknettx.FeltU64(uint64(i))
	}
	return out
}

func TestPoseidon(t *testing.T) {
	x := dec(t, "218676008889449692916464780911713710628115973574242889792891157041292792362")
	if got, want := poseidonSingle(&x), dec(t, "2835120893146788752888137145656423078969524407843035783270702964188823073934"); !got.Equal(&want) {
		t.Errorf("hash_single = %s", got.String())
	}
	a, b := dec(t, "1253795"), dec(t, "18540013156130945068")
	if got, want := poseidon(&a, &b), dec(t, "37282360750367388068593128053386029947772104009544220786084510532118246655"); !got.Equal(&want) {
		t.Errorf("hash(1253795, 18540013156130945068) = %s", got.String())
	}
	many := []struct {
		in   []Felt
		want string
	}{
		{[]Felt{{}}, "2384960345383653703825803024708982182127528589318022519244349682493582074337"},
		{[]Felt{starknettx.FeltU64(3), starknettx.FeltU64(2), starknettx.FeltU64(1), {}}, "959881287299178068212229797802921067420697642955658182090092369705512874535"},
		{seq(24), "2800526046406372876670877767246181706986966856687646706671678894003401414331"},
		{seq(128), "3530668544792995162958732882451140094230265759699749633300982879733486600710"},
	}
	for _, c := range many {
		if got, want := poseidonMany(c.in...), dec(t, c.want); !got.Equal(&want) {
			t.Errorf("hash_many(%d values) = %s, want %s", len(c.in), got.String(), c.want)
		}
	}
}

// Pedersen vectors from cairo-lang's signature test data (as in
// gnark-crypto's own tests) and the contract-address computation of a
// Goerli deployment.
func TestPedersen(t *testing.T) {
	a := hexFelt(t, "0x03d937c035c878245caf64531a5756109c53068da139362728feb561405371cb")
	b := hexFelt(t, "0x0208a0a10250e382e1e4bbe2880906c2791bf6275695e02fbbc6aeff9cd8b31a")
	if got, want := pedersen(&a, &b), hexFelt(t, "0x030e480bed5fe53fa909cc0f8c4d99b8f9f2c016be4c41e13a4848797979c662"); !got.Equal(&want) {
		t.Errorf("pedersen = %s", starknettx.Hex(&got))
	}
	addr := contractAddress(Felt{},
		hexFelt(t, "0x5bebda1b28ba6daa824126577b9fbc984033e8b18360f5e1ef694cb172c7aa5"),
		hexFelt(t, "0x0439218681f9108b470d2379cf589ef47e60dc5888ee49ec70071671d74ca9c6"), nil)
	if want := hexFelt(t, "0x43c6817e70b3fd99a4f120790b2e82c6843df62b573fdadf9e2d677b60ac5eb"); !addr.Equal(&want) {
		t.Errorf("contract address = %s", starknettx.Hex(&addr))
	}
}

// Well-known selectors: the ERC-20 Transfer event and transfer function.
func TestStarknetKeccak(t *testing.T) {
	for name, want := range map[string]string{
		"Transfer": "0x99cd8bde557814842a3121e8ddfd433a539b8c9f14bf31ebf108d12e6196e9",
		"transfer": "0x83afd3f4caedc6eebf44246fe54e38c95e3179a5ec9ea81740eca5b482d12e",
	} {
		if got := starknettx.Selector(name); starknettx.Hex(&got) != want {
			t.Errorf("sn_keccak(%s) = %s, want %s", name, starknettx.Hex(&got), want)
		}
	}
}

// Vectors of papyrus's Patricia hash tree (height 64, Pedersen, keyed by
// index): one leaf is a single edge, two a binary root, three both.
func TestIndexedRoot(t *testing.T) {
	cases := []struct {
		n    int
		want string
	}{
		{0, "0x0"},
		{1, "0x268a9d47dde48af4b6e2c33932ed1c13adec25555abaa837c376af4ea2f8ad4"},
		{2, "0x599927f1181d5633c6f680dbf039534de49c44e0b9903c5305b2582dfd6a56a"},
		{3, "0x231e110514ca3a27707cd6c365e00685142d43b03d26f6274db51cbfa91aa1c"},
	}
	for _, c := range cases {
		values := seq(c.n + 1)[1:]
		if got := indexedRoot(values, pedersen); starknettx.Hex(&got) != c.want {
			t.Errorf("root of 1..%d = %s, want %s", c.n, starknettx.Hex(&got), c.want)
		}
	}
}

// TestPatriciaShapes checks the height-251 trie against hand-built nodes:
// a lone leaf is one edge of length 251; keys 0 and 1 share a 250-bit
// prefix of zeros above a binary node; keys 0 and 2^251-1 split at the top
// into two edges of length 250.
func TestPatriciaShapes(t *testing.T) {
	h := pedersen
	leaf := func(key, value Felt) trieLeaf { return trieLeaf{key: key.Bytes(), value: value} }
	edge := func(child, path Felt, length uint64) Felt {
		e := h(&child, &path)
		l := starknettx.FeltU64(length)
		return *e.Add(&e, &l)
	}
	k := hexFelt(t, "0x123456789abcdef")
	v := starknettx.FeltU64(7)
	if got, want := patriciaRoot([]trieLeaf{leaf(k, v)}, 251, h, nil), edge(v, k, 251); !got.Equal(&want) {
		t.Errorf("single leaf root %s, want %s", starknettx.Hex(&got), starknettx.Hex(&want))
	}
	two, three := starknettx.FeltU64(2), starknettx.FeltU64(3)
	bin := h(&two, &three)
	if got, want := patriciaRoot([]trieLeaf{leaf(starknettx.FeltU64(1), three), leaf(starknettx.FeltU64(0), two)}, 251, h, nil), edge(bin, Felt{}, 250); !got.Equal(&want) {
		t.Errorf("keys 0,1 root %s, want %s", starknettx.Hex(&got), starknettx.Hex(&want))
	}
	top := hexFelt(t, "0x7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")
	cc, dd := starknettx.FeltU64(0xcc), starknettx.FeltU64(0xdd)
	ones := hexFelt(t, "0x3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")
	l, r := edge(cc, Felt{}, 250), edge(dd, ones, 250)
	if got, want := patriciaRoot([]trieLeaf{leaf(Felt{}, cc), leaf(top, dd)}, 251, h, nil), h(&l, &r); !got.Equal(&want) {
		t.Errorf("split root %s, want %s", starknettx.Hex(&got), starknettx.Hex(&want))
	}
	// Zero values are absent leaves.
	if got := patriciaRoot([]trieLeaf{leaf(k, Felt{})}, 251, h, nil); !got.IsZero() {
		t.Errorf("zero leaf root %s", starknettx.Hex(&got))
	}
}
