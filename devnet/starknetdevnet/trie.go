package starknetdevnet

import (
	"bytes"
	"math/big"
	"slices"
	"sort"

	pedersenhash "github.com/consensys/gnark-crypto/ecc/stark-curve/pedersen-hash"
)

// pedersen is Starknet's pedersen_hash(a, b).
func pedersen(a, b *Felt) Felt { return pedersenhash.Pedersen(a, b) }

// pedersenArray is Starknet's compute_hash_on_elements: a Pedersen chain
// from 0 over the values, then over their count.
func pedersenArray(values ...Felt) Felt {
	ptrs := make([]*Felt, len(values))
	for i := range values {
		ptrs[i] = &values[i]
	}
	return pedersenhash.PedersenArray(ptrs...)
}

// trieLeaf is one key/value of a Merkle-Patricia trie; the key is the
// felt's 32-byte big-endian form.
type trieLeaf struct {
	key   [32]byte
	value Felt
}

// Trie heights Starknet uses: 251 for the state tries (contracts, storage,
// classes), 64 for the per-block commitments keyed by index.
const (
	stateTrieHeight      = 251
	commitmentTrieHeight = 64
)

// patriciaRoot computes the root of Starknet's binary Merkle-Patricia trie
// of the given height over the leaves with a non-zero value, with hash h
// (Pedersen for contracts and storage, Poseidon for classes and block
// commitments). The trie is defined by its leaves alone:
//
//   - a leaf's hash is its value;
//   - a binary node's hash is h(left, right);
//   - an edge node (a maximal run of single-child levels) of length L and
//     path P over a child c hashes to h(c, P) + L;
//   - the empty trie's root is 0.
//
// leaves may be in any order; keys must be distinct and below 2^height.
func patriciaRoot(leaves []trieLeaf, height int, h func(a, b *Felt) Felt) Felt {
	live := make([]trieLeaf, 0, len(leaves))
	for _, l := range leaves {
		if !l.value.IsZero() {
			live = append(live, l)
		}
	}
	if len(live) == 0 {
		return Felt{}
	}
	slices.SortFunc(live, func(a, b trieLeaf) int { return bytes.Compare(a.key[:], b.key[:]) })
	return subtreeHash(live, height, h)
}

// keyBit returns bit i (0 is the least significant) of a big-endian key.
func keyBit(k *[32]byte, i int) byte { return (k[31-i/8] >> (i % 8)) & 1 }

// subtreeHash hashes the node at height ht (bits of key left below it) whose
// leaves, sorted, are given.
func subtreeHash(leaves []trieLeaf, ht int, h func(a, b *Felt) Felt) Felt {
	if ht == 0 {
		return leaves[0].value
	}
	// The edge is as long as the first and last keys agree from the top.
	first, last := &leaves[0].key, &leaves[len(leaves)-1].key
	length := 0
	for length < ht && keyBit(first, ht-1-length) == keyBit(last, ht-1-length) {
		length++
	}
	if length == 0 {
		split := sort.Search(len(leaves), func(i int) bool { return keyBit(&leaves[i].key, ht-1) == 1 })
		left := subtreeHash(leaves[:split], ht-1, h)
		right := subtreeHash(leaves[split:], ht-1, h)
		return h(&left, &right)
	}
	child := subtreeHash(leaves, ht-length, h)
	path := edgePath(first, ht-length, length)
	e := h(&child, &path)
	l := feltU64(uint64(length))
	e.Add(&e, &l)
	return e
}

// edgePath returns bits [from, from+n) of the key as a felt.
func edgePath(k *[32]byte, from, n int) Felt {
	v := new(big.Int).SetBytes(k[:])
	v.Rsh(v, uint(from))
	v.And(v, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(n)), big.NewInt(1)))
	var f Felt
	f.SetBigInt(v)
	return f
}

// indexedRoot is the root of a height-64 trie whose leaves are keyed by
// their index, the shape of the transaction, event and receipt
// commitments.
func indexedRoot(values []Felt, h func(a, b *Felt) Felt) Felt {
	leaves := make([]trieLeaf, len(values))
	for i := range values {
		k := feltU64(uint64(i))
		leaves[i] = trieLeaf{key: k.Bytes(), value: values[i]}
	}
	if len(leaves) == 0 {
		return Felt{}
	}
	// Every index is a leaf, zero or not: these tries are built once from
	// a list, never updated, so a zero is not a deletion.
	return subtreeHash(leaves, commitmentTrieHeight, h)
}
