// Package starkproof checks Starknet storage proofs
// (starknet_getStorageProof, spec 0.8) against a block's global state
// root, so starknet_getStorageAt, starknet_getNonce and
// starknet_getClassHashAt can be answered from proven state when the node
// serves proofs.
//
// The state is two binary Merkle-Patricia tries of height 251: contracts
// (Pedersen; a contract's leaf is h(h(h(class_hash, storage_root),
// nonce), 0), its storage a trie of the same kind) and classes (Poseidon;
// a leaf is poseidon("CONTRACT_CLASS_LEAF_V0", compiled_class_hash)). The
// global root is poseidon_many("STARKNET_STATE_V0", contracts_root,
// classes_root), or the contracts root while no class is declared. A
// binary node hashes to h(left, right); an edge node of length L and path
// P over child c hashes to h(c, P) + L.
//
// Errors are the verify package's: a node that contradicts the root is
// verify.ErrMismatch, an answer that does not decode verify.ErrMalformed.
package starkproof

import (
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/stark-curve/fp"

	"github.com/porticohq/portico/families/starknet/starkhash"
	"github.com/porticohq/portico/network/verify"
)

// Felt is an element of the Stark field.
type Felt = starkhash.Felt

// height is the state tries' height.
const height = 251

// Request is what a starknet_getStorageProof call asked for. Storage
// keys are proven only for contracts also named in Contracts: the
// contract's leaf carries the storage root the keys hang from.
type Request struct {
	Classes   []Felt
	Contracts []Felt
	Storage   []ContractKeys
}

// ContractKeys are storage keys of one contract.
type ContractKeys struct {
	Contract Felt
	Keys     []Felt
}

// Contract is a contract's proven leaf; Deployed is false when the
// contracts trie proves there is none at the address.
type Contract struct {
	Deployed    bool
	Nonce       Felt
	ClassHash   Felt
	StorageRoot Felt
}

// Proven is what a storage proof proved, keyed by the felts asked for.
type Proven struct {
	BlockHash     Felt
	ContractsRoot Felt
	ClassesRoot   Felt
	Contracts     map[Felt]Contract
	Storage       map[Felt]map[Felt]Felt
	// Classes holds each asked class hash's leaf in the classes trie:
	// poseidon("CONTRACT_CLASS_LEAF_V0", compiled_class_hash), zero when
	// the class is not declared.
	Classes map[Felt]Felt
}

// proofJSON is the node's answer.
type proofJSON struct {
	ClassesProof   []nodeEntry `json:"classes_proof"`
	ContractsProof struct {
		Nodes  []nodeEntry `json:"nodes"`
		Leaves []struct {
			Nonce       *feltJSON `json:"nonce"`
			ClassHash   *feltJSON `json:"class_hash"`
			StorageRoot *feltJSON `json:"storage_root"`
		} `json:"contract_leaves_data"`
	} `json:"contracts_proof"`
	StorageProofs [][]nodeEntry `json:"contracts_storage_proofs"`
	GlobalRoots   struct {
		ContractsRoot *feltJSON `json:"contracts_tree_root"`
		ClassesRoot   *feltJSON `json:"classes_tree_root"`
		BlockHash     *feltJSON `json:"block_hash"`
	} `json:"global_roots"`
}

type nodeEntry struct {
	Hash feltJSON `json:"node_hash"`
	Node struct {
		Left   *feltJSON `json:"left"`
		Right  *feltJSON `json:"right"`
		Path   *feltJSON `json:"path"`
		Length *uint64   `json:"length"`
		Child  *feltJSON `json:"child"`
	} `json:"node"`
}

// feltJSON is a felt as hex text, below the prime.
type feltJSON Felt

func (f *feltJSON) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseFelt(s)
	*f = feltJSON(v)
	return err
}

// ParseFelt reads a 0x-prefixed hex felt, refusing values not below the
// field's prime.
func ParseFelt(s string) (Felt, error) {
	if len(s) < 3 || s[:2] != "0x" || len(s) > 66 {
		return Felt{}, fmt.Errorf("felt %q: want 0x and 1 to 64 hex digits", s)
	}
	n, ok := new(big.Int).SetString(s[2:], 16)
	if !ok {
		return Felt{}, fmt.Errorf("felt %q: bad hex", s)
	}
	if n.Cmp(fp.Modulus()) >= 0 {
		return Felt{}, fmt.Errorf("felt %q: not below the prime", s)
	}
	var f Felt
	f.SetBigInt(n)
	return f, nil
}

func (f *feltJSON) felt() Felt { return Felt(*f) }

// node is a trie node whose hash was checked against its contents.
type node struct {
	binary      bool
	left, right Felt
	child, path Felt
	length      int
}

