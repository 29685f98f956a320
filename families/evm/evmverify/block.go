package evmverify

import (
	stdjson "encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/network/verify"
)

// Block is a block whose every member was checked: the header against
// its hash, the transactions against transactionsRoot (each one's hash,
// sender, index and block fields recomputed), the withdrawals against
// withdrawalsRoot, the uncle list against sha3Uncles and the size against
// the block's RLP. It keeps the node's bytes, so the answer it gives back
// is the node's own answer, now known to be true.
type Block struct {
	Header       *Header
	Transactions types.Transactions
	Senders      []common.Address
	Withdrawals  types.Withdrawals // nil before Shanghai
	Uncles       []*types.Header   // empty after the merge

	raw []byte           // the node's answer
	obj *object          // the node's members
	txs []jsontext.Value // the node's transaction objects, in order
}

// VerifyBlock checks a node's answer to eth_getBlockByHash or
// eth_getBlockByNumber asked with full transactions (true). want is the
// trusted hash (zero: check only that the block is self-consistent).
//
// A block asked with transaction hashes only cannot be checked against
// transactionsRoot (the trie is over the transactions, not their hashes),
// so VerifyBlock refuses such an answer unless the block has no
// transactions: ask the node for full transactions and serve the hashes
// with Block.JSON(false). That costs bytes, not an extra call.
//
// Members no commitment covers are refused, except totalDifficulty,
// which is left out of the answer (see uncovered).
//
// Uncles cannot be checked from their hashes: a block with uncles (only
// before the merge) needs their headers, the node's answers to
// eth_getUncleByBlockHashAndIndex in order, passed as uncles; without
// them such a block is verify.ErrUnverifiable.
func (c *Chain) VerifyBlock(raw []byte, want common.Hash, uncles ...[]byte) (*Block, error) {
	obj, err := decodeObject("block", raw)
	if err != nil {
		return nil, err
	}
	if obj.strip() {
		raw = obj.encode()
	}
	h, err := headerFrom(obj, want)
	if err != nil {
		return nil, err
	}
	b := &Block{Header: h, obj: obj, raw: raw}
	if err := b.checkUncles(uncles); err != nil {
		return nil, err
	}
	if err := c.checkTransactions(b); err != nil {
		return nil, err
	}
	if err := b.checkWithdrawals(); err != nil {
		return nil, err
	}
	// size is the length of the block's RLP: no commitment holds it, but
	// it follows from what was verified, so it is recomputed and put in
	// the answer in place of the node's (anvil 1.7 gives one byte less
	// than the RLP on some blocks).
	if v, ok := obj.values["size"]; ok {
		body := types.Body{Transactions: b.Transactions, Uncles: b.Uncles, Withdrawals: b.Withdrawals}
		size := types.NewBlockWithHeader(h.eth).WithBody(body).Size()
		if want, _ := stdjson.Marshal(hexutil.Uint64(size)); !sameValue(v, want) {
			obj.values["size"] = want
			b.raw = obj.encode()
		}
	}
	return b, nil
}

func (b *Block) checkUncles(uncles [][]byte) error {
	v, ok := b.obj.values["uncles"]
	if !ok {
		v = jsontext.Value("[]")
	}
	var hashes []common.Hash
	if err := stdjson.Unmarshal(v, &hashes); err != nil {
		return malformed("block.uncles", err)
	}
	if len(hashes) > 0 && len(uncles) != len(hashes) {
		return &verify.UnverifiableError{What: "block.uncles", Reason: "a block with uncles needs their headers (eth_getUncleByBlockHashAndIndex)"}
	}
	for i, raw := range uncles {
		if i >= len(hashes) {
			return mismatch("block.uncles", fmt.Sprintf("%d uncles", len(uncles)), fmt.Sprintf("%d", len(hashes)))
		}
		u, err := VerifyHeader(raw, hashes[i])
		if err != nil {
			return fmt.Errorf("uncle %d: %w", i, err)
		}
		b.Uncles = append(b.Uncles, u.eth)
	}
	if got := types.CalcUncleHash(b.Uncles); got != b.Header.eth.UncleHash {
		return mismatch("block.uncles", "sha3Uncles "+b.Header.eth.UncleHash.Hex(), "sha3Uncles "+got.Hex())
	}
	return nil
}

func (c *Chain) checkTransactions(b *Block) error {
	v, ok := b.obj.values["transactions"]
	if !ok {
		return mismatch("block.transactions", "", "(missing)")
	}
	list, err := decodeArray("block.transactions", v)
	if err != nil {
		return err
	}
	b.txs = list
	// The block's own fork decides which signatures are valid (before
	// Homestead a high s was allowed).
	signer := types.MakeSigner(c.config, b.Header.eth.Number, b.Header.eth.Time)
	for i, raw := range list {
		what := fmt.Sprintf("block.transactions[%d]", i)
		if raw.Kind() != '{' {
			return &verify.UnverifiableError{What: what, Reason: "transaction hashes only: ask the node for full transactions"}
		}
		tx, from, err := c.checkTransaction(what, raw, b.Header, i, signer)
		if err != nil {
			return err
		}
		b.Transactions = append(b.Transactions, tx)
		b.Senders = append(b.Senders, from)
	}
	if root := types.DeriveSha(b.Transactions, trie.NewStackTrie(nil)); root != b.Header.eth.TxHash {
		return mismatch("block.transactions", "root "+b.Header.eth.TxHash.Hex(), "root "+root.Hex())
	}
	return nil
}

