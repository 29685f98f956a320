package evm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/heads"
)

// Chain is how EVM nodes are tracked: the chain id names the chain;
// heads are the latest, safe and finalized blocks (nodes that know no
// safe or finalized block leave them 0); block hashes reveal reorgs.
func Chain() portico.Chain {
	reader := &heads.Reader{
		IdentityMethod: "eth_chainId", IdentityWant: "a quantity", IdentityShow: 40,
		Identity: func(id string) (string, bool) { return strings.ToLower(id), strings.HasPrefix(id, "0x") },
		// Nodes before the merge, and some dev nodes, know no safe or
		// finalized block: their JSON-RPC error leaves the head at 0.
		Marks: []heads.Mark{{Tag: "latest", Head: portico.HeadLatest}, {Tag: "safe", Head: portico.HeadSafe, Optional: true},
			{Tag: "finalized", Head: portico.HeadFinalized, Optional: true}},
		Mark: func(ctx context.Context, node portico.Caller, tag string) (portico.Header, bool, error) {
			h, err := readBlock(ctx, node, "eth_getBlockByNumber", tag)
			return h, err == nil, err
		},
		Head: portico.HeadLatest,
	}
	return portico.Chain{
		Identity:     reader.ReadIdentity,
		Heads:        reader.Heads,
		Header:       blockHeader,
		Tags:         map[string]portico.Head{"latest": portico.HeadLatest, "safe": portico.HeadSafe, "finalized": portico.HeadFinalized},
		PollInterval: time.Second,
		MaxLag:       10,
	}
}

// header is what tracking reads of a block.
type header struct {
	Number     string `json:"number"`
	Hash       string `json:"hash"`
	ParentHash string `json:"parentHash"`
}

// readBlock reads a block's header by tag, number or hash (method says
// which); a node without such a block answers null, which is the zero
// Header and no error.
func readBlock(ctx context.Context, node portico.Caller, method, id string) (portico.Header, error) {
	res, err := node.Call(ctx, method, jsontext.Value(`["`+id+`",false]`), nil)
	if err != nil {
		return portico.Header{}, err
	}
	if string(res) == "null" {
		return portico.Header{}, nil
	}
	var h header
	if err := json.Unmarshal(res, &h, json.RejectUnknownMembers(false)); err != nil {
		return portico.Header{}, fmt.Errorf("%s: %w", method, err)
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(h.Number, "0x"), 16, 64)
	if err != nil {
		return portico.Header{}, fmt.Errorf("%s: block number %q", method, h.Number)
	}
	out := portico.Header{Number: n, Hash: strings.ToLower(h.Hash), Parent: strings.ToLower(h.ParentHash)}
	if n > 0 {
		out.ParentNumber = n - 1
	}
	return out, nil
}

// blockHeader reads a block's header by its hash: a node may have
// another block at that number.
func blockHeader(ctx context.Context, node portico.Caller, _ uint64, hash string) (portico.Header, error) {
	h, err := readBlock(ctx, node, "eth_getBlockByHash", hash)
	if err == nil && h.Hash == "" {
		err = fmt.Errorf("eth_getBlockByHash: block %s: %w", hash, portico.ErrNoBlock)
	}
	return h, err
}
