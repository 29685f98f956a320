package solana

import (
	"context"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// Chain is how slot-chain nodes are tracked: the genesis hash names the
// chain; heads are the slots at the three commitments, processed
// (Latest), confirmed (Safe) and finalized. The gateway caches nothing
// below finalized on this family, so no block hashes are followed.
func Chain() portico.Chain {
	return portico.Chain{
		Identity:     identity,
		Heads:        heads,
		Tags:         map[string]portico.Head{"processed": portico.HeadLatest, "confirmed": portico.HeadSafe, "finalized": portico.HeadFinalized},
		PollInterval: time.Second,
		MaxLag:       50,
	}
}

func identity(ctx context.Context, node portico.Caller) (string, error) {
	res, err := node.Call(ctx, "getGenesisHash", nil, nil)
	if err != nil {
		return "", err
	}
	var h string
	if err := json.Unmarshal(res, &h); err != nil || h == "" {
		return "", fmt.Errorf("getGenesisHash: not a hash: %.60s", res)
	}
	return h, nil
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

func heads(ctx context.Context, node portico.Caller) (portico.Heads, error) {
	var h portico.Heads
	var err error
	if h.Latest, err = slot(ctx, node, "processed"); err != nil {
		return h, err
	}
	if h.Safe, err = slot(ctx, node, "confirmed"); err != nil {
		return h, err
	}
	h.Finalized, err = slot(ctx, node, "finalized")
	return h, err
}
