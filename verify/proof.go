package verify

import (
	stdjson "encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb/memorydb"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// Account is an account proven against a state root by VerifyProof, with
// the storage slots that were proven with it. An account absent from the
// state is proven too (Exists false): its balance and nonce are zero and
// it has no code or storage.
type Account struct {
	Address     common.Address
	Exists      bool
	Nonce       uint64
	Balance     *uint256.Int
	StorageRoot common.Hash
	CodeHash    common.Hash // types.EmptyCodeHash when there is no code
	Storage     map[common.Hash]common.Hash
}

// proofJSON is a node's eth_getProof answer.
type proofJSON struct {
	Address      common.Address  `json:"address"`
	AccountProof []hexutil.Bytes `json:"accountProof"`
	Balance      *hexutil.Big    `json:"balance"`
	CodeHash     common.Hash     `json:"codeHash"`
	Nonce        hexutil.Uint64  `json:"nonce"`
	StorageHash  common.Hash     `json:"storageHash"`
	StorageProof []struct {
		Key   string          `json:"key"`
		Value *hexutil.Big    `json:"value"`
		Proof []hexutil.Bytes `json:"proof"`
	} `json:"storageProof"`
}

// VerifyProof checks a node's eth_getProof answer for address and slots
// against a trusted state root: the account proof must lead from root to
// the account's RLP (or prove it absent), the account's fields in the
// answer must be those, and each slot's proof must lead from the
// account's storage root to the slot's value (or prove it zero). Every
// slot asked for must be answered, in order. The returned Account holds
// what was proven; the node's answer is then safe to pass on as is.
func VerifyProof(raw []byte, root common.Hash, address common.Address, slots []common.Hash) (*Account, error) {
	if err := onlyMembers("proof", raw, proofMembers); err != nil {
		return nil, err
	}
	var p proofJSON
	if err := stdjson.Unmarshal(raw, &p); err != nil {
		return nil, malformed("proof", err)
	}
	if p.Address != address {
		return nil, mismatch("proof.address", address.Hex(), p.Address.Hex())
	}
	acc, err := proveAccount(root, address, p.AccountProof)
	if err != nil {
		return nil, err
	}
	if got := (*big.Int)(p.Balance); got == nil || got.Cmp(acc.Balance.ToBig()) != 0 {
		return nil, mismatch("proof.balance", acc.Balance.Hex(), fmt.Sprint(p.Balance))
	}
	if uint64(p.Nonce) != acc.Nonce {
		return nil, mismatch("proof.nonce", fmt.Sprint(acc.Nonce), fmt.Sprint(uint64(p.Nonce)))
	}
	// An absent account's roots: geth shows zero hashes, others the empty
	// trie's and empty code's; both say "nothing here".
	if p.StorageHash != acc.StorageRoot && !(!acc.Exists && p.StorageHash == (common.Hash{})) {
		return nil, mismatch("proof.storageHash", acc.StorageRoot.Hex(), p.StorageHash.Hex())
	}
	if p.CodeHash != acc.CodeHash && !(!acc.Exists && p.CodeHash == (common.Hash{})) {
		return nil, mismatch("proof.codeHash", acc.CodeHash.Hex(), p.CodeHash.Hex())
	}
	if len(p.StorageProof) != len(slots) {
		return nil, mismatch("proof.storageProof", fmt.Sprintf("%d slots", len(slots)), fmt.Sprintf("%d", len(p.StorageProof)))
	}
	for i, sp := range p.StorageProof {
		what := fmt.Sprintf("proof.storageProof[%d]", i)
		key, err := ParseSlot(sp.Key)
		if err != nil {
			return nil, malformed(what+".key", err)
		}
		if key != slots[i] {
			return nil, mismatch(what+".key", slots[i].Hex(), sp.Key)
		}
		val, err := proveSlot(what, acc.StorageRoot, key, sp.Proof)
		if err != nil {
			return nil, err
		}
		if sp.Value == nil || (*big.Int)(sp.Value).Cmp(val.Big()) != 0 {
			return nil, mismatch(what+".value", val.Big().String(), fmt.Sprint(sp.Value))
		}
		acc.Storage[key] = val
	}
	return acc, nil
}

// proofMembers are the members of an eth_getProof answer.
var proofMembers = []string{"address", "accountProof", "balance", "codeHash", "nonce", "storageHash", "storageProof"}

// onlyMembers refuses an object with a member not in names (or a name
// twice): what nothing checks is not passed on.
func onlyMembers(what string, raw []byte, names []string) error {
	obj, err := decodeObject(what, raw)
	if err != nil {
		return err
	}
	for _, n := range obj.names {
		if !contains(names, n) {
			return &UnverifiableError{What: what + "." + n, Reason: "no commitment covers this field"}
		}
	}
	if what == "proof" {
		list, err := decodeArray("proof.storageProof", obj.values["storageProof"])
		if err != nil {
			return err
		}
		for i, sp := range list {
			if err := onlyMembers(fmt.Sprintf("proof.storageProof[%d]", i), sp, []string{"key", "value", "proof"}); err != nil {
				return err
			}
		}
	}
	return nil
}

// proveAccount walks the account proof from root.
func proveAccount(root common.Hash, address common.Address, proof []hexutil.Bytes) (*Account, error) {
	val, err := trie.VerifyProof(root, crypto.Keccak256(address[:]), proofDB(proof))
	if err != nil {
		return nil, mismatch("proof.accountProof", "a path from state root "+root.Hex(), err.Error())
	}
	acc := &Account{Address: address, Balance: new(uint256.Int), StorageRoot: types.EmptyRootHash, CodeHash: types.EmptyCodeHash, Storage: make(map[common.Hash]common.Hash)}
	if val == nil {
		return acc, nil
	}
	var sa types.StateAccount
	if err := rlp.DecodeBytes(val, &sa); err != nil {
		return nil, mismatch("proof.accountProof", "an account at the leaf", err.Error())
	}
	acc.Exists = true
	acc.Nonce, acc.Balance, acc.StorageRoot, acc.CodeHash = sa.Nonce, sa.Balance, sa.Root, common.BytesToHash(sa.CodeHash)
	return acc, nil
}

// proveSlot walks one storage proof from the account's storage root.
func proveSlot(what string, root, key common.Hash, proof []hexutil.Bytes) (common.Hash, error) {
	if root == types.EmptyRootHash {
		return common.Hash{}, nil // an empty trie holds nothing, with no node to show
	}
	val, err := trie.VerifyProof(root, crypto.Keccak256(key[:]), proofDB(proof))
	if err != nil {
		return common.Hash{}, mismatch(what+".proof", "a path from storage root "+root.Hex(), err.Error())
	}
	if val == nil {
		return common.Hash{}, nil
	}
	_, content, _, err := rlp.Split(val)
	if err != nil || len(content) > 32 {
		return common.Hash{}, mismatch(what+".proof", "a slot value at the leaf", fmt.Sprintf("%x", val))
	}
	return common.BytesToHash(content), nil
}

// proofDB holds proof nodes by their hash, as trie.VerifyProof reads them.
func proofDB(nodes []hexutil.Bytes) *memorydb.Database {
	db := memorydb.New()
	for _, n := range nodes {
		db.Put(crypto.Keccak256(n), n)
	}
	return db
}

// ParseSlot reads a storage key as clients send it to eth_getStorageAt
// and nodes echo it in eth_getProof: hex of at most 32 bytes, with or
// without leading zeros.
func ParseSlot(s string) (common.Hash, error) {
	if len(s) < 3 || s[:2] != "0x" || len(s) > 66 {
		return common.Hash{}, fmt.Errorf("want 0x and 1 to 64 hex digits, got %q", s)
	}
	v, ok := new(big.Int).SetString(s[2:], 16)
	if !ok {
		return common.Hash{}, fmt.Errorf("bad hex %q", s)
	}
	return common.BigToHash(v), nil
}

// BalanceJSON is the answer to eth_getBalance for the proven account.
func (a *Account) BalanceJSON() []byte { return quote(a.Balance.Hex()) }

// NonceJSON is the answer to eth_getTransactionCount for the proven
// account (at a mined block; the pending count is not provable).
func (a *Account) NonceJSON() []byte { return quote(hexutil.EncodeUint64(a.Nonce)) }

// StorageJSON is the answer to eth_getStorageAt for a slot proven with
// the account; false when the slot was not among those proven.
func (a *Account) StorageJSON(slot common.Hash) ([]byte, bool) {
	v, ok := a.Storage[slot]
	if !ok {
		return nil, false
	}
	return quote(v.Hex()), true
}

// VerifyCode checks a node's eth_getCode answer against the proven
// account's code hash and returns the code.
func VerifyCode(raw []byte, acc *Account) ([]byte, error) {
	var code hexutil.Bytes
	if err := stdjson.Unmarshal(raw, &code); err != nil {
		return nil, malformed("code", err)
	}
	if got := crypto.Keccak256Hash(code); got != acc.CodeHash {
		return nil, mismatch("code", "hash "+acc.CodeHash.Hex(), "hash "+got.Hex())
	}
	return code, nil
}

func quote(s string) []byte { return []byte(`"` + s + `"`) }
