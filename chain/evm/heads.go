package evm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// Chain is how EVM nodes are tracked: the chain id names the chain;
// heads are the latest, safe and finalized blocks (nodes that know no
// safe or finalized block leave them 0); block hashes reveal reorgs.
func Chain() portico.Chain {
	return portico.Chain{
		Identity:     identity,
		Heads:        heads,
		BlockHash:    blockHash,
		Tags:         map[string]portico.Head{"latest": portico.HeadLatest, "safe": portico.HeadSafe, "finalized": portico.HeadFinalized},
		PollInterval: time.Second,
		MaxLag:       10,
	}
}

func identity(ctx context.Context, node portico.Caller) (string, error) {
	res, err := node.Call(ctx, "eth_chainId", nil, nil)
	if err != nil {
		return "", err
	}
	var id string
	if err := json.Unmarshal(res, &id); err != nil || !strings.HasPrefix(id, "0x") {
		return "", fmt.Errorf("eth_chainId: not a quantity: %.40s", res)
	}
	return strings.ToLower(id), nil
}

// header is what tracking reads of a block.
type header struct {
	Number string `json:"number"`
	Hash   string `json:"hash"`
}

// readBlock reads the number and hash of a block by tag or number; a node
// without such a block answers null, which is (0, "", nil).
func readBlock(ctx context.Context, node portico.Caller, id string) (uint64, string, error) {
	res, err := node.Call(ctx, "eth_getBlockByNumber", jsontext.Value(`["`+id+`",false]`), nil)
	if err != nil {
		return 0, "", err
	}
	if string(res) == "null" {
		return 0, "", nil
	}
	var h header
	if err := json.Unmarshal(res, &h, json.RejectUnknownMembers(false)); err != nil {
		return 0, "", fmt.Errorf("eth_getBlockByNumber: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(h.Number, "0x"), 16, 64)
	if err != nil {
		return 0, "", fmt.Errorf("eth_getBlockByNumber: block number %q", h.Number)
	}
	return n, strings.ToLower(h.Hash), nil
}

func heads(ctx context.Context, node portico.Caller) (portico.Heads, error) {
	var h portico.Heads
	var err error
	if h.Latest, h.Hash, err = readBlock(ctx, node, "latest"); err != nil {
		return h, err
	}
	// Nodes before the merge, and some dev nodes, know no safe or
	// finalized block: their JSON-RPC error leaves the head at 0.
	var rpcErr interface{ ErrorCode() int }
	if h.Safe, _, err = readBlock(ctx, node, "safe"); err != nil && !errors.As(err, &rpcErr) {
		return h, err
	}
	if h.Finalized, _, err = readBlock(ctx, node, "finalized"); err != nil && !errors.As(err, &rpcErr) {
		return h, err
	}
	return h, nil
}

func blockHash(ctx context.Context, node portico.Caller, n uint64) (string, error) {
	_, hash, err := readBlock(ctx, node, "0x"+strconv.FormatUint(n, 16))
	return hash, err
}