// hashFn is the trie's hash: Pedersen or Poseidon.
type hashFn func(a, b *Felt) Felt

// nodeMap reads a proof's nodes and checks that each hashes to the hash
// it is listed under.
func nodeMap(what string, entries []nodeEntry, h hashFn) (map[Felt]node, error) {
	m := make(map[Felt]node, len(entries))
	for i, e := range entries {
		w := fmt.Sprintf("%s[%d]", what, i)
		n := e.Node
		var got Felt
		var nd node
		switch {
		case n.Left != nil && n.Right != nil && n.Path == nil && n.Child == nil && n.Length == nil:
			nd = node{binary: true, left: n.Left.felt(), right: n.Right.felt()}
			got = h(&nd.left, &nd.right)
		case n.Path != nil && n.Child != nil && n.Length != nil && n.Left == nil && n.Right == nil:
			if *n.Length < 1 || *n.Length > height {
				return nil, &verify.MismatchError{What: w + ".length", Want: "1 to 251", Got: fmt.Sprint(*n.Length)}
			}
			nd = node{child: n.Child.felt(), path: n.Path.felt(), length: int(*n.Length)}
			var p big.Int
			nd.path.BigInt(&p)
			if p.BitLen() > nd.length {
				return nil, &verify.MismatchError{What: w + ".path", Want: fmt.Sprintf("at most %d bits", nd.length), Got: fmt.Sprintf("%d bits", p.BitLen())}
			}
			got = h(&nd.child, &nd.path)
			var l Felt
			l.SetUint64(uint64(nd.length))
			got.Add(&got, &l)
		default:
			return nil, &verify.MalformedError{What: w + ".node", Err: fmt.Errorf("neither a binary node (left, right) nor an edge node (path, length, child)")}
		}
		want := e.Hash.felt()
		if !got.Equal(&want) {
			return nil, &verify.MismatchError{What: w + ".node_hash", Want: hexFelt(&got), Got: hexFelt(&want)}
		}
		m[want] = nd
	}
	return m, nil
}

// walk follows key from root through the proven nodes and returns the
// leaf's value: zero when the trie is empty or an edge leaves the key's
// path (the proof of absence the spec describes).
func walk(what string, root, key Felt, nodes map[Felt]node) (Felt, error) {
	var k big.Int
	key.BigInt(&k)
	if k.BitLen() > height {
		return Felt{}, &verify.MalformedError{What: what, Err: fmt.Errorf("key %s is over 251 bits", hexFelt(&key))}
	}
	cur, ht := root, height
	for ht > 0 {
		if cur.IsZero() {
			return Felt{}, nil
		}
		n, ok := nodes[cur]
		if !ok {
			return Felt{}, &verify.MismatchError{What: what, Want: "a node for hash " + hexFelt(&cur), Got: "(missing from the proof)"}
		}
		if n.binary {
			if k.Bit(ht-1) == 0 {
				cur = n.left
			} else {
				cur = n.right
			}
			ht--
			continue
		}
		if n.length > ht {
			return Felt{}, &verify.MismatchError{What: what, Want: fmt.Sprintf("an edge of at most %d", ht), Got: fmt.Sprint(n.length)}
		}
		// The key's next n.length bits, from bit ht-1 down.
		var seg big.Int
		seg.Rsh(&k, uint(ht-n.length))
		seg.And(&seg, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(n.length)), big.NewInt(1)))
		var p big.Int
		n.path.BigInt(&p)
		if seg.Cmp(&p) != 0 {
			return Felt{}, nil // the edge leads elsewhere: nothing at key
		}
		cur, ht = n.child, ht-n.length
	}
	return cur, nil
}

func hexFelt(f *Felt) string {
	var n big.Int
	f.BigInt(&n)
	return "0x" + n.Text(16)
}

func pedersen(a, b *Felt) Felt { return starkhash.Pedersen(a, b) }
func poseidon(a, b *Felt) Felt { return starkhash.Poseidon(a, b) }

// StateRoot is the global state root of the two tries' roots.
func StateRoot(contractsRoot, classesRoot Felt) Felt {
	if classesRoot.IsZero() {
		return contractsRoot
	}
	return starkhash.PoseidonMany(starkhash.ShortString("STARKNET_STATE_V0"), contractsRoot, classesRoot)
}

// ContractLeaf is a contract's leaf in the contracts trie.
func ContractLeaf(classHash, storageRoot, nonce Felt) Felt {
	h := pedersen(&classHash, &storageRoot)
	h = pedersen(&h, &nonce)
	var zero Felt
	return pedersen(&h, &zero)
}
