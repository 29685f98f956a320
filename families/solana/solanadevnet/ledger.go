package solanadevnet

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"github.com/gagliardetto/solana-go"
)

// Commitment levels, lowest first.
type commitment int

const (
	processed commitment = iota
	confirmed
	finalized
)

func (c commitment) String() string {
	return [...]string{"processed", "confirmed", "finalized"}[c]
}

// account is an account's state. Accounts with zero lamports do not exist.
type account struct {
	Lamports   uint64           `json:"l"`
	Owner      solana.PublicKey `json:"o"`
	Data       []byte           `json:"d,omitempty"`
	Executable bool             `json:"x,omitempty"`
}

// reward is a block-level reward (or a fee share) as getBlock shows it.
type reward struct {
	Pubkey      solana.PublicKey `json:"pubkey"`
	Lamports    int64            `json:"lamports"`
	PostBalance uint64           `json:"postBalance"`
	Type        string           `json:"type"`
	Commission  *uint8           `json:"commission,omitempty"`
}

// innerIx is one instruction a program invoked, in the indexes of the
// transaction's full account list.
type innerIx struct {
	ProgramIDIndex uint16   `json:"p"`
	Accounts       []uint16 `json:"a"`
	Data           []byte   `json:"d"`
	StackHeight    int      `json:"h"`
}

// innerSet holds the inner instructions of one top-level instruction.
type innerSet struct {
	Index uint16    `json:"i"`
	Ixs   []innerIx `json:"x"`
}

// txMeta is the status a real node records for a transaction.
type txMeta struct {
	Err     *txError           `json:"err,omitempty"`
	Fee     uint64             `json:"fee"`
	Pre     []uint64           `json:"pre"`
	Post    []uint64           `json:"post"`
	Logs    []string           `json:"logs"`
	Inner   []innerSet         `json:"inner,omitempty"`
	LoadedW []solana.PublicKey `json:"lw,omitempty"`
	LoadedR []solana.PublicKey `json:"lr,omitempty"`
	CU      uint64             `json:"cu"`
}

// txRecord is a transaction as stored in a block: its signed wire bytes and
// its status.
type txRecord struct {
	Raw  []byte `json:"raw"`
	Meta txMeta `json:"meta"`

	tx   *solana.Transaction // decoded Raw; not persisted, rebuilt on load
	user bool                // sent by a client: requeued if its block is abandoned
}

func (r *txRecord) sig() solana.Signature { return r.tx.Signatures[0] }

// block is a produced block. It never changes once built.
type block struct {
	Slot       uint64           `json:"slot"`
	ParentSlot uint64           `json:"parent"`
	Height     uint64           `json:"height"`
	Hash       solana.Hash      `json:"hash"`
	PrevHash   solana.Hash      `json:"prev"`
	Time       int64            `json:"time"`
	Leader     solana.PublicKey `json:"leader"`
	Txs        []*txRecord      `json:"txs"`
	Rewards    []reward         `json:"rewards"`
	// Partitions is numRewardPartitions; set on an epoch's first block.
	Partitions *uint64 `json:"partitions,omitempty"`
	// Staking are the staking rewards owed, paid by the next block (the
	// devnet's one reward partition).
	Staking []reward `json:"staking,omitempty"`
	// TxCount is the number of transactions from genesis to this block.
	TxCount uint64 `json:"txCount"`

	// delta holds the post-state of every account this block changed. It
	// is kept while the block is not rooted; rooting merges it into the
	// base state.
	delta map[solana.PublicKey]*account
}

// sigLoc says where a transaction is: its block's slot and its index.
type sigLoc struct {
	Slot  uint64
	Index int
}

// ledger is the chain: a rooted base state, the unrooted blocks on top of
// it (one fork: the devnet only ever abandons its newest block), and the
// indexes RPC needs. It is guarded by Devnet.mu.
type ledger struct {
	base   map[solana.PublicKey]*account // state as of root
	blocks map[uint64]*block             // every kept block on the chain
	root   *block                        // newest finalized block
	chain  []*block                      // unrooted blocks, oldest first
	conf   *block                        // newest confirmed block
	slot   uint64                        // newest slot (produced or skipped)
	first  uint64                        // lowest kept block

	genesisHash solana.Hash
	sigs        map[solana.Signature]sigLoc
	byAddr      map[solana.PublicKey][]sigLoc
	hashes      map[solana.Hash]uint64 // blockhash → block height, for blocks on the chain
}

func newLedger() *ledger {
	return &ledger{
		base:   map[solana.PublicKey]*account{},
		blocks: map[uint64]*block{},
		sigs:   map[solana.Signature]sigLoc{},
		byAddr: map[solana.PublicKey][]sigLoc{},
		hashes: map[solana.Hash]uint64{},
	}
}

// tip returns the newest block (processed).
func (l *ledger) tip() *block {
	if n := len(l.chain); n > 0 {
		return l.chain[n-1]
	}
	return l.root
}

// at returns the newest block at a commitment level.
func (l *ledger) at(c commitment) *block {
	switch c {
	case finalized:
		return l.root
	case confirmed:
		return l.conf
	}
	return l.tip()
}

// accountAt returns an account's state as of the newest block at level c,
// or nil when it does not exist.
func (l *ledger) accountAt(key solana.PublicKey, c commitment) *account {
	top := l.at(c)
	for i := len(l.chain) - 1; i >= 0; i-- {
		b := l.chain[i]
		if b.Slot > top.Slot {
			continue
		}
		if a, ok := b.delta[key]; ok {
			return live(a)
		}
	}
	return live(l.base[key])
}

