package evmverify_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb/memorydb"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/network/verify"
)

// TestVerifyProofAccountLeaf: accounts at the edges of their fields (a
// zero and a 256-bit balance, a zero and the largest nonce) are put in a
// state trie built by go-ethereum, with a leaf that is not an account
// next to them; the proofs go-ethereum makes of each verify to exactly
// the account, and the leaf that is not one is refused as a mismatch.
func TestVerifyProofAccountLeaf(t *testing.T) {
	max256 := new(uint256.Int).SetAllOne()
	accounts := map[common.Address]*types.StateAccount{
		common.HexToAddress("0x01"): {Nonce: 0, Balance: new(uint256.Int), Root: types.EmptyRootHash, CodeHash: types.EmptyCodeHash.Bytes()},
		common.HexToAddress("0x02"): {Nonce: ^uint64(0), Balance: max256, Root: common.HexToHash("0xaa"), CodeHash: common.HexToHash("0xbb").Bytes()},
		common.HexToAddress("0x03"): {Nonce: 1, Balance: uint256.NewInt(127), Root: types.EmptyRootHash, CodeHash: types.EmptyCodeHash.Bytes()},
		common.HexToAddress("0x04"): {Nonce: 128, Balance: uint256.NewInt(128), Root: types.EmptyRootHash, CodeHash: types.EmptyCodeHash.Bytes()},
	}
	notAccount := common.HexToAddress("0x05")
	tr := trie.NewEmpty(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil))
	for a, sa := range accounts {
		enc, err := rlp.EncodeToBytes(sa)
		if err != nil {
			t.Fatal(err)
		}
		tr.MustUpdate(crypto.Keccak256(a[:]), enc)
	}
	// Four fields as the answer shows them, and a fifth.
	stray := &types.StateAccount{Balance: uint256.NewInt(1), Root: types.EmptyRootHash, CodeHash: types.EmptyCodeHash.Bytes()}
	enc, _ := rlp.EncodeToBytes([]any{stray.Nonce, stray.Balance, stray.Root, stray.CodeHash, uint64(1)})
	tr.MustUpdate(crypto.Keccak256(notAccount[:]), enc)
	root := tr.Hash()
	answer := func(a common.Address, sa *types.StateAccount) []byte {
		db := memorydb.New()
		if err := tr.Prove(crypto.Keccak256(a[:]), db); err != nil {
			t.Fatal(err)
		}
		var nodes []hexutil.Bytes
		it := db.NewIterator(nil, nil)
		for it.Next() {
			nodes = append(nodes, common.CopyBytes(it.Value()))
		}
		it.Release()
		out, _ := json.Marshal(map[string]any{"address": a, "accountProof": nodes, "balance": (*hexutil.Big)(sa.Balance.ToBig()),
			"codeHash": common.BytesToHash(sa.CodeHash), "nonce": hexutil.Uint64(sa.Nonce), "storageHash": sa.Root, "storageProof": []any{}})
		return out
	}
	for a, sa := range accounts {
		acc, err := evmverify.VerifyProof(answer(a, sa), root, a, nil)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if !acc.Exists || acc.Nonce != sa.Nonce || !acc.Balance.Eq(sa.Balance) || acc.StorageRoot != sa.Root || acc.CodeHash != common.BytesToHash(sa.CodeHash) {
			t.Fatalf("%s: proven %+v, put %+v", a, acc, sa)
		}
	}
	if _, err := evmverify.VerifyProof(answer(notAccount, stray), root, notAccount, nil); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("a leaf that is not an account: %v", err)
	}
}

// TestExecutorKeepsRecentlyUsed: with room for two blocks' state, a
// block read from again stays while a third block's read pushes out the
// one used least recently, not the one made first.
func TestExecutorKeepsRecentlyUsed(t *testing.T) {
	fc := loadFixture(t)
	addr := common.HexToAddress("0x01")
	var heads []*evmverify.Header
	var answers [][]byte
	for n := range 3 {
		sa := &types.StateAccount{Nonce: uint64(n), Balance: uint256.NewInt(uint64(100 + n)), Root: types.EmptyRootHash, CodeHash: types.EmptyCodeHash.Bytes()}
		tr := trie.NewEmpty(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil))
		enc, _ := rlp.EncodeToBytes(sa)
		tr.MustUpdate(crypto.Keccak256(addr[:]), enc)
		db := memorydb.New()
		if err := tr.Prove(crypto.Keccak256(addr[:]), db); err != nil {
			t.Fatal(err)
		}
		var nodes []hexutil.Bytes
		it := db.NewIterator(nil, nil)
		for it.Next() {
			nodes = append(nodes, common.CopyBytes(it.Value()))
		}
		it.Release()
		out, _ := json.Marshal(map[string]any{"address": addr, "accountProof": nodes, "balance": (*hexutil.Big)(sa.Balance.ToBig()),
			"codeHash": types.EmptyCodeHash, "nonce": hexutil.Uint64(sa.Nonce), "storageHash": types.EmptyRootHash, "storageProof": []any{}})
		answers = append(answers, out)
		hdr := types.CopyHeader(fc.head().Header())
		hdr.Root = tr.Hash()
		hdr.Number.SetUint64(uint64(1000 + n))
		heads = append(heads, evmverify.NewHeader(hdr))
	}
	ex := evmverify.NewExecutor(fc.chain, emptySource{}, evmverify.ExecutorOptions{CacheBlocks: 2})
	for _, n := range []int{0, 1} {
		if _, err := ex.Prove(answers[n], heads[n], addr, nil); err != nil {
			t.Fatal(err)
		}
	}
	if acc, ok := ex.Proven(heads[0], addr, nil); !ok || acc.Nonce != 0 {
		t.Fatalf("block 0: %+v %v", acc, ok)
	}
	if _, err := ex.Prove(answers[2], heads[2], addr, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := ex.Proven(heads[1], addr, nil); ok {
		t.Error("the block used least recently is still kept")
	}
	for _, n := range []int{0, 2} {
		if acc, ok := ex.Proven(heads[n], addr, nil); !ok || acc.Nonce != uint64(n) || acc.Balance.Uint64() != uint64(100+n) {
			t.Errorf("block %d: %+v %v", n, acc, ok)
		}
	}
}
