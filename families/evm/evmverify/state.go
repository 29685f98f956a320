package evmverify

import (
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"
)

// blockState is the verified state of one block that calls have needed
// so far: every account and slot in it was proven against the block's
// state root, and every code against its account's code hash. It is
// kept as a committed go-ethereum state (so a slot's committed value is
// the proven one, as SSTORE's gas rules need) and grows as calls touch
// more of the state.
type blockState struct {
	mu       sync.Mutex
	db       state.Database
	root     common.Hash // of the partial state built so far
	accounts map[common.Address]bool
	slots    map[common.Address]map[common.Hash]bool
	nslots   int
	// reads are the accounts proven at the block with the slots proven
	// with them, whether a call fetched them or a state read
	// (Executor.Prove) did: what a later read of the same account at the
	// block is answered from. nreads counts accounts and slots in it.
	reads  map[common.Address]*Account
	nreads int
}

func newBlockState() *blockState {
	mem := rawdb.NewMemoryDatabase()
	return &blockState{
		db:       state.NewMPTDatabase(triedb.NewDatabase(mem, nil), state.NewCodeDB(mem)),
		root:     types.EmptyRootHash,
		accounts: make(map[common.Address]bool),
		slots:    make(map[common.Address]map[common.Hash]bool),
		reads:    make(map[common.Address]*Account),
	}
}

// remember merges a proven account and its proven slots into reads and
// returns how many accounts and slots reads holds now; b.mu is held.
func (b *blockState) remember(acc *Account) int {
	r := b.reads[acc.Address]
	if r == nil {
		r = &Account{Address: acc.Address, Exists: acc.Exists, Nonce: acc.Nonce, Balance: new(uint256.Int).Set(acc.Balance),
			StorageRoot: acc.StorageRoot, CodeHash: acc.CodeHash, Storage: make(map[common.Hash]common.Hash, len(acc.Storage))}
		b.reads[acc.Address] = r
		b.nreads++
	}
	for s, v := range acc.Storage {
		if _, ok := r.Storage[s]; !ok {
			r.Storage[s] = v
			b.nreads++
		}
	}
	return b.nreads
}

// proven returns a copy of the account with the slots asked for, if it
// and every one of them were proven at the block.
func (b *blockState) proven(addr common.Address, slots []common.Hash) (*Account, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.reads[addr]
	if r == nil {
		return nil, false
	}
	out := *r
	out.Balance = new(uint256.Int).Set(r.Balance)
	out.Storage = make(map[common.Hash]common.Hash, len(slots))
	for _, s := range slots {
		v, ok := r.Storage[s]
		if !ok {
			return nil, false
		}
		out.Storage[s] = v
	}
	return &out, true
}

// has reports whether the account, and each slot, is proven already.
func (b *blockState) missing(want map[common.Address]map[common.Hash]struct{}) map[common.Address][]common.Hash {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[common.Address][]common.Hash)
	for a, slots := range want {
		var need []common.Hash
		for s := range slots {
			if !b.slots[a][s] {
				need = append(need, s)
			}
		}
		if !b.accounts[a] || len(need) > 0 {
			out[a] = need
		}
	}
	return out
}

// add puts proven accounts, slots and code into the state, commits, and
// returns how many slots the state holds now.
func (b *blockState) add(accs []*Account, code map[common.Hash][]byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := state.New(b.root, b.db)
	if err != nil {
		return 0, err
	}
	for _, a := range accs {
		b.remember(a)
		if !b.accounts[a.Address] {
			b.accounts[a.Address] = true
			if a.Exists {
				st.SetNonce(a.Address, a.Nonce, tracing.NonceChangeUnspecified)
				st.SetBalance(a.Address, a.Balance, tracing.BalanceChangeUnspecified)
				if a.CodeHash != types.EmptyCodeHash {
					st.SetCode(a.Address, code[a.CodeHash], tracing.CodeChangeUnspecified)
				}
			}
		}
		if b.slots[a.Address] == nil {
			b.slots[a.Address] = make(map[common.Hash]bool)
		}
		for s, v := range a.Storage {
			if b.slots[a.Address][s] {
				continue
			}
			b.slots[a.Address][s] = true
			b.nslots++
			if v != (common.Hash{}) {
				st.SetState(a.Address, s, v)
			}
		}
	}
	// Rules with EIP-158 off: an account proven to exist stays, even if
	// empty, as it is in the real state.
	root, err := st.Commit(noDeleteRules, 0)
	if err != nil {
		return 0, err
	}
	b.root = root
	return b.nslots, nil
}