func live(a *account) *account {
	if a == nil || a.Lamports == 0 {
		return nil
	}
	return a
}

// blockAt returns the block at slot if it is visible at level c.
func (l *ledger) blockAt(slot uint64, c commitment) *block {
	b := l.blocks[slot]
	if b == nil || b.Slot > l.at(c).Slot {
		return nil
	}
	return b
}

// blockhashHeight returns the height of the block with this hash when it is
// still a valid recent blockhash (within 150 blocks of the tip).
func (l *ledger) blockhashValid(h solana.Hash) (uint64, bool) {
	height, ok := l.hashes[h]
	if !ok || l.tip().Height-height > maxProcessingAge {
		return 0, false
	}
	return height, true
}

// maxProcessingAge is how many blocks a blockhash stays valid for.
const maxProcessingAge = 150

// addBlock puts a newly built block on the tip of the chain and indexes it.
func (l *ledger) addBlock(b *block) {
	l.chain = append(l.chain, b)
	l.blocks[b.Slot] = b
	l.hashes[b.Hash] = b.Height
	l.index(b)
}

func (l *ledger) index(b *block) {
	for i, r := range b.Txs {
		loc := sigLoc{Slot: b.Slot, Index: i}
		for _, s := range r.tx.Signatures {
			l.sigs[s] = loc
		}
		for _, k := range txKeys(r) {
			l.byAddr[k] = append(l.byAddr[k], loc)
		}
	}
}

// unindex removes a block's transactions from the indexes; they are the
// newest entries (drop) or the oldest (cleanup).
func (l *ledger) unindex(b *block) {
	for _, r := range b.Txs {
		for _, s := range r.tx.Signatures {
			if loc, ok := l.sigs[s]; ok && loc.Slot == b.Slot {
				delete(l.sigs, s)
			}
		}
		for _, k := range txKeys(r) {
			locs := l.byAddr[k]
			locs = slices.DeleteFunc(locs, func(x sigLoc) bool { return x.Slot == b.Slot })
			if len(locs) == 0 {
				delete(l.byAddr, k)
			} else {
				l.byAddr[k] = locs
			}
		}
	}
}

// txKeys lists every account a stored transaction references, loaded ones
// included.
func txKeys(r *txRecord) []solana.PublicKey {
	keys := make([]solana.PublicKey, 0, len(r.tx.Message.AccountKeys)+len(r.Meta.LoadedW)+len(r.Meta.LoadedR))
	keys = append(keys, r.tx.Message.AccountKeys...)
	keys = append(keys, r.Meta.LoadedW...)
	keys = append(keys, r.Meta.LoadedR...)
	return keys
}

// dropTip abandons the newest block, which must not be confirmed; its slot
// becomes skipped. It returns the dropped block.
func (l *ledger) dropTip() *block {
	n := len(l.chain)
	if n == 0 {
		return nil
	}
	b := l.chain[n-1]
	l.chain = l.chain[:n-1]
	delete(l.blocks, b.Slot)
	delete(l.hashes, b.Hash)
	l.unindex(b)
	return b
}

// advance moves the confirmed and finalized marks for the current slot and
// returns the blocks that became rooted, oldest first.
func (l *ledger) advance(confirmDepth, finalizeDepth uint64) []*block {
	for _, b := range l.chain {
		if b.Slot+confirmDepth <= l.slot {
			l.conf = b
		}
	}
	var rooted []*block
	for len(l.chain) > 0 && l.chain[0].Slot+finalizeDepth <= l.slot {
		b := l.chain[0]
		l.chain = l.chain[1:]
		for k, a := range b.delta {
			l.base[k] = a
		}
		// b.delta stays until the block is stored (step clears it).
		l.root = b
		rooted = append(rooted, b)
	}
	if l.conf.Slot < l.root.Slot {
		l.conf = l.root
	}
	return rooted
}

// cleanup deletes rooted blocks older than keep slots and returns the
// deleted slots.
func (l *ledger) cleanup(keep uint64) []uint64 {
	if l.slot+1 <= keep {
		return nil
	}
	limit := min(l.slot+1-keep, l.root.Slot)
	var gone []uint64
	for s := l.first; s < limit; s++ {
		if b, ok := l.blocks[s]; ok {
			delete(l.blocks, s)
			delete(l.hashes, b.Hash)
			l.unindex(b)
			gone = append(gone, s)
		}
	}
	if limit > l.first {
		l.first = limit
		for l.blocks[l.first] == nil && l.first < l.root.Slot {
			l.first++
		}
	}
	return gone
}

// slotStatus classifies a slot for getBlock at a level, the way agave's
// get_block does.
func (l *ledger) blockError(slot uint64, c commitment) error {
	top := l.at(c)
	if slot <= l.root.Slot {
		if slot < l.first {
			return errBlockCleanedUp(slot, l.first)
		}
		if l.blocks[slot] == nil {
			if slot > l.first {
				return errSlotSkipped(slot)
			}
			return nil // agave answers null here
		}
	}
	if slot > top.Slot || l.blocks[slot] == nil {
		return errBlockNotAvailable(slot)
	}
	return nil
}

// blockHash derives a block's hash from its parent's, its slot and its
// transactions' signatures, standing in for the proof-of-history hash.
func blockHash(parent solana.Hash, slot uint64, txs []*txRecord) solana.Hash {
	h := sha256.New()
	h.Write(parent[:])
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], slot)
	h.Write(b[:])
	for _, r := range txs {
		s := r.sig()
		h.Write(s[:])
	}
	var out solana.Hash
	copy(out[:], h.Sum(nil))
	return out
}
