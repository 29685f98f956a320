package starknetdevnet

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/families/starknet/starknettx"
	"github.com/porticohq/portico/jsonrpc"
)

// SpecVersion is the spec version the devnet implements and reports; its
// results are checked against that version's OpenRPC schemas.
const SpecVersion = "0.8.1"

// maxBody bounds a request body.
const maxBody = 1 << 20

// newServer returns the devnet's JSON-RPC server: HTTP POST and
// WebSocket, through the shared jsonrpc.Server.
func newServer(d *Devnet) *jsonrpc.Server {
	return jsonrpc.NewServer(rpcHandler{d}, jsonrpc.ServerOptions{Limits: jsonrpc.Limits{MaxBodyBytes: maxBody, Conn: connLimits}, Logger: d.log})
}

// rpcHandler is the jsonrpc.Handler of the devnet.
type rpcHandler struct{ d *Devnet }

// method is one RPC method: params in, result JSON out.
type method func(d *Devnet, ctx context.Context, params jsontext.Value) ([]byte, error)

// methods is the devnet's method table, by starknet_ name; rollup_ names
// map onto it.
var methods = map[string]method{
	"starknet_specVersion": func(*Devnet, context.Context, jsontext.Value) ([]byte, error) {
		return []byte(`"` + SpecVersion + `"`), nil
	},
	"starknet_chainId":               (*Devnet).rpcChainID,
	"starknet_blockNumber":           (*Devnet).rpcBlockNumber,
	"starknet_blockHashAndNumber":    (*Devnet).rpcBlockHashAndNumber,
	"starknet_getBlockWithTxHashes":  (*Devnet).rpcGetBlockWithTxHashes,
	"starknet_getTransactionReceipt": (*Devnet).rpcGetTransactionReceipt,
	"starknet_getEvents":             (*Devnet).rpcGetEvents,
	"starknet_getStateUpdate":        (*Devnet).rpcGetStateUpdate,

	// State reads (state_reads.go, proof.go).
	"starknet_getStorageAt":    (*Devnet).rpcGetStorageAt,
	"starknet_getClassHashAt":  (*Devnet).rpcGetClassHashAt,
	"starknet_getStorageProof": (*Devnet).rpcGetStorageProof,

	// What a wallet needs (wallet_reads.go, write.go); the two add methods
	// run under the write lock (writes).
	"starknet_getNonce":                    (*Devnet).rpcGetNonce,
	"starknet_call":                        (*Devnet).rpcCall,
	"starknet_estimateFee":                 (*Devnet).rpcEstimateFee,
	"starknet_getTransactionStatus":        (*Devnet).rpcGetTransactionStatus,
	"starknet_addInvokeTransaction":        (*Devnet).rpcAddInvokeTransaction,
	"starknet_addDeployAccountTransaction": (*Devnet).rpcAddDeployAccountTransaction,

	// The WebSocket API (subscriptions.go); over HTTP they answer -32601.
	"starknet_subscribeNewHeads":            (*Devnet).rpcSubscribeNewHeads,
	"starknet_subscribeEvents":              (*Devnet).rpcSubscribeEvents,
	"starknet_subscribeTransactionStatus":   (*Devnet).rpcSubscribeTransactionStatus,
	"starknet_subscribePendingTransactions": (*Devnet).rpcSubscribePendingTransactions,
	"starknet_unsubscribe":                  (*Devnet).rpcUnsubscribe,
}

// writes are the methods that change the pending block: they run under
// the write lock.
var writes = map[string]bool{"starknet_addInvokeTransaction": true, "starknet_addDeployAccountTransaction": true}

// ServeRPC answers one call; methods give their results as JSON.
func (h rpcHandler) ServeRPC(ctx context.Context, method string, params jsontext.Value) (any, error) {
	res, err := h.d.call(ctx, method, params)
	if err != nil {
		return nil, err
	}
	return jsontext.Value(res), nil
}

// call runs one method under the read lock (the write lock for writes).
func (d *Devnet) call(ctx context.Context, name string, params jsontext.Value) ([]byte, error) {
	if rest, ok := strings.CutPrefix(name, "rollup_"); ok {
		name = "starknet_" + rest
	}
	m, ok := methods[name]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + name}
	}
	if writes[name] {
		d.mu.Lock()
		defer d.mu.Unlock()
	} else {
		d.mu.RLock()
		defer d.mu.RUnlock()
	}
	if d.db == nil || d.closed {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "devnet is not running"}
	}
	return m(d, ctx, params)
}

