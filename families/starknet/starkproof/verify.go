package starkproof

import (
	"encoding/json"
	"fmt"

	"github.com/porticohq/portico/families/starknet/starkhash"
	"github.com/porticohq/portico/network/verify"
)

// Verify checks a node's starknet_getStorageProof answer against the
// trusted block's hash and global state root (its header's new_root):
// the two tries' roots must combine to the state root, every node must
// hash to what it is listed under, every asked contract's leaf must be
// the one its leaf data makes (or proven absent), and every asked key's
// path must lead from the contract's storage root to its value (or prove
// it zero). It returns what was proven.
func Verify(raw []byte, blockHash, stateRoot Felt, req Request) (*Proven, error) {
	var p proofJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &verify.MalformedError{What: "storage proof", Err: err}
	}
	g := p.GlobalRoots
	if g.ContractsRoot == nil || g.ClassesRoot == nil || g.BlockHash == nil {
		return nil, &verify.MalformedError{What: "storage proof.global_roots", Err: fmt.Errorf("a root or the block hash is missing")}
	}
	out := &Proven{
		BlockHash: g.BlockHash.felt(), ContractsRoot: g.ContractsRoot.felt(), ClassesRoot: g.ClassesRoot.felt(),
		Contracts: map[Felt]Contract{}, Storage: map[Felt]map[Felt]Felt{}, Classes: map[Felt]Felt{},
	}
	if !out.BlockHash.Equal(&blockHash) {
		return nil, &verify.MismatchError{What: "global_roots.block_hash", Want: hexFelt(&blockHash), Got: hexFelt(&out.BlockHash)}
	}
	if got := StateRoot(out.ContractsRoot, out.ClassesRoot); !got.Equal(&stateRoot) {
		return nil, &verify.MismatchError{What: "global_roots", Want: "state root " + hexFelt(&stateRoot), Got: "state root " + hexFelt(&got)}
	}

	classes, err := nodeMap("classes_proof", p.ClassesProof, poseidon)
	if err != nil {
		return nil, err
	}
	for _, c := range req.Classes {
		leaf, err := walk("classes_proof "+hexFelt(&c), out.ClassesRoot, c, classes)
		if err != nil {
			return nil, err
		}
		out.Classes[c] = leaf
	}

	contracts, err := nodeMap("contracts_proof.nodes", p.ContractsProof.Nodes, pedersen)
	if err != nil {
		return nil, err
	}
	if len(p.ContractsProof.Leaves) != len(req.Contracts) {
		return nil, &verify.MismatchError{What: "contracts_proof.contract_leaves_data", Want: fmt.Sprintf("%d leaves", len(req.Contracts)), Got: fmt.Sprint(len(p.ContractsProof.Leaves))}
	}
	for i, addr := range req.Contracts {
		what := fmt.Sprintf("contracts_proof.contract_leaves_data[%d]", i)
		leaf, err := walk("contracts_proof "+hexFelt(&addr), out.ContractsRoot, addr, contracts)
		if err != nil {
			return nil, err
		}
		d := p.ContractsProof.Leaves[i]
		if d.Nonce == nil || d.ClassHash == nil {
			return nil, &verify.MalformedError{What: what, Err: fmt.Errorf("nonce or class_hash missing")}
		}
		c := Contract{Nonce: d.Nonce.felt(), ClassHash: d.ClassHash.felt()}
		if leaf.IsZero() {
			// Not deployed: the leaf data can only be zeros.
			if !c.Nonce.IsZero() || !c.ClassHash.IsZero() || (d.StorageRoot != nil && !(*Felt)(d.StorageRoot).IsZero()) {
				return nil, &verify.MismatchError{What: what, Want: "zeros (no contract at the address)", Got: "class " + hexFelt(&c.ClassHash)}
			}
			out.Contracts[addr] = c
			continue
		}
		if d.StorageRoot == nil {
			return nil, &verify.UnverifiableError{What: what, Reason: "storage_root is missing, so the leaf cannot be rebuilt"}
		}
		c.StorageRoot, c.Deployed = d.StorageRoot.felt(), true
		if want := ContractLeaf(c.ClassHash, c.StorageRoot, c.Nonce); !want.Equal(&leaf) {
			return nil, &verify.MismatchError{What: what, Want: "leaf " + hexFelt(&leaf), Got: "leaf " + hexFelt(&want)}
		}
		out.Contracts[addr] = c
	}

	if len(p.StorageProofs) != len(req.Storage) {
		return nil, &verify.MismatchError{What: "contracts_storage_proofs", Want: fmt.Sprintf("%d proofs", len(req.Storage)), Got: fmt.Sprint(len(p.StorageProofs))}
	}
	for i, ck := range req.Storage {
		what := fmt.Sprintf("contracts_storage_proofs[%d]", i)
		c, ok := out.Contracts[ck.Contract]
		if !ok {
			return nil, &verify.UnverifiableError{What: what, Reason: "the contract's leaf was not asked for, so its storage root is unknown"}
		}
		nodes, err := nodeMap(what, p.StorageProofs[i], pedersen)
		if err != nil {
			return nil, err
		}
		vals := out.Storage[ck.Contract]
		if vals == nil {
			vals = map[Felt]Felt{}
			out.Storage[ck.Contract] = vals
		}
		for _, k := range ck.Keys {
			v, err := walk(what+" "+hexFelt(&k), c.StorageRoot, k, nodes)
			if err != nil {
				return nil, err
			}
			vals[k] = v
		}
	}
	return out, nil
}

// StorageAt is the answer to starknet_getStorageAt for a proven key (a
// felt as hex), and false when it was not proven.
func (p *Proven) StorageAt(contract, key Felt) ([]byte, bool) {
	v, ok := p.Storage[contract][key]
	if !ok {
		return nil, false
	}
	return quote(hexFelt(&v)), true
}

// Nonce is the answer to starknet_getNonce for a proven, deployed
// contract; false when not proven or not deployed (the node's answer is
// then CONTRACT_NOT_FOUND, error 20).
func (p *Proven) Nonce(contract Felt) ([]byte, bool) {
	c, ok := p.Contracts[contract]
	if !ok || !c.Deployed {
		return nil, false
	}
	return quote(hexFelt(&c.Nonce)), true
}

// ClassHashAt is the answer to starknet_getClassHashAt, as Nonce.
func (p *Proven) ClassHashAt(contract Felt) ([]byte, bool) {
	c, ok := p.Contracts[contract]
	if !ok || !c.Deployed {
		return nil, false
	}
	return quote(hexFelt(&c.ClassHash)), true
}

// ClassLeaf is the classes trie's leaf for a compiled class hash, to
// compare with Proven.Classes.
func ClassLeaf(compiledClassHash Felt) Felt {
	v := starkhash.ShortString("CONTRACT_CLASS_LEAF_V0")
	return starkhash.Poseidon(&v, &compiledClassHash)
}

func quote(s string) []byte { return []byte(`"` + s + `"`) }