// checkTransaction decodes one transaction object of a verified block
// and checks every member: the signed fields by re-encoding, the hash,
// the sender by recovery, and the block fields against the header.
// The transaction's place in the trie is checked by the caller.
func (c *Chain) checkTransaction(what string, raw []byte, h *Header, index int, signer types.Signer) (*types.Transaction, common.Address, error) {
	obj, err := decodeObject(what, raw)
	if err != nil {
		return nil, common.Address{}, err
	}
	tx := new(types.Transaction)
	if err := tx.UnmarshalJSON(raw); err != nil {
		return nil, common.Address{}, malformed(what, err)
	}
	from, err := types.Sender(signer, tx)
	if err != nil {
		return nil, common.Address{}, mismatch(what+".from", "a valid signature", err.Error())
	}
	if err := checkMembers(what, obj, c.txMembers(tx, from, h, index), "blockTimestamp"); err != nil {
		return nil, common.Address{}, err
	}
	return tx, from, nil
}

// txMembers are the members a node gives for a mined transaction, as
// go-ethereum's API renders them.
func (c *Chain) txMembers(tx *types.Transaction, from common.Address, h *Header, index int) map[string]jsontext.Value {
	m := marshalMembers(tx)
	put := func(name string, v any) {
		raw, _ := stdjson.Marshal(v)
		m[name] = raw
	}
	put("blockHash", h.hash)
	put("blockNumber", (*hexutil.Big)(h.eth.Number))
	put("blockTimestamp", hexutil.Uint64(h.eth.Time))
	put("transactionIndex", hexutil.Uint64(index))
	put("from", from)
	switch tx.Type() {
	case types.LegacyTxType:
		delete(m, "yParity") // the API gives v alone for legacy transactions
	case types.AccessListTxType:
	default:
		// The API shows what the sender paid per gas in this block.
		price := tx.GasFeeCap()
		if h.eth.BaseFee != nil {
			price = new(big.Int).Add(h.eth.BaseFee, tx.EffectiveGasTipValue(h.eth.BaseFee))
		}
		put("gasPrice", (*hexutil.Big)(price))
	}
	return m
}

func (b *Block) checkWithdrawals() error {
	v, ok := b.obj.values["withdrawals"]
	root := b.Header.eth.WithdrawalsHash
	if root == nil {
		if ok && string(v) != "null" {
			return mismatch("block.withdrawals", "(none: the header has no withdrawalsRoot)", short(v))
		}
		return nil
	}
	if !ok {
		return mismatch("block.withdrawals", "a list (the header has withdrawalsRoot)", "(missing)")
	}
	list, err := decodeArray("block.withdrawals", v)
	if err != nil {
		return err
	}
	b.Withdrawals = make(types.Withdrawals, 0, len(list))
	for i, raw := range list {
		what := fmt.Sprintf("block.withdrawals[%d]", i)
		obj, err := decodeObject(what, raw)
		if err != nil {
			return err
		}
		w := new(types.Withdrawal)
		if err := w.UnmarshalJSON(raw); err != nil {
			return malformed(what, err)
		}
		if err := checkMembers(what, obj, marshalMembers(w)); err != nil {
			return err
		}
		b.Withdrawals = append(b.Withdrawals, w)
	}
	if got := types.DeriveSha(b.Withdrawals, trie.NewStackTrie(nil)); got != *root {
		return mismatch("block.withdrawals", "root "+root.Hex(), "root "+got.Hex())
	}
	return nil
}

// JSON renders the verified block as the node would answer
// eth_getBlockBy*: with full transaction objects, or with their hashes.
func (b *Block) JSON(fullTx bool) []byte {
	if fullTx {
		return b.raw
	}
	o := &object{names: b.obj.names, values: make(map[string]jsontext.Value, len(b.obj.values))}
	for n, v := range b.obj.values {
		o.values[n] = v
	}
	hashes := make([]common.Hash, len(b.Transactions))
	for i, tx := range b.Transactions {
		hashes[i] = tx.Hash()
	}
	o.values["transactions"], _ = stdjson.Marshal(hashes)
	return o.encode()
}

// TransactionJSON renders the verified transaction at index i as the node
// would answer eth_getTransactionByBlockHashAndIndex (and by number, and
// eth_getTransactionByHash once the hash was found at that index), or
// null when the block has no such index, as nodes answer.
func (b *Block) TransactionJSON(i uint64) []byte {
	if i >= uint64(len(b.txs)) {
		return []byte("null")
	}
	return b.txs[i]
}

// Index returns the position of the transaction with the given hash in
// the verified block, or false when it is not in it.
func (b *Block) Index(tx common.Hash) (uint64, bool) {
	for i, t := range b.Transactions {
		if t.Hash() == tx {
			return uint64(i), true
		}
	}
	return 0, false
}

// Size is about the memory the block holds, in bytes: the node's answer,
// its transaction objects kept apart, and the decoded transactions. It
// is what a cache of blocks weighs it by and what a call holding it
// counts against its memory budget.
func (b *Block) Size() int64 {
	n := int64(len(b.raw)) + 1024 // the header and the members' index
	for i, raw := range b.txs {
		n += int64(len(raw))
		if i < len(b.Transactions) {
			n += int64(b.Transactions[i].Size()) + 128
		}
	}
	return n
}
