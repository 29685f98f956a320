package starknetdevnet

import (
	"bytes"
	"maps"
	"slices"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// contract is a deployed contract's state.
type contract struct {
	classHash Felt
	nonce     uint64
	storage   map[[32]byte]Felt
	// leaf caches the contract's leaf in the contracts trie; valid unless
	// dirty.
	leaf  Felt
	dirty bool
}

// worldState is the current state: the pending block's changes are
// applied to it as they happen, so it is the state after the pending block.
type worldState struct {
	contracts map[[32]byte]*contract
	classes   map[[32]byte]Felt // Sierra class hash → compiled class hash
	legacy    map[[32]byte]bool // Cairo 0 classes; not in the class trie
}

func newWorldState() *worldState {
	return &worldState{
		contracts: map[[32]byte]*contract{},
		classes:   map[[32]byte]Felt{},
		legacy:    map[[32]byte]bool{},
	}
}

// stateDiff is a block's changes, in the order they happened.
type stateDiff struct {
	storage    map[[32]byte]map[[32]byte]Felt
	legacy     []Felt
	declared   [][2]Felt // class hash, compiled class hash
	deployed   [][2]Felt // address, class hash
	replaced   [][2]Felt // address, class hash
	nonces     map[[32]byte]uint64
	storageOrd [][32]byte // addresses in first-touch order
	nonceOrd   [][32]byte
}

func newStateDiff() *stateDiff {
	return &stateDiff{storage: map[[32]byte]map[[32]byte]Felt{}, nonces: map[[32]byte]uint64{}}
}

// length is the number of entries, as the block hash's concatenated counts
// want it.
func (d *stateDiff) length() int {
	n := len(d.legacy) + len(d.declared) + len(d.deployed) + len(d.replaced) + len(d.nonces)
	for _, m := range d.storage {
		n += len(m)
	}
	return n
}

// setStorage writes a storage slot and records it in the diff.
func (w *worldState) setStorage(d *stateDiff, addr, key, value Felt) {
	a, k := addr.Bytes(), key.Bytes()
	c := w.contracts[a]
	c.storage[k] = value
	c.dirty = true
	m, ok := d.storage[a]
	if !ok {
		m = map[[32]byte]Felt{}
		d.storage[a] = m
		d.storageOrd = append(d.storageOrd, a)
	}
	m[k] = value
}

// storageAt reads a slot; unset slots read as zero.
func (w *worldState) storageAt(addr, key Felt) Felt {
	c := w.contracts[addr.Bytes()]
	if c == nil {
		return Felt{}
	}
	return c.storage[key.Bytes()]
}

// bumpNonce increments an account's nonce and records it.
func (w *worldState) bumpNonce(d *stateDiff, addr Felt) {
	a := addr.Bytes()
	c := w.contracts[a]
	c.nonce++
	c.dirty = true
	if _, ok := d.nonces[a]; !ok {
		d.nonceOrd = append(d.nonceOrd, a)
	}
	d.nonces[a] = c.nonce
}

// deploy creates a contract.
func (w *worldState) deploy(d *stateDiff, addr, classHash Felt) {
	w.contracts[addr.Bytes()] = &contract{classHash: classHash, storage: map[[32]byte]Felt{}, dirty: true}
	d.deployed = append(d.deployed, [2]Felt{addr, classHash})
}

// replaceClass swaps a contract's class.
func (w *worldState) replaceClass(d *stateDiff, addr, classHash Felt) {
	c := w.contracts[addr.Bytes()]
	c.classHash = classHash
	c.dirty = true
	d.replaced = append(d.replaced, [2]Felt{addr, classHash})
}

// declare adds a Sierra class.
func (w *worldState) declare(d *stateDiff, classHash, compiled Felt) {
	w.classes[classHash.Bytes()] = compiled
	d.declared = append(d.declared, [2]Felt{classHash, compiled})
}

// declareLegacy adds a Cairo 0 class.
func (w *worldState) declareLegacy(d *stateDiff, classHash Felt) {
	w.legacy[classHash.Bytes()] = true
	d.legacy = append(d.legacy, classHash)
}

// Commitment of the state, as Starknet defines it.
//
// The contracts trie (Pedersen, height 251) maps an address to
// h(h(h(class_hash, storage_root), nonce), 0), where storage_root is the
// root of the contract's storage trie (Pedersen, height 251). The classes
// trie (Poseidon, height 251) maps a Sierra class hash to
// poseidon("CONTRACT_CLASS_LEAF_V0", compiled_class_hash). The state root
// is poseidon("STARKNET_STATE_V0", contracts_root, classes_root), or the
// contracts root alone while the classes trie is empty.
func (w *worldState) commitment() (contractsRoot, classesRoot, root Felt) {
	leaves := make([]trieLeaf, 0, len(w.contracts))
	for a, c := range w.contracts {
		if c.dirty {
			c.leaf = contractLeaf(c, storageRoot(c, nil))
			c.dirty = false
		}
		leaves = append(leaves, trieLeaf{key: a, value: c.leaf})
	}
	contractsRoot = patriciaRoot(leaves, stateTrieHeight, pedersen, nil)
	classesRoot = patriciaRoot(w.classLeaves(), stateTrieHeight, poseidon, nil)
	return contractsRoot, classesRoot, stateRoot(contractsRoot, classesRoot)
}

// classLeaves are the classes trie's leaves.
func (w *worldState) classLeaves() []trieLeaf {
	leaves := make([]trieLeaf, 0, len(w.classes))
	version := starknettx.ShortString("CONTRACT_CLASS_LEAF_V0")
	for h, compiled := range w.classes {
		leaves = append(leaves, trieLeaf{key: h, value: poseidon(&version, &compiled)})
	}
	return leaves
}

// stateRoot combines the two trie roots.
func stateRoot(contractsRoot, classesRoot Felt) Felt {
	if classesRoot.IsZero() {
		return contractsRoot
	}
	return poseidonMany(starknettx.ShortString("STARKNET_STATE_V0"), contractsRoot, classesRoot)
}

// storageRoot is the root of a contract's storage trie; its inner nodes
// are added to nodes unless nil.
func storageRoot(c *contract, nodes trieNodes) Felt {
	leaves := make([]trieLeaf, 0, len(c.storage))
	for k, v := range c.storage {
		leaves = append(leaves, trieLeaf{key: k, value: v})
	}
	return patriciaRoot(leaves, stateTrieHeight, pedersen, nodes)
}

// contractLeaf is a contract's leaf in the contracts trie.
func contractLeaf(c *contract, storageRoot Felt) Felt {
	nonce := starknettx.FeltU64(c.nonce)
	h := pedersen(&c.classHash, &storageRoot)
	h = pedersen(&h, &nonce)
	var zero Felt
	return pedersen(&h, &zero)
}

// sortedKeys returns a map's keys in byte order, for deterministic output.
func sortedKeys[V any](m map[[32]byte]V) [][32]byte {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	return keys
}
