package evmverify

import (
	"bytes"
	"encoding/hex"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/holiman/uint256"

	"github.com/porticohq/portico/network/verify"
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

// proofAnswer is a node's eth_getProof answer as read by readProof.
// Members the answer leaves out stay zero (nil for the balance and the
// values): the checks then fail on them, as on any other wrong value.
type proofAnswer struct {
	address      common.Address
	accountProof [][]byte
	balance      *uint256.Int
	codeHash     common.Hash
	nonce        uint64
	storageHash  common.Hash
	storageProof []slotAnswer
	sawStorage   bool // the storageProof member was there
}

// slotAnswer is one entry of an answer's storageProof.
type slotAnswer struct {
	key   common.Hash
	raw   []byte // the key as the node wrote it, for error messages
	value *uint256.Int
	proof [][]byte
}

// VerifyProof checks a node's eth_getProof answer for address and slots
// against a trusted state root: the account proof must lead from root to
// the account's RLP (or prove it absent), the account's fields in the
// answer must be those, and each slot's proof must lead from the
// account's storage root to the slot's value (or prove it zero). Every
// slot asked for must be answered, in order. The returned Account holds
// what was proven; the node's answer is then safe to pass on as is.
//
// The answer is read in one pass, straight from its bytes: a member the
// answer should not have is refused (no commitment covers it), a name
// twice or anything that is not the JSON-RPC spelling of its value
// (quantities without leading zeros, data as 0x and pairs of hex digits,
// hashes of 32 bytes) is malformed.
func VerifyProof(raw []byte, root common.Hash, address common.Address, slots []common.Hash) (*Account, error) {
	p, err := readProof(raw)
	if err != nil {
		return nil, err
	}
	if p.address != address {
		return nil, mismatch("proof.address", address.Hex(), p.address.Hex())
	}
	acc, err := proveAccount(root, address, p.accountProof)
	if err != nil {
		return nil, err
	}
	if p.balance == nil || !p.balance.Eq(acc.Balance) {
		return nil, mismatch("proof.balance", acc.Balance.Hex(), quantityText(p.balance))
	}
	if p.nonce != acc.Nonce {
		return nil, mismatch("proof.nonce", fmt.Sprint(acc.Nonce), fmt.Sprint(p.nonce))
	}
	// An absent account's roots: geth shows zero hashes, others the empty
	// trie's and empty code's; both say "nothing here".
	if p.storageHash != acc.StorageRoot && !(!acc.Exists && p.storageHash == (common.Hash{})) {
		return nil, mismatch("proof.storageHash", acc.StorageRoot.Hex(), p.storageHash.Hex())
	}
	if p.codeHash != acc.CodeHash && !(!acc.Exists && p.codeHash == (common.Hash{})) {
		return nil, mismatch("proof.codeHash", acc.CodeHash.Hex(), p.codeHash.Hex())
	}
	if !p.sawStorage {
		return nil, malformed("proof.storageProof", errors.New("missing"))
	}
	if len(p.storageProof) != len(slots) {
		return nil, mismatch("proof.storageProof", fmt.Sprintf("%d slots", len(slots)), fmt.Sprintf("%d", len(p.storageProof)))
	}
	if len(slots) > 0 {
		acc.Storage = make(map[common.Hash]common.Hash, len(slots))
	}
	for i := range p.storageProof {
		sp := &p.storageProof[i]
		if sp.key != slots[i] {
			return nil, mismatch(slotWhat(i)+".key", slots[i].Hex(), string(sp.raw))
		}
		val, err := proveSlot(i, acc.StorageRoot, sp.key, sp.proof)
		if err != nil {
			return nil, err
		}
		if sp.value == nil || sp.value.Cmp(new(uint256.Int).SetBytes32(val[:])) != 0 {
			return nil, mismatch(slotWhat(i)+".value", val.Big().String(), quantityText(sp.value))
		}
		acc.Storage[sp.key] = val
	}
	return acc, nil
}

func slotWhat(i int) string { return "proof.storageProof[" + strconv.Itoa(i) + "]" }

// quantityText shows a quantity from an answer in an error message.
func quantityText(v *uint256.Int) string {
	if v == nil {
		return "(missing)"
	}
	return v.Hex()
}

// readProof reads an eth_getProof answer in one pass over its bytes
// (jsontext parses in place; no member is copied out but the proof
// nodes, which are decoded from hex).
func readProof(raw []byte) (*proofAnswer, error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	if err := openWith(dec, "proof", '{'); err != nil {
		return nil, err
	}
	p := &proofAnswer{}
	for dec.PeekKind() != '}' {
		name, err := readName(dec, "proof")
		if err != nil {
			return nil, err
		}
		switch string(name) {
		case "address":
			err = readFixed(dec, "proof.address", p.address[:])
		case "accountProof":
			p.accountProof, err = readNodes(dec, "proof.accountProof")
		case "balance":
			p.balance, err = readQuantity(dec, "proof.balance")
		case "codeHash":
			err = readFixed(dec, "proof.codeHash", p.codeHash[:])
		case "nonce":
			var n *uint256.Int
			n, err = readQuantity(dec, "proof.nonce")
			if err == nil && n != nil {
				if !n.IsUint64() {
					err = malformed("proof.nonce", errors.New("over 64 bits"))
				}
				p.nonce = n.Uint64()
			}
		case "storageHash":
			err = readFixed(dec, "proof.storageHash", p.storageHash[:])
		case "storageProof":
			p.sawStorage = true
			p.storageProof, err = readSlots(dec)
		default:
			return nil, &verify.UnverifiableError{What: "proof." + string(name), Reason: "no commitment covers this field"}
		}
		if err != nil {
			return nil, err
		}
	}
	if err := closeObject(dec, "proof"); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, malformed("proof", errors.New("data after the object"))
	}
	return p, nil
}