// noParams accepts absent or empty params.
func noParams(params jsontext.Value) error {
	s := strings.TrimSpace(string(params))
	if s == "" || s == "[]" || s == "{}" || s == "null" {
		return nil
	}
	return rpcparams.Errorf(0, "", "this method takes no params, got %s", rpcparams.Describe(params))
}

func (d *Devnet) rpcChainID(_ context.Context, params jsontext.Value) ([]byte, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	return appendFeltJSON(nil, &d.chain.chainID), nil
}

func (d *Devnet) rpcBlockNumber(_ context.Context, params jsontext.Value) ([]byte, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	return appendUint(nil, d.head.number), nil
}

func (d *Devnet) rpcBlockHashAndNumber(_ context.Context, params jsontext.Value) ([]byte, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	b := append([]byte(`{"block_hash":`), appendFeltJSON(nil, &d.head.hash)...)
	b = append(b, `,"block_number":`...)
	b = appendUint(b, d.head.number)
	return append(b, '}'), nil
}

// blockParam decodes the {block_id} or [block_id] params.
func blockParam(params jsontext.Value, names ...string) (*blockRef, map[string]jsontext.Value, func(int) int, error) {
	p, pos, err := splitParams(params, names...)
	if err != nil {
		return nil, nil, nil, err
	}
	ref, err := decodeBlockID(p["block_id"], pos(0), "block_id")
	return ref, p, pos, err
}

// sealedBlock returns the stored block a reference names, or
// ErrBlockNotFound. pending reports a pending tag instead.
func (d *Devnet) lookupBlock(ctx context.Context, ref *blockRef) (b *blockRow, pending bool, err error) {
	if ref.tag == "pending" || ref.tag == "pre_confirmed" {
		return nil, true, nil
	}
	n, err := d.resolve(ctx, ref)
	if err != nil {
		return nil, false, err
	}
	if n < 0 || uint64(n) > d.head.number {
		return nil, false, ErrBlockNotFound
	}
	b, err = scanBlock(d.db.QueryRowContext(ctx, `SELECT `+blockColumns+` FROM blocks WHERE number = ?`, n))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, ErrBlockNotFound
	}
	return b, false, err
}

func (d *Devnet) rpcGetStateUpdate(ctx context.Context, params jsontext.Value) ([]byte, error) {
	ref, p, pos, err := blockParam(params, "block_id", "contract_addresses")
	if err != nil {
		return nil, err
	}
	if _, ok := p["contract_addresses"]; ok {
		return nil, rpcparams.Errorf(pos(1), "contract_addresses", "not in spec %s, which the devnet serves", SpecVersion)
	}
	b, pending, err := d.lookupBlock(ctx, ref)
	if err != nil {
		return nil, err
	}
	if pending {
		out := append([]byte(`{"old_root":`), appendFeltJSON(nil, &d.pending.oldRoot)...)
		out = append(out, `,"state_diff":`...)
		out = appendStateDiff(out, d.pending.diff)
		return append(out, '}'), nil
	}
	out := append([]byte(`{"block_hash":`), appendFeltJSON(nil, &b.hash)...)
	out = append(out, `,"old_root":`...)
	out = appendFeltJSON(out, &b.oldRoot)
	out = append(out, `,"new_root":`...)
	out = appendFeltJSON(out, &b.newRoot)
	out = append(out, `,"state_diff":`...)
	out = append(out, b.stateDiff...)
	return append(out, '}'), nil
}

func (d *Devnet) rpcGetBlockWithTxHashes(ctx context.Context, params jsontext.Value) ([]byte, error) {
	ref, _, _, err := blockParam(params, "block_id")
	if err != nil {
		return nil, err
	}
	b, pending, err := d.lookupBlock(ctx, ref)
	if err != nil {
		return nil, err
	}
	if pending {
		p := d.pending
		out := []byte(`{"transactions":[`)
		for i, t := range p.txs {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendFeltJSON(out, &t.hash)
		}
		out = append(out, `],"parent_hash":`...)
		out = appendFeltJSON(out, &p.parent)
		out = appendHeaderTail(out, p.timestamp)
		return append(out, '}'), nil
	}
	out := []byte(`{"status":"` + d.blockStatus(b.number) + `",`)
	out = appendSealedHeader(out, b)
	out = append(out, `,"transactions":[`...)
	rows, err := d.db.QueryContext(ctx, `SELECT hash FROM txs WHERE block = ? ORDER BY idx`, b.number)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		var h []byte
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		f := feltFromKey(h)
		out = appendFeltJSON(out, &f)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return append(out, "]}"...), nil
}