// noDeleteRules are fork rules with EIP-158 off, for committing a
// partial state without dropping empty accounts the real state holds.
var noDeleteRules params.Rules

// open returns a fresh StateDB over what is proven so far.
func (b *blockState) open() (*state.StateDB, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return state.New(b.root, b.db)
}

// tracked wraps a StateDB and writes down every account and slot the EVM
// touches that is not proven yet. A run that touched any is run again
// once they are fetched: its result was computed over a state with holes.
type tracked struct {
	*state.StateDB
	seen map[common.Address]map[common.Hash]struct{}
}

func (t *tracked) acc(a common.Address) {
	if t.seen[a] == nil {
		t.seen[a] = make(map[common.Hash]struct{})
	}
}

func (t *tracked) slot(a common.Address, s common.Hash) {
	t.acc(a)
	t.seen[a][s] = struct{}{}
}

// The StateDB methods the EVM reaches state through, each noting what
// it touched; the rest are the embedded StateDB's.

func (t *tracked) CreateAccount(a common.Address)  { t.acc(a); t.StateDB.CreateAccount(a) }
func (t *tracked) CreateContract(a common.Address) { t.acc(a); t.StateDB.CreateContract(a) }
func (t *tracked) SubBalance(a common.Address, v *uint256.Int, r tracing.BalanceChangeReason) uint256.Int {
	t.acc(a)
	return t.StateDB.SubBalance(a, v, r)
}
func (t *tracked) AddBalance(a common.Address, v *uint256.Int, r tracing.BalanceChangeReason) uint256.Int {
	t.acc(a)
	return t.StateDB.AddBalance(a, v, r)
}
func (t *tracked) GetBalance(a common.Address) *uint256.Int { t.acc(a); return t.StateDB.GetBalance(a) }
func (t *tracked) GetNonce(a common.Address) uint64         { t.acc(a); return t.StateDB.GetNonce(a) }
func (t *tracked) SetNonce(a common.Address, n uint64, r tracing.NonceChangeReason) {
	t.acc(a)
	t.StateDB.SetNonce(a, n, r)
}
func (t *tracked) GetCodeHash(a common.Address) common.Hash {
	t.acc(a)
	return t.StateDB.GetCodeHash(a)
}
func (t *tracked) GetCode(a common.Address) []byte { t.acc(a); return t.StateDB.GetCode(a) }
func (t *tracked) SetCode(a common.Address, c []byte, r tracing.CodeChangeReason) []byte {
	t.acc(a)
	return t.StateDB.SetCode(a, c, r)
}
func (t *tracked) GetCodeSize(a common.Address) int { t.acc(a); return t.StateDB.GetCodeSize(a) }
func (t *tracked) GetStateAndCommittedState(a common.Address, s common.Hash) (common.Hash, common.Hash) {
	t.slot(a, s)
	return t.StateDB.GetStateAndCommittedState(a, s)
}
func (t *tracked) GetState(a common.Address, s common.Hash) common.Hash {
	t.slot(a, s)
	return t.StateDB.GetState(a, s)
}
func (t *tracked) SetState(a common.Address, s, v common.Hash) common.Hash {
	t.slot(a, s)
	return t.StateDB.SetState(a, s, v)
}
func (t *tracked) SelfDestruct(a common.Address) { t.acc(a); t.StateDB.SelfDestruct(a) }
func (t *tracked) HasSelfDestructed(a common.Address) bool {
	t.acc(a)
	return t.StateDB.HasSelfDestructed(a)
}
func (t *tracked) Exist(a common.Address) bool { t.acc(a); return t.StateDB.Exist(a) }
func (t *tracked) Empty(a common.Address) bool { t.acc(a); return t.StateDB.Empty(a) }
func (t *tracked) Touch(a common.Address)      { t.acc(a); t.StateDB.Touch(a) }