// readSlots reads an answer's storageProof list.
func readSlots(dec *jsontext.Decoder) ([]slotAnswer, error) {
	if err := openWith(dec, "proof.storageProof", '['); err != nil {
		return nil, err
	}
	var out []slotAnswer
	for i := 0; dec.PeekKind() != ']'; i++ {
		what := slotWhat(i)
		if err := openWith(dec, what, '{'); err != nil {
			return nil, err
		}
		var sp slotAnswer
		sawKey := false
		for dec.PeekKind() != '}' {
			name, err := readName(dec, what)
			if err != nil {
				return nil, err
			}
			switch string(name) {
			case "key":
				sawKey = true
				var s []byte
				if s, err = readString(dec, what+".key"); err == nil {
					sp.raw = s
					if sp.key, err = parseSlot(s); err != nil {
						err = malformed(what+".key", err)
					}
				}
			case "value":
				sp.value, err = readQuantity(dec, what+".value")
			case "proof":
				sp.proof, err = readNodes(dec, what+".proof")
			default:
				return nil, &verify.UnverifiableError{What: what + "." + string(name), Reason: "no commitment covers this field"}
			}
			if err != nil {
				return nil, err
			}
		}
		if err := closeObject(dec, what); err != nil {
			return nil, err
		}
		if !sawKey {
			return nil, malformed(what+".key", errors.New("missing"))
		}
		out = append(out, sp)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, malformed("proof.storageProof", err)
	}
	return out, nil
}

// openWith reads the token that opens an object or array.
func openWith(dec *jsontext.Decoder, what string, kind jsontext.Kind) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return malformed(what, err)
	}
	if tok.Kind() != kind {
		return malformed(what, fmt.Errorf("want %s, got %s", kind, tok.Kind()))
	}
	return nil
}

// closeObject reads the token that closes an object (PeekKind said it
// is next, or the input is broken).
func closeObject(dec *jsontext.Decoder, what string) error {
	if _, err := dec.ReadToken(); err != nil {
		return malformed(what, err)
	}
	return nil
}

// readName reads an object member's name (valid until the decoder reads
// on). The decoder refuses a name the object had already: two readers of
// the answer could each take a different one.
func readName(dec *jsontext.Decoder, what string) ([]byte, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, malformed(what, err)
	}
	s, err := unquote(v)
	if err != nil {
		return nil, malformed(what, err)
	}
	return s, nil
}

// readString reads a string value; its bytes are valid until the
// decoder reads on.
func readString(dec *jsontext.Decoder, what string) ([]byte, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, malformed(what, err)
	}
	if v.Kind() != '"' {
		return nil, malformed(what, fmt.Errorf("want a string, got %.20s", v))
	}
	s, err := unquote(v)
	if err != nil {
		return nil, malformed(what, err)
	}
	return s, nil
}

