package starkproof_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"slices"

	"github.com/porticohq/portico/starkhash"
	"github.com/porticohq/portico/verify/starkproof"
)

// A second implementation of Starknet's trie, written for these tests
// only: it builds every node from the leaves up and keeps them, so it can
// write proofs in the spec's shape. Its roots are checked against
// papyrus's recorded roots and against the rollup devnet's state roots
// (a third implementation), so the proofs it writes are real ones.

type felt = starkproof.Felt

type hashFn func(a, b *felt) felt

type leaf struct {
	key   [32]byte
	value felt
}

// builtNode is a node as the spec writes it.
type builtNode struct {
	binary      bool
	left, right felt
	child, path felt
	length      int
}

type builtTrie struct {
	root  felt
	h     hashFn
	nodes map[felt]builtNode
	ht    int
}

func bit(k *[32]byte, i int) uint { return uint(k[31-i/8]>>(i%8)) & 1 }

func build(values map[felt]felt, ht int, h hashFn) *builtTrie {
	t := &builtTrie{h: h, nodes: map[felt]builtNode{}, ht: ht}
	var ls []leaf
	for k, v := range values {
		if !v.IsZero() {
			ls = append(ls, leaf{key: k.Bytes(), value: v})
		}
	}
	slices.SortFunc(ls, func(a, b leaf) int { return bytes.Compare(a.key[:], b.key[:]) })
	if len(ls) > 0 {
		t.root = t.sub(ls, ht)
	}
	return t
}

// sub hashes the subtree at height ht over its (sorted, non-empty) leaves.
func (t *builtTrie) sub(ls []leaf, ht int) felt {
	if ht == 0 {
		return ls[0].value
	}
	// Count the top bits all keys share.
	n := 0
	for n < ht && bit(&ls[0].key, ht-1-n) == bit(&ls[len(ls)-1].key, ht-1-n) {
		n++
	}
	if n == 0 {
		i := 0
		for i < len(ls) && bit(&ls[i].key, ht-1) == 0 {
			i++
		}
		l, r := t.sub(ls[:i], ht-1), t.sub(ls[i:], ht-1)
		hash := t.h(&l, &r)
		t.nodes[hash] = builtNode{binary: true, left: l, right: r}
		return hash
	}
	child := t.sub(ls, ht-n)
	var k big.Int
	k.SetBytes(ls[0].key[:])
	k.Rsh(&k, uint(ht-n))
	k.And(&k, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(n)), big.NewInt(1)))
	var path felt
	path.SetBigInt(&k)
	hash := t.h(&child, &path)
	var l felt
	l.SetUint64(uint64(n))
	hash.Add(&hash, &l)
	t.nodes[hash] = builtNode{child: child, path: path, length: n}
	return hash
}

// proof lists the nodes on the paths to keys, in the spec's JSON shape.
func (t *builtTrie) proof(keys ...felt) []map[string]any {
	seen := map[felt]bool{}
	var out []map[string]any
	for _, key := range keys {
		k := key.Bytes()
		cur, ht := t.root, t.ht
		for ht > 0 && !cur.IsZero() {
			n, ok := t.nodes[cur]
			if !ok {
				break
			}
			if !seen[cur] {
				seen[cur] = true
				out = append(out, map[string]any{"node_hash": hexOf(cur), "node": n.json()})
			}
			if n.binary {
				if bit(&k, ht-1) == 0 {
					cur = n.left
				} else {
					cur = n.right
				}
				ht--
				continue
			}
			var seg big.Int
			seg.SetBytes(k[:])
			seg.Rsh(&seg, uint(ht-n.length))
			seg.And(&seg, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(n.length)), big.NewInt(1)))
			var p big.Int
			n.path.BigInt(&p)
			if seg.Cmp(&p) != 0 {
				break
			}
			cur, ht = n.child, ht-n.length
		}
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

func (n builtNode) json() map[string]any {
	if n.binary {
		return map[string]any{"left": hexOf(n.left), "right": hexOf(n.right)}
	}
	return map[string]any{"path": hexOf(n.path), "length": n.length, "child": hexOf(n.child)}
}

func hexOf(f felt) string {
	var n big.Int
	f.BigInt(&n)
	return "0x" + n.Text(16)
}

func pedersen(a, b *felt) felt { return starkhash.Pedersen(a, b) }
func poseidon(a, b *felt) felt { return starkhash.Poseidon(a, b) }

// world is a rollup state: contracts with nonce, class and storage, and
// declared classes with their compiled class hash.
type world struct {
	contracts map[felt]*contractState
	classes   map[felt]felt
}

type contractState struct {
	nonce, class felt
	storage      map[felt]felt
}

// tries builds the state's tries: the contracts trie, each contract's
// storage trie, and the classes trie.
func (w *world) tries() (contracts *builtTrie, storage map[felt]*builtTrie, classes *builtTrie) {
	storage = map[felt]*builtTrie{}
	leaves := map[felt]felt{}
	for a, c := range w.contracts {
		st := build(c.storage, 251, pedersen)
		storage[a] = st
		leaves[a] = starkproof.ContractLeaf(c.class, st.root, c.nonce)
	}
	cl := map[felt]felt{}
	for h, compiled := range w.classes {
		cl[h] = starkproof.ClassLeaf(compiled)
	}
	return build(leaves, 251, pedersen), storage, build(cl, 251, poseidon)
}

// storageProof answers a getStorageProof request over the world, as a
// node would, for the block hash given.
func (w *world) storageProof(blockHash felt, req starkproof.Request) []byte {
	contracts, storage, classes := w.tries()
	var leaves []map[string]any
	for _, a := range req.Contracts {
		c, ok := w.contracts[a]
		if !ok {
			leaves = append(leaves, map[string]any{"nonce": "0x0", "class_hash": "0x0"})
			continue
		}
		leaves = append(leaves, map[string]any{"nonce": hexOf(c.nonce), "class_hash": hexOf(c.class), "storage_root": hexOf(storage[a].root)})
	}
	if leaves == nil {
		leaves = []map[string]any{}
	}
	sp := []any{}
	for _, ck := range req.Storage {
		st := storage[ck.Contract]
		if st == nil {
			st = build(nil, 251, pedersen)
		}
		sp = append(sp, st.proof(ck.Keys...))
	}
	out := map[string]any{
		"classes_proof":            classes.proof(req.Classes...),
		"contracts_proof":          map[string]any{"nodes": contracts.proof(req.Contracts...), "contract_leaves_data": leaves},
		"contracts_storage_proofs": sp,
		"global_roots":             map[string]any{"contracts_tree_root": hexOf(contracts.root), "classes_tree_root": hexOf(classes.root), "block_hash": hexOf(blockHash)},
	}
	raw, _ := json.Marshal(out)
	return raw
}
