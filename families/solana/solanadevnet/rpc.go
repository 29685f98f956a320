package solanadevnet

import (
	"context"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/jsonrpc"
)

// maxBodyBytes bounds a request body (a batch of large transactions fits).
const maxBodyBytes = 16 << 20

// maxBatch bounds the calls in one batch.
const maxBatch = 1000

// method answers one JSON-RPC method.
type method func(d *Devnet, params jsontext.Value) (any, error)

// lookup returns the method serving name, or nil.
func lookup(name string) method {
	switch name {
	case "getAccountInfo":
		return (*Devnet).getAccountInfo
	case "getBalance":
		return (*Devnet).getBalance
	case "getBlock":
		return (*Devnet).getBlock
	case "getBlockHeight":
		return (*Devnet).getBlockHeight
	case "getBlocks":
		return (*Devnet).getBlocks
	case "getEpochInfo":
		return (*Devnet).getEpochInfo
	case "getFirstAvailableBlock":
		return (*Devnet).getFirstAvailableBlock
	case "getGenesisHash":
		return (*Devnet).getGenesisHash
	case "getHealth":
		return (*Devnet).getHealth
	case "getLatestBlockhash":
		return (*Devnet).getLatestBlockhash
	case "isBlockhashValid":
		return (*Devnet).isBlockhashValid
	case "getSignatureStatuses":
		return (*Devnet).getSignatureStatuses
	case "getSignaturesForAddress":
		return (*Devnet).getSignaturesForAddress
	case "getSlot":
		return (*Devnet).getSlot
	case "getTransaction":
		return (*Devnet).getTransaction
	case "getVersion":
		return (*Devnet).getVersion
	case "requestAirdrop":
		return (*Devnet).requestAirdrop
	case "sendTransaction":
		return (*Devnet).sendTransaction
	}
	return nil
}

// limits are the devnet's server limits: a batch of large transactions
// fits in a body.
var limits = jsonrpc.Limits{MaxBodyBytes: maxBodyBytes, MaxBatch: maxBatch}

// Handler returns the JSON-RPC 2.0 handler: HTTP POST (single calls and
// batches) and WebSocket, through the shared jsonrpc.Server. Before Start
// (or after Close) every call fails with an internal error that says the
// devnet is not running.
func (d *Devnet) Handler() http.Handler { return d.rpc }

// serve answers a request body; it returns nil when only notifications
// came.
func (d *Devnet) serve(body []byte) []byte {
	out, _ := d.rpc.Serve(context.Background(), body, nil)
	return out
}

// ServeRPC answers one call: the jsonrpc.Handler of the devnet's server.
// The PubSub methods (slotSubscribe and the rest) need the WebSocket the
// call came over, which ctx carries.
func (d *Devnet) ServeRPC(ctx context.Context, name string, params jsontext.Value) (any, error) {
	m := lookup(name)
	if m == nil {
		sm := lookupSub(name)
		if sm == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
		}
		m = func(d *Devnet, params jsontext.Value) (any, error) { return sm(d, ctx, params) }
	}
	d.mu.RLock()
	running := d.led != nil && !d.closed
	d.mu.RUnlock()
	if !running {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the devnet is not running"}
	}
	v, err := m(d, params)
	if err != nil {
		e, internal := toRPCError(err)
		if internal {
			d.log.Warn("solana devnet: method failed", "method", name, "err", err)
		}
		return nil, e
	}
	return v, nil
}

// config decodes an optional config object: null or absent is empty.
// Unknown fields are ignored, as agave ignores them; a repeated field is an
// error.
func config(p []jsontext.Value, i int, name string) (map[string]jsontext.Value, error) {
	if len(p) <= i || p[i].Kind() == 'n' {
		return map[string]jsontext.Value{}, nil
	}
	if p[i].Kind() != '{' {
		return nil, rpcparams.Errorf(i+1, name, "want an object, got %s", rpcparams.Describe(p[i]))
	}
	var m map[string]jsontext.Value
	if err := json.Unmarshal(p[i], &m); err != nil {
		return nil, rpcparams.Errorf(i+1, name, "malformed object: %v", err)
	}
	return m, nil
}

// commitmentOf reads config.commitment; minimum is the lowest level the
// method serves.
func commitmentOf(cfg map[string]jsontext.Value, pos int, field string, minimum commitment) (commitment, error) {
	v, ok := cfg["commitment"]
	if !ok || v.Kind() == 'n' {
		return finalized, nil
	}
	s, err := rpcparams.Enum(v, pos, field+".commitment", "processed", "confirmed", "finalized")
	if err != nil {
		return 0, err
	}
	c := map[string]commitment{"processed": processed, "confirmed": confirmed, "finalized": finalized}[s]
	if c < minimum {
		return 0, invalidParams("Method does not support commitment below `confirmed`")
	}
	return c, nil
}