// unquote returns a JSON string's contents, in place when it has no
// escapes.
func unquote(v jsontext.Value) ([]byte, error) {
	if len(v) < 2 || v[0] != '"' {
		return nil, fmt.Errorf("want a string, got %.20s", v)
	}
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	return jsontext.AppendUnquote(nil, v)
}

// readFixed reads a hash or an address: 0x and exactly 2*len(dst) hex
// digits.
func readFixed(dec *jsontext.Decoder, what string, dst []byte) error {
	s, err := readString(dec, what)
	if err != nil {
		return err
	}
	if len(s) != 2+2*len(dst) || s[0] != '0' || s[1] != 'x' {
		return malformed(what, fmt.Errorf("want 0x and %d hex digits, got %q", 2*len(dst), s))
	}
	if _, err := hex.Decode(dst, s[2:]); err != nil {
		return malformed(what, err)
	}
	return nil
}

// readQuantity reads a quantity of at most 256 bits: 0x and hex digits
// without leading zeros. null reads as nil (no value), as encoding/json
// would read it into a pointer.
func readQuantity(dec *jsontext.Decoder, what string) (*uint256.Int, error) {
	if dec.PeekKind() == 'n' {
		if _, err := dec.ReadToken(); err != nil {
			return nil, malformed(what, err)
		}
		return nil, nil
	}
	s, err := readString(dec, what)
	if err != nil {
		return nil, err
	}
	if len(s) < 3 || s[0] != '0' || s[1] != 'x' || len(s) > 66 || (len(s) > 3 && s[2] == '0') {
		return nil, malformed(what, fmt.Errorf("want a quantity (0x and 1 to 64 hex digits, no leading zero), got %q", s))
	}
	var buf [32]byte
	if err := hexRight(buf[:], s[2:]); err != nil {
		return nil, malformed(what, err)
	}
	return new(uint256.Int).SetBytes32(buf[:]), nil
}

// hexRight decodes up to 2*len(dst) hex digits into the low end of dst
// (an odd count has a leading zero nibble).
func hexRight(dst []byte, digits []byte) error {
	if len(digits) > 2*len(dst) {
		return fmt.Errorf("%d hex digits, want at most %d", len(digits), 2*len(dst))
	}
	at := len(dst) - (len(digits)+1)/2
	if len(digits)%2 == 1 {
		lo, ok := nibble(digits[0])
		if !ok {
			return fmt.Errorf("bad hex digit %q", digits[0])
		}
		dst[at] = lo
		at++
		digits = digits[1:]
	}
	if _, err := hex.Decode(dst[at:], digits); err != nil {
		return err
	}
	return nil
}

func nibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// readNodes reads a list of proof nodes (hex data). null reads as no
// nodes: the proof then fails to lead anywhere.
func readNodes(dec *jsontext.Decoder, what string) ([][]byte, error) {
	if dec.PeekKind() == 'n' {
		if _, err := dec.ReadToken(); err != nil {
			return nil, malformed(what, err)
		}
		return nil, nil
	}
	if err := openWith(dec, what, '['); err != nil {
		return nil, err
	}
	var out [][]byte
	for i := 0; dec.PeekKind() != ']'; i++ {
		s, err := readString(dec, what)
		if err != nil {
			return nil, err
		}
		if len(s) < 2 || s[0] != '0' || s[1] != 'x' || len(s)%2 != 0 {
			return nil, malformed(fmt.Sprintf("%s[%d]", what, i), fmt.Errorf("want 0x and pairs of hex digits, got %.20q", s))
		}
		n := make([]byte, (len(s)-2)/2)
		if _, err := hex.Decode(n, s[2:]); err != nil {
			return nil, malformed(fmt.Sprintf("%s[%d]", what, i), err)
		}
		out = append(out, n)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, malformed(what, err)
	}
	return out, nil
}

