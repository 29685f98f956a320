package evmverify

import (
	stdjson "encoding/json"
	"fmt"
	"math/big"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/go-json-experiment/json/jsontext"
)

// Receipts are a block's receipts checked against its receiptsRoot: the
// consensus part of each (type, status or post state, cumulative gas,
// bloom, logs) by rebuilding the receipt trie, and every other member
// (hashes, indexes, gas used, prices, addresses, each log's place) by
// deriving it from the verified block, as a node derives it. Because the
// whole block's trie is rebuilt, a receipt or a log left out is caught.
type Receipts struct {
	Block    *Block
	Receipts types.Receipts // with every derived field set

	raws []jsontext.Value // the node's receipt objects, in order
}

// receiptJSON is the consensus part of a node's receipt.
type receiptJSON struct {
	Type              hexutil.Uint64  `json:"type"`
	Root              hexutil.Bytes   `json:"root"`
	Status            *hexutil.Uint64 `json:"status"`
	CumulativeGasUsed *hexutil.Uint64 `json:"cumulativeGasUsed"`
	Bloom             *types.Bloom    `json:"logsBloom"`
	Logs              []struct {
		Address common.Address `json:"address"`
		Topics  []common.Hash  `json:"topics"`
		Data    hexutil.Bytes  `json:"data"`
	} `json:"logs"`
}

// VerifyReceipts checks a node's eth_getBlockReceipts answer against the
// verified block b (which gives the receipts root and the transactions
// the derived fields come from).
func (c *Chain) VerifyReceipts(raw []byte, b *Block) (*Receipts, error) {
	list, err := decodeArray("receipts", raw)
	if err != nil {
		return nil, err
	}
	if len(list) != len(b.Transactions) {
		return nil, mismatch("receipts", fmt.Sprintf("%d receipts (one per transaction)", len(b.Transactions)), fmt.Sprint(len(list)))
	}
	rs := make(types.Receipts, len(list))
	for i, r := range list {
		what := fmt.Sprintf("receipts[%d]", i)
		var dec receiptJSON
		if err := stdjson.Unmarshal(r, &dec); err != nil {
			return nil, malformed(what, err)
		}
		if dec.CumulativeGasUsed == nil || dec.Bloom == nil || dec.Logs == nil || (dec.Status == nil && len(dec.Root) == 0) {
			return nil, malformed(what, fmt.Errorf("a consensus field (status or root, cumulativeGasUsed, logsBloom, logs) is missing"))
		}
		rc := &types.Receipt{Type: uint8(dec.Type), PostState: dec.Root, CumulativeGasUsed: uint64(*dec.CumulativeGasUsed), Bloom: *dec.Bloom, Logs: []*types.Log{}}
		if dec.Status != nil {
			rc.Status = uint64(*dec.Status)
		}
		for _, l := range dec.Logs {
			rc.Logs = append(rc.Logs, &types.Log{Address: l.Address, Topics: l.Topics, Data: l.Data})
		}
		rs[i] = rc
	}
	h := b.Header.eth
	if root := types.DeriveSha(rs, trie.NewStackTrie(nil)); root != h.ReceiptHash {
		return nil, mismatch("receipts", "root "+h.ReceiptHash.Hex(), "root "+root.Hex())
	}
	var blobPrice *big.Int
	if h.ExcessBlobGas != nil {
		blobPrice = eip4844.CalcBlobFee(c.config, h)
	}
	if err := rs.DeriveFields(c.config, b.Header.hash, h.Number.Uint64(), h.Time, h.BaseFee, blobPrice, b.Transactions); err != nil {
		return nil, mismatch("receipts", "fields derivable from the block", err.Error())
	}
	for i, r := range list {
		if err := checkReceipt(fmt.Sprintf("receipts[%d]", i), r, rs[i], b.Transactions[i], b.Senders[i], h.Time, blobPrice); err != nil {
			return nil, err
		}
	}
	return &Receipts{Block: b, Receipts: rs, raws: list}, nil
}

