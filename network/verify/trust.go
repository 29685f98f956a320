package verify

import (
	"sort"
	"sync"

	"github.com/ethereum/go-ethereum/common"
)

// DefaultQuorum is the number of nodes that must report the same hash
// at a height for Portico to trust it, for a network of n nodes: a
// majority, and at least 2 where there are 2 or more (one node alone is
// trusted only when it is the only node: there is no one to ask).
func DefaultQuorum(n int) int {
	if n <= 1 {
		return n
	}
	return max(n/2+1, 2)
}

// Agree returns the hash that at least quorum of the reports (node name
// to the hash it reports for one height) name, and more reports name than
// any other hash. With a quorum of a majority at most one hash can; with
// less, a tie trusts neither.
func Agree(reports map[string]common.Hash, quorum int) (common.Hash, bool) {
	if quorum < 1 {
		return common.Hash{}, false
	}
	count := make(map[common.Hash]int, len(reports))
	for _, h := range reports {
		if h != (common.Hash{}) {
			count[h]++
		}
	}
	var best common.Hash
	bestN, second := 0, 0
	for h, n := range count {
		switch {
		case n > bestN:
			best, bestN, second = h, n, bestN
		case n > second:
			second = n
		}
	}
	if bestN < quorum || bestN == second {
		return common.Hash{}, false
	}
	return best, true
}

// Trust is the set of block hashes Portico trusts on one network, and
// why: a checkpoint from config, a quorum of nodes at a height, or a
// parent link from a trusted header. Trust goes backward only: a trusted
// header's parentHash commits to its parent, so the parent's hash is
// trusted; a header that merely names a trusted parent is not, since
// anyone can build a child of a real block. It keeps the newest Limit
// hashes by number (checkpoints always). Safe for concurrent use.
type Trust struct {
	mu          sync.Mutex
	limit       int
	byHash      map[common.Hash]uint64 // hash -> block number
	checkpoints map[common.Hash]uint64
}

// NewTrust returns an empty trust set keeping at most limit hashes; 0
// means 8192, a little over a day of Ethereum's 12-second blocks.
func NewTrust(limit int) *Trust {
	if limit <= 0 {
		limit = 8192
	}
	return &Trust{limit: limit, byHash: make(map[common.Hash]uint64), checkpoints: make(map[common.Hash]uint64)}
}

// Checkpoint trusts a hash given by the operator (a finalized block
// from a source they trust), for good.
func (t *Trust) Checkpoint(hash common.Hash, number uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.checkpoints[hash] = number
}

// Quorum trusts the hash a quorum of nodes report for height number,
// and returns it.
func (t *Trust) Quorum(number uint64, reports map[string]common.Hash, quorum int) (common.Hash, bool) {
	h, ok := Agree(reports, quorum)
	if ok {
		t.add(h, number)
	}
	return h, ok
}

// Trusted reports whether a hash is trusted, and its block number.
func (t *Trust) Trusted(hash common.Hash) (uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.checkpoints[hash]; ok {
		return n, true
	}
	n, ok := t.byHash[hash]
	return n, ok
}

// Linked is a header whose hash was checked against its fields: its
// hash, its number and the parent hash it commits to.
type Linked interface {
	Hash() common.Hash
	Number() uint64
	ParentHash() common.Hash
}

// Link extends trust from a verified header: when h's hash is trusted,
// its parent's hash becomes trusted too, and Link reports true. Walking
// parent by parent from a trusted head trusts the chain below it.
func (t *Trust) Link(h Linked) bool {
	return t.LinkParent(h.Hash(), h.Number(), h.ParentHash())
}

// LinkParent is Link for a header of any family whose hash was checked
// against its fields: its hash, number and the parent hash it commits to.
func (t *Trust) LinkParent(hash common.Hash, number uint64, parent common.Hash) bool {
	n, ok := t.Trusted(hash)
	if !ok || n != number {
		return false
	}
	if n > 0 {
		t.add(parent, n-1)
	}
	return true
}

func (t *Trust) add(hash common.Hash, number uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byHash[hash] = number
	if len(t.byHash) <= t.limit {
		return
	}
	// Drop the oldest tenth at once, so eviction is rare.
	type entry struct {
		h common.Hash
		n uint64
	}
	all := make([]entry, 0, len(t.byHash))
	for h, n := range t.byHash {
		all = append(all, entry{h, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n < all[j].n })
	for _, e := range all[:len(all)-t.limit*9/10] {
		delete(t.byHash, e.h)
	}
}