// proveAccount walks the account proof from root.
func proveAccount(root common.Hash, address common.Address, proof [][]byte) (*Account, error) {
	key := crypto.Keccak256Hash(address[:])
	val, err := trie.VerifyProof(root, key[:], proofDB(proof))
	if err != nil {
		return nil, mismatch("proof.accountProof", "a path from state root "+root.Hex(), err.Error())
	}
	acc := &Account{Address: address, Balance: new(uint256.Int), StorageRoot: types.EmptyRootHash, CodeHash: types.EmptyCodeHash, Storage: map[common.Hash]common.Hash{}}
	if val == nil {
		return acc, nil
	}
	if err := decodeAccount(val, acc); err != nil {
		return nil, mismatch("proof.accountProof", "an account at the leaf", err.Error())
	}
	acc.Exists = true
	return acc, nil
}

// decodeAccount reads a state trie leaf, the RLP list [nonce, balance,
// storage root, code hash], into acc: as rlp.DecodeBytes would into a
// types.StateAccount (canonical integers, 32-byte hashes, nothing
// after), without its reflection.
func decodeAccount(val []byte, acc *Account) error {
	list, rest, err := rlp.SplitList(val)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("data after the account")
	}
	if acc.Nonce, list, err = rlp.SplitUint64(list); err != nil {
		return fmt.Errorf("nonce: %w", err)
	}
	bal, list, err := rlp.SplitString(list)
	if err != nil || len(bal) > 32 || (len(bal) > 0 && bal[0] == 0) {
		return fmt.Errorf("balance: not a canonical integer of at most 256 bits")
	}
	acc.Balance = new(uint256.Int).SetBytes(bal)
	for _, h := range []*common.Hash{&acc.StorageRoot, &acc.CodeHash} {
		var b []byte
		if b, list, err = rlp.SplitString(list); err != nil || len(b) != 32 {
			return errors.New("want a 32-byte hash")
		}
		copy(h[:], b)
	}
	if len(list) != 0 {
		return errors.New("more than four fields")
	}
	return nil
}

// proveSlot walks the storage proof of slot i from the account's
// storage root.
func proveSlot(i int, root, key common.Hash, proof [][]byte) (common.Hash, error) {
	if root == types.EmptyRootHash {
		return common.Hash{}, nil // an empty trie holds nothing, with no node to show
	}
	k := crypto.Keccak256Hash(key[:])
	val, err := trie.VerifyProof(root, k[:], proofDB(proof))
	if err != nil {
		return common.Hash{}, mismatch(slotWhat(i)+".proof", "a path from storage root "+root.Hex(), err.Error())
	}
	if val == nil {
		return common.Hash{}, nil
	}
	_, content, _, err := rlp.Split(val)
	if err != nil || len(content) > 32 {
		return common.Hash{}, mismatch(slotWhat(i)+".proof", "a slot value at the leaf", fmt.Sprintf("%x", val))
	}
	return common.BytesToHash(content), nil
}

// proofNodes holds proof nodes by their hash, as trie.VerifyProof reads
// them: a proof is a handful of nodes, so a list is searched rather than
// a map built.
type proofNodes struct {
	hashes []common.Hash
	nodes  [][]byte
}

// proofDB hashes each node once.
func proofDB(nodes [][]byte) *proofNodes {
	db := &proofNodes{hashes: make([]common.Hash, len(nodes)), nodes: nodes}
	for i, n := range nodes {
		db.hashes[i] = crypto.Keccak256Hash(n)
	}
	return db
}

// Has reports whether a node with this hash is in the proof.
func (db *proofNodes) Has(key []byte) (bool, error) {
	n, _ := db.Get(key)
	return n != nil, nil
}

// Get returns the node with this hash.
func (db *proofNodes) Get(key []byte) ([]byte, error) {
	for i := range db.hashes {
		if bytes.Equal(db.hashes[i][:], key) {
			return db.nodes[i], nil
		}
	}
	return nil, errors.New("no such proof node")
}

// ParseSlot reads a storage key as clients send it to eth_getStorageAt
// and nodes echo it in eth_getProof: hex of at most 32 bytes, with or
// without leading zeros.
func ParseSlot(s string) (common.Hash, error) { return parseSlot([]byte(s)) }

func parseSlot(s []byte) (common.Hash, error) {
	var h common.Hash
	if len(s) < 3 || s[0] != '0' || s[1] != 'x' || len(s) > 66 {
		return h, fmt.Errorf("want 0x and 1 to 64 hex digits, got %q", s)
	}
	if err := hexRight(h[:], s[2:]); err != nil {
		return common.Hash{}, fmt.Errorf("bad hex %q", s)
	}
	return h, nil
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
