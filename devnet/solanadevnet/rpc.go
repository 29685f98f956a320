package solanadevnet

import (
	"io"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/rpcparams"
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

// Handler returns the JSON-RPC 2.0 handler: HTTP POST, single calls and
// batches. Before Start (or after Close) every call fails with an internal
// error that says the devnet is not running.
func (d *Devnet) Handler() http.Handler {
	return http.HandlerFunc(d.serveHTTP)
}

func (d *Devnet) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "JSON-RPC wants POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, jsonrpc.AppendError(nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "request body too large"}))
		return
	}
	writeJSON(w, http.StatusOK, d.serve(body))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// serve answers a request body; it returns nil when only notifications
// came.
func (d *Devnet) serve(body []byte) []byte {
	calls, batch, derr := jsonrpc.Decode(body)
	if derr != nil {
		return jsonrpc.AppendError(nil, nil, derr)
	}
	if batch && len(calls) > maxBatch {
		return jsonrpc.AppendError(nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: batch of more than 1000 calls"})
	}
	var out []byte
	if batch {
		out = append(out, '[')
	}
	n := 0
	for _, c := range calls {
		if c.Err == nil && c.IsNotification() {
			d.call(c.Method, c.Params) // run it, answer nothing
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		if c.Err != nil {
			out = jsonrpc.AppendError(out, c.ID, c.Err)
			continue
		}
		result, e := d.call(c.Method, c.Params)
		if e != nil {
			out = jsonrpc.AppendError(out, c.ID, e)
		} else {
			out = jsonrpc.AppendResult(out, c.ID, result)
		}
	}
	if batch {
		if n == 0 {
			return nil
		}
		out = append(out, ']')
	}
	return out
}

// call runs one method and encodes its result.
func (d *Devnet) call(name string, params jsontext.Value) (jsontext.Value, *jsonrpc.Error) {
	m := lookup(name)
	if m == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
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
	out, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		d.log.Warn("solana devnet: encoding a result", "method", name, "err", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error"}
	}
	return out, nil
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
