package evmverify_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/network/verify"
)

func TestDefaultQuorum(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
		if got := verify.DefaultQuorum(n); got != want {
			t.Errorf("DefaultQuorum(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestAgree(t *testing.T) {
	a, b := common.HexToHash("0xa"), common.HexToHash("0xb")
	cases := []struct {
		name    string
		reports map[string]common.Hash
		quorum  int
		want    common.Hash
		ok      bool
	}{
		{"all agree", map[string]common.Hash{"n1": a, "n2": a, "n3": a}, 2, a, true},
		{"two of three", map[string]common.Hash{"n1": a, "n2": b, "n3": a}, 2, a, true},
		{"split, no quorum", map[string]common.Hash{"n1": a, "n2": b, "n3": {}}, 2, common.Hash{}, false},
		{"one node, quorum one", map[string]common.Hash{"n1": a}, 1, a, true},
		{"one of two answers", map[string]common.Hash{"n1": a, "n2": {}}, 2, common.Hash{}, false},
		{"low quorum tie", map[string]common.Hash{"n1": a, "n2": b}, 1, common.Hash{}, false},
		{"low quorum, more for one", map[string]common.Hash{"n1": a, "n2": b, "n3": b}, 1, b, true},
		{"zero quorum", map[string]common.Hash{"n1": a}, 0, common.Hash{}, false},
		{"no reports", nil, 1, common.Hash{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := verify.Agree(c.reports, c.quorum)
			if got != c.want || ok != c.ok {
				t.Fatalf("got %s %v, want %s %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// TestTrustLinksBackward trusts the fixture chain's head by quorum and
// walks parent links down to genesis; a header that only names a
// trusted parent is not trusted, and the set keeps its bound.
func TestTrustLinksBackward(t *testing.T) {
	fc := loadFixture(t)
	tr := verify.NewTrust(0)
	head := fc.head()
	if _, ok := tr.Quorum(head.NumberU64(), map[string]common.Hash{"a": head.Hash(), "b": head.Hash(), "c": common.HexToHash("0xbad")}, 2); !ok {
		t.Fatal("no quorum")
	}
	for i := len(fc.blocks) - 1; i >= 0; i-- {
		h := evmverify.NewHeader(fc.blocks[i].Header())
		if !tr.Link(h) {
			t.Fatalf("block %d not trusted", h.Number())
		}
	}
	// A forged child of the head: same parent link, not trusted.
	forged := fc.head().Header()
	forged.ParentHash, forged.Number = head.Hash(), new(big.Int).Add(forged.Number, common.Big1)
	if tr.Link(evmverify.NewHeader(forged)) {
		t.Fatal("a child of a trusted block was trusted")
	}
	// A header with the trusted hash's number but another hash is not.
	other := fc.blocks[3].Header()
	other.Extra = []byte("other")
	if tr.Link(evmverify.NewHeader(other)) {
		t.Fatal("a changed header was trusted")
	}

	small := verify.NewTrust(10)
	for i := range 100 {
		small.Quorum(uint64(i), map[string]common.Hash{"a": common.BigToHash(big.NewInt(int64(i + 1)))}, 1)
	}
	if _, ok := small.Trusted(common.BigToHash(big.NewInt(100))); !ok {
		t.Fatal("newest dropped")
	}
	if _, ok := small.Trusted(common.BigToHash(big.NewInt(1))); ok {
		t.Fatal("oldest kept past the bound")
	}
	small.Checkpoint(common.HexToHash("0xc0"), 5)
	for i := range 100 {
		small.Quorum(uint64(200+i), map[string]common.Hash{"a": common.BigToHash(big.NewInt(int64(1000 + i)))}, 1)
	}
	if n, ok := small.Trusted(common.HexToHash("0xc0")); !ok || n != 5 {
		t.Fatal("checkpoint dropped")
	}
}
