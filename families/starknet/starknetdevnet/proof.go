package starknetdevnet

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// starknet_getStorageProof, spec 0.8.1: proofs in a recent sealed block's
// tries. The head's tries are built with their inner nodes from the
// stored state (the latest sealed block's, not the pending one) on the
// first request; from then on each seal builds its block's tries from the
// state it seals, and the last proofWindow blocks' are kept, as a real
// node keeps proofs for recent blocks: a client (a gateway) that names
// the block before the one just sealed is still answered.

// Bounds of a storage proof request: the answer grows with the keys, a
// path at most 251 nodes each.
const (
	maxProofItems = 64   // class hashes, contract addresses, storage-key entries, each
	maxProofKeys  = 1024 // storage keys in all
	proofWindow   = 8    // sealed blocks whose tries are kept
)

// ErrStorageProofNotSupported is STORAGE_PROOF_NOT_SUPPORTED: the devnet
// proves the last proofWindow sealed blocks, from the first one asked.
var ErrStorageProofNotSupported = &SpecError{Code: 42, Message: "the node doesn't support storage proofs for blocks that are too far in the past"}

// stateTries are a sealed block's state tries with their inner nodes.
type stateTries struct {
	number                     uint64
	block                      Felt // the block's hash
	contractsRoot, classesRoot Felt
	contracts                  map[[32]byte]leafData
	storageRoots               map[[32]byte]Felt
	contractNodes, classNodes  trieNodes
	storageNodes               trieNodes // every contract's storage trie
}

// leafData is what a contract's leaf is made of besides its storage root.
type leafData struct {
	nonce     uint64
	classHash Felt
}

// buildStateTries builds the tries of a state with their nodes; they keep
// nothing of w, which goes on changing.
func buildStateTries(w *worldState, number uint64, block Felt) *stateTries {
	t := &stateTries{
		number: number, block: block, contracts: make(map[[32]byte]leafData, len(w.contracts)),
		storageRoots:  make(map[[32]byte]Felt, len(w.contracts)),
		contractNodes: trieNodes{}, classNodes: trieNodes{}, storageNodes: trieNodes{},
	}
	leaves := make([]trieLeaf, 0, len(w.contracts))
	for a, c := range w.contracts {
		root := storageRoot(c, t.storageNodes)
		t.storageRoots[a] = root
		t.contracts[a] = leafData{nonce: c.nonce, classHash: c.classHash}
		leaves = append(leaves, trieLeaf{key: a, value: contractLeaf(c, root)})
	}
	t.contractsRoot = patriciaRoot(leaves, stateTrieHeight, pedersen, t.contractNodes)
	t.classesRoot = patriciaRoot(w.classLeaves(), stateTrieHeight, poseidon, t.classNodes)
	return t
}

// provenState returns the tries of sealed block number, kept or, for the
// head, built now from the stored state; nil when they are not kept. The
// caller holds mu for reading, so the head does not move meanwhile.
func (d *Devnet) provenState(ctx context.Context, number uint64) (*stateTries, error) {
	d.proofMu.Lock()
	defer d.proofMu.Unlock()
	d.proofsAsked = true
	for _, t := range d.proofs {
		if t.number == number && (number != d.head.number || t.block.Equal(&d.head.hash)) {
			return t, nil
		}
	}
	if number != d.head.number {
		return nil, nil
	}
	w, err := loadState(ctx, d.db)
	if err != nil {
		return nil, err
	}
	t := buildStateTries(w, d.head.number, d.head.hash)
	if root := stateRoot(t.contractsRoot, t.classesRoot); !root.Equal(&d.head.newRoot) {
		return nil, fmt.Errorf("starknetdevnet: the stored state's root %s is not block %d's %s", starknettx.Hex(&root), d.head.number, starknettx.Hex(&d.head.newRoot))
	}
	d.keepTries(t)
	return t, nil
}

