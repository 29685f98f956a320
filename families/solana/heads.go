package solana

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/heads"
)

// Chain is how slot-chain nodes are tracked: the genesis hash names the
// chain; heads are the slots at the three commitments, processed
// (Latest), confirmed (Safe) and finalized, and the chain view follows the
// newest confirmed block by its blockhash, linked to its parent slot's
// (processed blocks may yet be skipped, and getBlock serves confirmed
// ones at the least).
func Chain() portico.Chain {
	reader := &heads.Reader{
		IdentityMethod: "getGenesisHash", IdentityWant: "a hash", IdentityShow: 60,
		Marks: []heads.Mark{{Tag: "processed", Head: portico.HeadLatest}, {Tag: "confirmed", Head: portico.HeadSafe},
			{Tag: "finalized", Head: portico.HeadFinalized}},
		Mark: func(ctx context.Context, node portico.Caller, commitment string) (portico.Header, bool, error) {
			n, err := slot(ctx, node, commitment)
			return portico.Header{Number: n}, err == nil, err
		},
		// The confirmed slot has a block; a node that cannot give it (its
		// ledger jumped) leaves the head without a header this round.
		Head: portico.HeadSafe, HeadByNumber: true, Header: header,
	}
	return portico.Chain{
		Identity:     reader.ReadIdentity,
		Heads:        reader.Heads,
		Header:       header,
		Tags:         map[string]portico.Head{"processed": portico.HeadLatest, "confirmed": portico.HeadSafe, "finalized": portico.HeadFinalized},
		PollInterval: time.Second,
		MaxLag:       50,
	}
}

func slot(ctx context.Context, node portico.Caller, commitment string) (uint64, error) {
	res, err := node.Call(ctx, "getSlot", jsontext.Value(`[{"commitment":"`+commitment+`"}]`), nil)
	if err != nil {
		return 0, err
	}
	var n uint64
	if err := json.Unmarshal(res, &n); err != nil {
		return 0, fmt.Errorf("getSlot: not a slot: %.40s", res)
	}
	return n, nil
}

// blockInfo is what tracking reads of a block.
type blockInfo struct {
	Blockhash         string `json:"blockhash"`
	PreviousBlockhash string `json:"previousBlockhash"`
	ParentSlot        uint64 `json:"parentSlot"`
}

// block reads the header of the block in slot n at confirmed commitment,
// without its transactions.
func block(ctx context.Context, node portico.Caller, n uint64) (portico.Header, error) {
	res, err := node.Call(ctx, "getBlock", jsontext.Value(`[`+strconv.FormatUint(n, 10)+
		`,{"commitment":"confirmed","transactionDetails":"none","rewards":false,"maxSupportedTransactionVersion":0}]`), nil)
	if err != nil {
		return portico.Header{}, err
	}
	var b blockInfo
	if err := json.Unmarshal(res, &b, json.RejectUnknownMembers(false)); err != nil || b.Blockhash == "" {
		return portico.Header{}, fmt.Errorf("getBlock %d: not a block: %.60s", n, res)
	}
	return portico.Header{Number: n, Hash: b.Blockhash, Parent: b.PreviousBlockhash, ParentNumber: b.ParentSlot}, nil
}

// header reads the block in slot number, which must have hash: the slot
// chain's blocks are asked for by slot.
func header(ctx context.Context, node portico.Caller, number uint64, hash string) (portico.Header, error) {
	return block(ctx, node, number)
}