// blockStatus is ACCEPTED_ON_L1 up to the L1 head, ACCEPTED_ON_L2 after.
func (d *Devnet) blockStatus(n uint64) string {
	if int64(n) <= d.l1Head() {
		return "ACCEPTED_ON_L1"
	}
	return "ACCEPTED_ON_L2"
}

func (d *Devnet) rpcGetTransactionReceipt(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, pos, err := splitParams(params, "transaction_hash")
	if err != nil {
		return nil, err
	}
	h, err := decodeFelt(p["transaction_hash"], pos(0), "transaction_hash")
	if err != nil {
		return nil, err
	}
	for _, t := range d.pending.txs {
		if t.hash.Equal(&h) {
			return appendReceipt(nil, t, t.events, "ACCEPTED_ON_L2", nil, 0), nil
		}
	}
	hb := h.Bytes()
	var t txn
	var block, idx uint64
	var sender []byte
	err = d.db.QueryRowContext(ctx, `SELECT block, idx, kind, sender, fee, l1_gas, l1_data_gas, l2_gas, deployed FROM txs WHERE hash = ?`, hb[:]).
		Scan(&block, &idx, &t.kind, &sender, &t.fee, &t.l1Gas, &t.dataGas, &t.l2Gas, &t.deployed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrTxnHashNotFound
	}
	if err != nil {
		return nil, err
	}
	t.hash, t.sender = h, feltFromKey(sender)
	var bh []byte
	if err := d.db.QueryRowContext(ctx, `SELECT hash FROM blocks WHERE number = ?`, block).Scan(&bh); err != nil {
		return nil, err
	}
	blockHash := feltFromKey(bh)
	rows, err := d.db.QueryContext(ctx, `SELECT e.block, e.pos, b.hash, b.hash, e.address, e.key0, e.keys, e.data
		FROM events e JOIN blocks b ON b.number = e.block WHERE e.block = ? AND e.tx = ? ORDER BY e.pos`, block, idx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var evs []event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		evs = append(evs, e.ev)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	status := "ACCEPTED_ON_L2"
	if int64(block) <= d.l1Head() {
		status = "ACCEPTED_ON_L1"
	}
	return appendReceipt(nil, &t, evs, status, &blockHash, block), nil
}

// appendReceipt renders a TXN_RECEIPT_WITH_BLOCK_INFO; blockHash is nil
// for a pending transaction, which then has no block members.
func appendReceipt(b []byte, t *txn, evs []event, status string, blockHash *Felt, block uint64) []byte {
	fee := starknettx.FeltU64(t.fee)
	b = append(b, `{"type":"`+t.kind+`","transaction_hash":`...)
	b = appendFeltJSON(b, &t.hash)
	b = append(b, `,"actual_fee":{"amount":`...)
	b = appendFeltJSON(b, &fee)
	b = append(b, `,"unit":"FRI"},"execution_status":"SUCCEEDED","finality_status":"`+status+`"`...)
	if blockHash != nil {
		b = append(b, `,"block_hash":`...)
		b = appendFeltJSON(b, blockHash)
		b = append(b, `,"block_number":`...)
		b = appendUint(b, block)
	}
	b = append(b, `,"messages_sent":[],"events":[`...)
	for i := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendEventBody(b, &evs[i])
		b = append(b, '}')
	}
	b = append(b, `],"execution_resources":{"l1_gas":`...)
	b = appendUint(b, t.l1Gas)
	b = append(b, `,"l1_data_gas":`...)
	b = appendUint(b, t.dataGas)
	b = append(b, `,"l2_gas":`...)
	b = appendUint(b, t.l2Gas)
	b = append(b, '}')
	if t.deployed {
		b = append(b, `,"contract_address":`...)
		b = appendFeltJSON(b, &t.sender)
	}
	return append(b, '}')
}

func (d *Devnet) rpcGetEvents(ctx context.Context, params jsontext.Value) ([]byte, error) {
	f, err := decodeEventsParams(params)
	if err != nil {
		return nil, err
	}
	events, token, err := d.getEvents(ctx, f)
	if err != nil {
		return nil, err
	}
	return appendEventsChunk(nil, events, token), nil
}
