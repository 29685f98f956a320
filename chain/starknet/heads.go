package starknet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// Chain is how rollup nodes are tracked: the chain id names the chain;
// heads are the latest block and the newest block accepted on L1 (its
// final blocks; nodes that do not know the l1_accepted tag leave it 0);
// block hashes reveal reorgs.
func Chain() portico.Chain {
	return portico.Chain{
		Identity:     identity,
		Heads:        heads,
		BlockHash:    blockHash,
		Tags:         map[string]portico.Head{"latest": portico.HeadLatest, "l1_accepted": portico.HeadFinalized},
		PollInterval: 2 * time.Second,
		MaxLag:       5,
	}
}

func identity(ctx context.Context, node portico.Caller) (string, error) {
	res, err := node.Call(ctx, "starknet_chainId", nil, nil)
	if err != nil {
		return "", err
	}
	var id string
	if err := json.Unmarshal(res, &id); err != nil || id == "" {
		return "", fmt.Errorf("starknet_chainId: not a felt: %.40s", res)
	}
	return id, nil
}

// blockHeader is what tracking reads of a block.
type blockHeader struct {
	Hash   string  `json:"block_hash"`
	Number *uint64 `json:"block_number"`
}

func getBlock(ctx context.Context, node portico.Caller, id string) (blockHeader, error) {
	res, err := node.Call(ctx, "starknet_getBlockWithTxHashes", jsontext.Value(`{"block_id":`+id+`}`), nil)
	if err != nil {
		return blockHeader{}, err
	}
	var b blockHeader
	if err := json.Unmarshal(res, &b, json.RejectUnknownMembers(false)); err != nil {
		return blockHeader{}, fmt.Errorf("starknet_getBlockWithTxHashes: %w", err)
	}
	return b, nil
}

func heads(ctx context.Context, node portico.Caller) (portico.Heads, error) {
	var h portico.Heads
	res, err := node.Call(ctx, "starknet_blockHashAndNumber", nil, nil)
	if err != nil {
		return h, err
	}
	var b blockHeader
	if err := json.Unmarshal(res, &b, json.RejectUnknownMembers(false)); err != nil || b.Number == nil {
		return h, fmt.Errorf("starknet_blockHashAndNumber: %.80s", res)
	}
	h.Latest, h.Hash = *b.Number, b.Hash
	l1, err := getBlock(ctx, node, `"l1_accepted"`)
	var rpcErr interface{ ErrorCode() int }
	switch {
	case err == nil && l1.Number != nil:
		h.Finalized = *l1.Number
	case err != nil && !errors.As(err, &rpcErr):
		return h, err
	}
	return h, nil
}

func blockHash(ctx context.Context, node portico.Caller, n uint64) (string, error) {
	b, err := getBlock(ctx, node, `{"block_number":`+strconv.FormatUint(n, 10)+`}`)
	return b.Hash, err
}