// keepTries adds a block's tries to the window; the caller holds proofMu.
func (d *Devnet) keepTries(t *stateTries) {
	// A reorg can seal a number again: its old tries go.
	d.proofs = slices.DeleteFunc(d.proofs, func(old *stateTries) bool { return old.number >= t.number })
	d.proofs = append(d.proofs, t)
	if len(d.proofs) > proofWindow {
		d.proofs = slices.Delete(d.proofs, 0, len(d.proofs)-proofWindow)
	}
}

// sealedTries builds the tries of the block just sealed from the world
// (which is its state until the next change), once proofs were asked for;
// the caller holds mu for writing.
func (d *Devnet) sealedTries(b *blockRow) {
	d.proofMu.Lock()
	defer d.proofMu.Unlock()
	if !d.proofsAsked {
		return
	}
	d.keepTries(buildStateTries(d.world, b.number, b.hash))
}

// storageKeys are one contracts_storage_keys entry.
type storageKeys struct {
	contract Felt
	keys     [][32]byte
}

// decodeTrieKeys reads an optional array of at most maxProofItems felts
// below 2^251 (class hashes, contract addresses).
func decodeTrieKeys(v jsontext.Value, pos int, field string) ([][32]byte, error) {
	if len(v) == 0 || v.Kind() == 'n' {
		return nil, nil
	}
	items, err := rpcparams.Array(v, pos, field)
	if err != nil {
		return nil, err
	}
	if len(items) > maxProofItems {
		return nil, rpcparams.Errorf(pos, field, "has %d items; the devnet proves at most %d", len(items), maxProofItems)
	}
	out := make([][32]byte, len(items))
	for i, it := range items {
		k, err := decodeStorageKey(it, pos, rpcparams.Index(field, i))
		if err != nil {
			return nil, err
		}
		out[i] = k.Bytes()
	}
	return out, nil
}

// decodeContractsStorageKeys reads contracts_storage_keys: at most
// maxProofItems entries and maxProofKeys keys in all.
func decodeContractsStorageKeys(v jsontext.Value, pos int) ([]storageKeys, error) {
	const field = "contracts_storage_keys"
	if len(v) == 0 || v.Kind() == 'n' {
		return nil, nil
	}
	items, err := rpcparams.Array(v, pos, field)
	if err != nil {
		return nil, err
	}
	if len(items) > maxProofItems {
		return nil, rpcparams.Errorf(pos, field, "has %d items; the devnet proves at most %d", len(items), maxProofItems)
	}
	out := make([]storageKeys, len(items))
	total := 0
	for i, it := range items {
		at := rpcparams.Index(field, i)
		obj, err := rpcparams.Object(it, pos, at, "contract_address", "storage_keys")
		if err != nil {
			return nil, err
		}
		for _, name := range []string{"contract_address", "storage_keys"} {
			if _, ok := obj[name]; !ok {
				return nil, rpcparams.Errorf(pos, at+"."+name, "missing; it is required")
			}
		}
		if out[i].contract, err = decodeFelt(obj["contract_address"], pos, at+".contract_address"); err != nil {
			return nil, err
		}
		keys, err := rpcparams.Array(obj["storage_keys"], pos, at+".storage_keys")
		if err != nil {
			return nil, err
		}
		if total += len(keys); total > maxProofKeys {
			return nil, rpcparams.Errorf(pos, field, "has more than %d storage keys in all; the devnet proves at most %d", maxProofKeys, maxProofKeys)
		}
		out[i].keys = make([][32]byte, len(keys))
		for j, kv := range keys {
			k, err := decodeStorageKey(kv, pos, rpcparams.Index(at+".storage_keys", j))
			if err != nil {
				return nil, err
			}
			out[i].keys[j] = k.Bytes()
		}
	}
	return out, nil
}