// checkReceipt compares a node's receipt object with the receipt as the
// API renders it (go-ethereum's shape: root or status, blob fields for
// blob transactions only, a null contract address unless one was made).
func checkReceipt(what string, raw []byte, r *types.Receipt, tx *types.Transaction, from common.Address, blockTime uint64, blobPrice *big.Int) error {
	obj, err := decodeObject(what, raw)
	if err != nil {
		return err
	}
	want := map[string]any{
		"blockHash":         r.BlockHash,
		"blockNumber":       (*hexutil.Big)(r.BlockNumber),
		"transactionHash":   r.TxHash,
		"transactionIndex":  hexutil.Uint64(r.TransactionIndex),
		"from":              from,
		"to":                tx.To(),
		"gasUsed":           hexutil.Uint64(r.GasUsed),
		"cumulativeGasUsed": hexutil.Uint64(r.CumulativeGasUsed),
		"contractAddress":   nil,
		"logsBloom":         r.Bloom,
		"type":              hexutil.Uint64(r.Type),
		"effectiveGasPrice": (*hexutil.Big)(r.EffectiveGasPrice),
	}
	if len(r.PostState) > 0 {
		want["root"] = hexutil.Bytes(r.PostState)
	} else {
		want["status"] = hexutil.Uint64(r.Status)
	}
	var mayLack []string
	if tx.Type() == types.BlobTxType {
		want["blobGasUsed"] = hexutil.Uint64(r.BlobGasUsed)
		want["blobGasPrice"] = (*hexutil.Big)(r.BlobGasPrice)
	} else if blobPrice != nil {
		// anvil gives every receipt the block's blob gas price.
		want["blobGasPrice"] = (*hexutil.Big)(blobPrice)
		mayLack = append(mayLack, "blobGasPrice")
	}
	// Some nodes add the block's time (anvil as a JSON number).
	mayLack = append(mayLack, "blockTimestamp")
	if v, ok := obj.values["blockTimestamp"]; ok && v.Kind() == '0' {
		want["blockTimestamp"] = stdjson.Number(strconv.FormatUint(blockTime, 10))
	} else {
		want["blockTimestamp"] = hexutil.Uint64(blockTime)
	}
	if r.ContractAddress != (common.Address{}) {
		want["contractAddress"] = r.ContractAddress
	}
	members := make(map[string]jsontext.Value, len(want)+1)
	for n, v := range want {
		members[n], _ = stdjson.Marshal(v)
	}
	logs, ok := obj.values["logs"]
	if !ok {
		return mismatch(what+".logs", "", "(missing)")
	}
	members["logs"] = logs // checked one by one below
	if err := checkMembers(what, obj, members, mayLack...); err != nil {
		return err
	}
	return checkLogs(what+".logs", logs, r.Logs)
}

// checkLogs compares a node's log objects with verified logs, one by one.
func checkLogs(what string, raw []byte, want []*types.Log) error {
	list, err := decodeArray(what, raw)
	if err != nil {
		return err
	}
	for i, l := range list {
		w := fmt.Sprintf("%s[%d]", what, i)
		if i >= len(want) {
			return mismatch(w, "(no such log)", short(l))
		}
		obj, err := decodeObject(w, l)
		if err != nil {
			return err
		}
		if err := checkMembers(w, obj, marshalMembers(want[i]), "blockTimestamp"); err != nil {
			return err
		}
	}
	if len(list) < len(want) {
		l := want[len(list)]
		return mismatch(fmt.Sprintf("%s[%d]", what, len(list)), fmt.Sprintf("a log of %s at block %d index %d", l.Address.Hex(), l.BlockNumber, l.Index), "(missing)")
	}
	return nil
}

// JSON is the node's eth_getBlockReceipts answer, verified.
func (rs *Receipts) JSON() []byte {
	b := []byte{'['}
	for i, r := range rs.raws {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, ']')
}

// ReceiptJSON is the answer to eth_getTransactionReceipt for a
// transaction of the block, or false when the block does not hold it.
func (rs *Receipts) ReceiptJSON(tx common.Hash) ([]byte, bool) {
	i, ok := rs.Block.Index(tx)
	if !ok {
		return nil, false
	}
	return rs.raws[i], true
}

// Logs returns the block's logs in order, with their derived fields.
func (rs *Receipts) Logs() []*types.Log {
	var out []*types.Log
	for _, r := range rs.Receipts {
		out = append(out, r.Logs...)
	}
	return out
}

// Size is about the memory the receipts hold, in bytes: the node's
// receipt objects and the decoded receipts with their logs (not the
// block, which is weighed on its own). It is what a cache of receipts
// weighs them by and what a call holding them counts against its memory
// budget.
func (rs *Receipts) Size() int64 {
	var n int64
	for _, raw := range rs.raws {
		n += int64(len(raw))
	}
	for _, r := range rs.Receipts {
		n += 512 + LogsSize(r.Logs) // the receipt, its bloom and derived fields, its logs
	}
	return n
}
