package starknetdevnet

import (
	"bytes"
	"errors"
	"math/big"
	"slices"
	"sort"

	pedersenhash "github.com/consensys/gnark-crypto/ecc/stark-curve/pedersen-hash"

	"github.com/porticohq/portico/families/starknet/starknettx"
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

// trieNode is an inner node of a trie as a proof lists it: a binary node
// (left, right) or an edge node (path, length, child).
type trieNode struct {
	binary      bool
	left, right Felt
	child, path Felt
	length      int
}

// trieNodes holds inner nodes by hash, for proofs. Nodes are addressed by
// their content's hash, so the nodes of several tries (every contract's
// storage) can share one trieNodes.
type trieNodes map[Felt]trieNode

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
// With nodes non-nil, every inner node is added to it, so that prove can
// walk the trie from its root.
func patriciaRoot(leaves []trieLeaf, height int, h func(a, b *Felt) Felt, nodes trieNodes) Felt {
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
	return subtreeHash(live, height, h, nodes)
}

// keyBit returns bit i (0 is the least significant) of a big-endian key.
func keyBit(k *[32]byte, i int) byte { return (k[31-i/8] >> (i % 8)) & 1 }

// subtreeHash hashes the node at height ht (bits of key left below it) whose
// leaves, sorted, are given, adding the inner nodes to nodes unless nil.
func subtreeHash(leaves []trieLeaf, ht int, h func(a, b *Felt) Felt, nodes trieNodes) Felt {
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
		left := subtreeHash(leaves[:split], ht-1, h, nodes)
		right := subtreeHash(leaves[split:], ht-1, h, nodes)
		e := h(&left, &right)
		if nodes != nil {
			nodes[e] = trieNode{binary: true, left: left, right: right}
		}
		return e
	}
	child := subtreeHash(leaves, ht-length, h, nodes)
	path := edgePath(first, ht-length, length)
	e := h(&child, &path)
	l := starknettx.FeltU64(uint64(length))
	e.Add(&e, &l)
	if nodes != nil {
		nodes[e] = trieNode{child: child, path: path, length: length}
	}
	return e
}

// errProofNode is a proof's walk reaching a hash it holds no node for:
// the tries and the root they were asked about disagree.
var errProofNode = errors.New("starknetdevnet: storage proof: a node on the path is missing")

// prove renders, as NODE_HASH_TO_NODE_MAPPING entries appended to out (a
// comma before each unless out ends a '['), the inner nodes on the path
// from root to key in a trie of the given height: every node down to the
// leaf, or to the edge that leaves the key's path (the proof that key
// holds nothing), none for an empty trie. Nodes in seen are skipped and
// the rendered ones added, so the paths of several keys list each node
// once.
func (n trieNodes) prove(out []byte, root Felt, key *[32]byte, height int, seen map[Felt]bool) ([]byte, error) {
	cur, ht := root, height
	for ht > 0 && !cur.IsZero() {
		nd, ok := n[cur]
		if !ok {
			return nil, errProofNode
		}
		if !seen[cur] {
			seen[cur] = true
			out = appendProofNode(out, &cur, &nd)
		}
		if nd.binary {
			if keyBit(key, ht-1) == 0 {
				cur = nd.left
			} else {
				cur = nd.right
			}
			ht--
			continue
		}
		if p := edgePath(key, ht-nd.length, nd.length); !p.Equal(&nd.path) {
			break // the edge leads elsewhere: nothing at key
		}
		cur, ht = nd.child, ht-nd.length
	}
	return out, nil
}

// appendProofNode renders one {node_hash, node} entry.
func appendProofNode(b []byte, hash *Felt, n *trieNode) []byte {
	if len(b) > 0 && b[len(b)-1] != '[' {
		b = append(b, ',')
	}
	b = append(b, `{"node_hash":`...)
	b = appendFeltJSON(b, hash)
	if n.binary {
		b = append(b, `,"node":{"left":`...)
		b = appendFeltJSON(b, &n.left)
		b = append(b, `,"right":`...)
		b = appendFeltJSON(b, &n.right)
	} else {
		b = append(b, `,"node":{"path":`...)
		b = appendFeltJSON(b, &n.path)
		b = append(b, `,"length":`...)
		b = appendUint(b, uint64(n.length))
		b = append(b, `,"child":`...)
		b = appendFeltJSON(b, &n.child)
	}
	return append(b, "}}"...)
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
		k := starknettx.FeltU64(uint64(i))
		leaves[i] = trieLeaf{key: k.Bytes(), value: values[i]}
	}
	if len(leaves) == 0 {
		return Felt{}
	}
	// Every index is a leaf, zero or not: these tries are built once from
	// a list, never updated, so a zero is not a deletion.
	return subtreeHash(leaves, commitmentTrieHeight, h, nil)
}
