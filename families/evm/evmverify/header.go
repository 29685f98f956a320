package evmverify

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/go-json-experiment/json/jsontext"
)

// Header is a block header whose fields hash to Hash: it can only be made
// by VerifyHeader (from a node's JSON) or NewHeader (from fields already
// at hand), so holding one means the roots it carries are the ones that
// hash really commits to. Whether Hash itself is on the chain is the job
// of Trust; every other check in this package starts from a Header.
type Header struct {
	hash common.Hash
	eth  *types.Header
}

// NewHeader wraps a go-ethereum header; its hash is computed here.
func NewHeader(h *types.Header) *Header {
	c := types.CopyHeader(h)
	return &Header{hash: c.Hash(), eth: c}
}

// Hash is the block hash the fields hash to.
func (h *Header) Hash() common.Hash { return h.hash }

// Number is the block number.
func (h *Header) Number() uint64 { return h.eth.Number.Uint64() }

// StateRoot is the root of the state trie after the block.
func (h *Header) StateRoot() common.Hash { return h.eth.Root }

// ReceiptsRoot is the root of the block's receipt trie.
func (h *Header) ReceiptsRoot() common.Hash { return h.eth.ReceiptHash }

// TransactionsRoot is the root of the block's transaction trie.
func (h *Header) TransactionsRoot() common.Hash { return h.eth.TxHash }

// Eth returns a copy of the go-ethereum header, for an EVM block context.
func (h *Header) Eth() *types.Header { return types.CopyHeader(h.eth) }

// VerifyHeader checks a node's block or header JSON (eth_getBlockBy*,
// a newHeads notification) against its hash: every header field is
// decoded, the header's RLP is hashed, and the node's "hash" member, and
// want unless it is the zero hash, must equal it. Members a header does
// not have (transactions, withdrawals, uncles, size) are left to
// VerifyBlock; a member the header does not know is refused.
func VerifyHeader(raw []byte, want common.Hash) (*Header, error) {
	obj, err := decodeObject("header", raw)
	if err != nil {
		return nil, err
	}
	obj.strip()
	return headerFrom(obj, want)
}

// uncovered are members some nodes add that no commitment covers; they
// are taken out of a verified answer rather than passed on unchecked.
// totalDifficulty: anvil and older geth send it; a block hash does not
// commit to it (only to the block's own difficulty), and go-ethereum
// stopped sending it after the merge made it meaningless.
var uncovered = []string{"totalDifficulty"}

// strip removes the uncovered members from obj and reports whether it
// removed any.
func (o *object) strip() bool {
	names := o.names[:0:0]
	for _, n := range o.names {
		if contains(uncovered, n) {
			delete(o.values, n)
			continue
		}
		names = append(names, n)
	}
	removed := len(names) != len(o.names)
	o.names = names
	return removed
}

// blockMembers are the members of a block answer that are not header
// fields; VerifyBlock checks them, VerifyHeader skips them.
var blockMembers = []string{"transactions", "withdrawals", "uncles", "size"}

// headerFrom decodes and checks the header fields of obj, skipping the
// block's other members.
func headerFrom(obj *object, want common.Hash) (*Header, error) {
	hdr := &object{values: make(map[string]jsontext.Value)}
	for _, n := range obj.names {
		if contains(blockMembers, n) {
			continue
		}
		hdr.names = append(hdr.names, n)
		hdr.values[n] = obj.values[n]
	}
	var eth types.Header
	if err := eth.UnmarshalJSON(hdr.encode()); err != nil {
		return nil, malformed("header", err)
	}
	h := &Header{hash: eth.Hash(), eth: &eth}
	if err := checkMembers("header", hdr, marshalMembers(&eth)); err != nil {
		return nil, err
	}
	if want != (common.Hash{}) && h.hash != want {
		return nil, mismatch("header.hash", want.Hex(), h.hash.Hex())
	}
	return h, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// bigOrZero is x or a zero value, never nil.
func bigOrZero(x *big.Int) *big.Int {
	if x == nil {
		return new(big.Int)
	}
	return x
}