// provable returns the tries of the sealed block a block_id names, if
// they are kept.
func (d *Devnet) provable(ctx context.Context, ref *blockRef, pos int) (*stateTries, error) {
	if ref.tag == "pending" || ref.tag == "pre_confirmed" {
		return nil, rpcparams.Errorf(pos, "block_id", "a storage proof is of a sealed block, not %s; the devnet proves the latest (%d)", ref.tag, d.head.number)
	}
	n, err := d.resolve(ctx, ref)
	switch {
	case err != nil:
		return nil, err
	case n < 0 || uint64(n) > d.head.number:
		return nil, ErrBlockNotFound
	}
	t, err := d.provenState(ctx, uint64(n))
	if err == nil && t == nil {
		err = ErrStorageProofNotSupported
	}
	return t, err
}

func (d *Devnet) rpcGetStorageProof(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, pos, err := splitParamsN(params, 1, "block_id", "class_hashes", "contract_addresses", "contracts_storage_keys")
	if err != nil {
		return nil, err
	}
	ref, err := decodeBlockID(p["block_id"], pos(0), "block_id")
	if err != nil {
		return nil, err
	}
	classes, err := decodeTrieKeys(p["class_hashes"], pos(1), "class_hashes")
	if err != nil {
		return nil, err
	}
	contracts, err := decodeTrieKeys(p["contract_addresses"], pos(2), "contract_addresses")
	if err != nil {
		return nil, err
	}
	storage, err := decodeContractsStorageKeys(p["contracts_storage_keys"], pos(3))
	if err != nil {
		return nil, err
	}
	t, err := d.provable(ctx, ref, pos(0))
	if err != nil {
		return nil, err
	}
	return t.appendProof(nil, classes, contracts, storage)
}

// appendProof renders the answer to a storage proof request.
func (t *stateTries) appendProof(out []byte, classes, contracts [][32]byte, storage []storageKeys) ([]byte, error) {
	var err error
	out = append(out, `{"classes_proof":[`...)
	seen := map[Felt]bool{}
	for i := range classes {
		if out, err = t.classNodes.prove(out, t.classesRoot, &classes[i], stateTrieHeight, seen); err != nil {
			return nil, err
		}
	}
	out = append(out, `],"contracts_proof":{"nodes":[`...)
	clear(seen)
	for i := range contracts {
		if out, err = t.contractNodes.prove(out, t.contractsRoot, &contracts[i], stateTrieHeight, seen); err != nil {
			return nil, err
		}
	}
	out = append(out, `],"contract_leaves_data":[`...)
	for i, a := range contracts {
		if i > 0 {
			out = append(out, ',')
		}
		var nonce, class, root Felt // zeros: no contract at the address
		if c, ok := t.contracts[a]; ok {
			nonce, class, root = starknettx.FeltU64(c.nonce), c.classHash, t.storageRoots[a]
		}
		out = append(out, `{"nonce":`...)
		out = appendFeltJSON(out, &nonce)
		out = append(out, `,"class_hash":`...)
		out = appendFeltJSON(out, &class)
		out = append(out, `,"storage_root":`...)
		out = appendFeltJSON(out, &root)
		out = append(out, '}')
	}
	out = append(out, `]},"contracts_storage_proofs":[`...)
	for i, sk := range storage {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '[')
		clear(seen)
		root := t.storageRoots[sk.contract.Bytes()] // zero, an empty trie, for no contract
		for j := range sk.keys {
			if out, err = t.storageNodes.prove(out, root, &sk.keys[j], stateTrieHeight, seen); err != nil {
				return nil, err
			}
		}
		out = append(out, ']')
	}
	out = append(out, `],"global_roots":{"contracts_tree_root":`...)
	out = appendFeltJSON(out, &t.contractsRoot)
	out = append(out, `,"classes_tree_root":`...)
	out = appendFeltJSON(out, &t.classesRoot)
	out = append(out, `,"block_hash":`...)
	out = appendFeltJSON(out, &t.block)
	return append(out, "}}"...), nil
}
