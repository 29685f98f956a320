package starknet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/heads"
)

// Chain is how rollup nodes are tracked: the chain id names the chain;
// heads are the latest block and the newest block accepted on L1 (its
// final blocks; nodes that do not know the l1_accepted tag leave it 0);
// block hashes reveal reorgs.
func Chain() portico.Chain {
	reader := &heads.Reader{
		IdentityMethod: "starknet_chainId", IdentityWant: "a felt", IdentityShow: 40,
		// Nodes that do not know the l1_accepted tag leave it 0.
		Marks: []heads.Mark{{Tag: "latest", Head: portico.HeadLatest, Missing: "starknet_getBlockWithTxHashes: the latest block has no number"},
			{Tag: "l1_accepted", Head: portico.HeadFinalized, Optional: true}},
		Mark: func(ctx context.Context, node portico.Caller, tag string) (portico.Header, bool, error) {
			return getBlock(ctx, node, `"`+tag+`"`)
		},
		Head: portico.HeadLatest,
	}
	return portico.Chain{
		Identity:     reader.ReadIdentity,
		Heads:        reader.Heads,
		Header:       header,
		Tags:         map[string]portico.Head{"latest": portico.HeadLatest, "l1_accepted": portico.HeadFinalized},
		PollInterval: 2 * time.Second,
		MaxLag:       5,
	}
}

// blockHeader is what tracking reads of a block.
type blockHeader struct {
	Hash   string  `json:"block_hash"`
	Parent string  `json:"parent_hash"`
	Number *uint64 `json:"block_number"`
}

// hashForm writes a hash in one form whatever the node's: lower case, no
// leading zeros, so that nodes that pad and nodes that do not agree.
func hashForm(h string) string {
	h = strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(h, "0x"), "0X"))
	h = strings.TrimLeft(h, "0")
	return "0x" + h
}

func getBlock(ctx context.Context, node portico.Caller, id string) (portico.Header, bool, error) {
	res, err := node.Call(ctx, "starknet_getBlockWithTxHashes", jsontext.Value(`{"block_id":`+id+`}`), nil)
	if err != nil {
		return portico.Header{}, false, err
	}
	var b blockHeader
	if err := json.Unmarshal(res, &b, json.RejectUnknownMembers(false)); err != nil {
		return portico.Header{}, false, fmt.Errorf("starknet_getBlockWithTxHashes: %w", err)
	}
	if b.Number == nil || b.Hash == "" {
		return portico.Header{}, false, nil // a pending block: no number or hash yet
	}
	h := portico.Header{Number: *b.Number, Hash: hashForm(b.Hash), Parent: hashForm(b.Parent)}
	if h.Number > 0 {
		h.ParentNumber = h.Number - 1
	}
	return h, true, nil
}

// header reads a block's header by its hash.
func header(ctx context.Context, node portico.Caller, _ uint64, hash string) (portico.Header, error) {
	h, ok, err := getBlock(ctx, node, `{"block_hash":"`+hash+`"}`)
	if err == nil && !ok {
		err = fmt.Errorf("starknet_getBlockWithTxHashes: block %s has no number", hash)
	}
	return h, err
}
