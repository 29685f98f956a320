package starknetdevnet

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/families/starknet/starknettx"
	"github.com/porticohq/portico/jsonrpc"
)

// The reads a wallet needs besides the write API: getNonce, call (the fee
// token's balance, an account's key), estimateFee and
// getTransactionStatus.
//
// The devnet keeps the state of two blocks: the latest sealed one (in the
// database) and the pending one (in memory). A state read at another
// block is refused with -32602 naming block_id.

// atPending resolves a state read's block_id: true for the pending state,
// false for the latest block's.
func (d *Devnet) atPending(ctx context.Context, ref *blockRef, pos int) (bool, error) {
	switch ref.tag {
	case "pending", "pre_confirmed":
		return true, nil
	case "latest":
		return false, nil
	}
	n, err := d.resolve(ctx, ref)
	if err != nil {
		return false, err
	}
	switch {
	case n < 0 || uint64(n) > d.head.number:
		return false, ErrBlockNotFound
	case uint64(n) != d.head.number:
		return false, rpcparams.Errorf(pos, "block_id", "the devnet keeps the state of the latest block (%d) and the pending one only, not of block %d", d.head.number, n)
	}
	return false, nil
}

// nonceAt returns a contract's nonce in the pending or latest state;
// ok is false when it is not deployed there.
func (d *Devnet) nonceAt(ctx context.Context, addr Felt, pending bool) (nonce uint64, ok bool, err error) {
	if pending {
		c := d.world.contracts[addr.Bytes()]
		if c == nil {
			return 0, false, nil
		}
		return c.nonce, true, nil
	}
	a := addr.Bytes()
	err = d.db.QueryRowContext(ctx, `SELECT nonce FROM contracts WHERE address = ?`, a[:]).Scan(&nonce)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return nonce, err == nil, err
}

// storageIn reads a slot in the pending or latest state.
func (d *Devnet) storageIn(ctx context.Context, addr, key Felt, pending bool) (Felt, error) {
	if pending {
		return d.world.storageAt(addr, key), nil
	}
	a, k := addr.Bytes(), key.Bytes()
	var v []byte
	err := d.db.QueryRowContext(ctx, `SELECT value FROM storage WHERE address = ? AND key = ?`, a[:], k[:]).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return Felt{}, nil
	}
	return feltFromKey(v), err
}

func (d *Devnet) rpcGetNonce(ctx context.Context, params jsontext.Value) ([]byte, error) {
	return d.rpcContractField(ctx, params, func(ctx context.Context, addr Felt, pending bool) (Felt, bool, error) {
		n, ok, err := d.nonceAt(ctx, addr, pending)
		return starknettx.FeltU64(n), ok, err
	})
}

// rpcContractField answers a read of one field of a deployed contract
// (getNonce, getClassHashAt: block_id, contract_address) with read; a
// contract not deployed there is CONTRACT_NOT_FOUND.
func (d *Devnet) rpcContractField(ctx context.Context, params jsontext.Value, read func(ctx context.Context, addr Felt, pending bool) (Felt, bool, error)) ([]byte, error) {
	p, pos, err := splitParamsN(params, 2, "block_id", "contract_address")
	if err != nil {
		return nil, err
	}
	ref, err := decodeBlockID(p["block_id"], pos(0), "block_id")
	if err != nil {
		return nil, err
	}
	addr, err := decodeFelt(p["contract_address"], pos(1), "contract_address")
	if err != nil {
		return nil, err
	}
	pending, err := d.atPending(ctx, ref, pos(0))
	if err != nil {
		return nil, err
	}
	v, ok, err := read(ctx, addr, pending)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrContractNotFound
	}
	return appendFeltJSON(nil, &v), nil
}

// Entry points starknet_call answers: the fee token's balance (both
// spellings, as ERC-20s on Starknet export both) and an account's public
// key.
var (
	selBalanceOf    = starknettx.Selector("balanceOf")
	selBalanceOfSn  = starknettx.Selector("balance_of")
	selGetPublicKey = starknettx.Selector("get_public_key")
	selGetPubKeyCC  = starknettx.Selector("getPublicKey")
)

func (d *Devnet) rpcCall(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, pos, err := splitParamsN(params, 2, "request", "block_id")
	if err != nil {
		return nil, err
	}
	req, err := rpcparams.Object(p["request"], pos(0), "request", "contract_address", "entry_point_selector", "calldata")
	if err != nil {
		return nil, err
	}
	addr, err := decodeFelt(req["contract_address"], pos(0), "request.contract_address")
	if err != nil {
		return nil, err
	}
	sel, err := decodeFelt(req["entry_point_selector"], pos(0), "request.entry_point_selector")
	if err != nil {
		return nil, err
	}
	args, err := decodeFelts(req["calldata"], pos(0), "request.calldata")
	if err != nil {
		return nil, err
	}
	ref, err := decodeBlockID(p["block_id"], pos(1), "block_id")
	if err != nil {
		return nil, err
	}
	pending, err := d.atPending(ctx, ref, pos(1))
	if err != nil {
		return nil, err
	}
	if _, ok, err := d.nonceAt(ctx, addr, pending); err != nil || !ok {
		return nil, errors.Join(err, errIf(!ok, ErrContractNotFound))
	}
	var key Felt
	switch {
	case addr.Equal(&tokenAddress) && (sel.Equal(&selBalanceOf) || sel.Equal(&selBalanceOfSn)):
		if len(args) != 1 {
			return nil, contractError("balanceOf takes one argument, the account")
		}
		key = mapSlot(varBalances, args[0])
	case !addr.Equal(&tokenAddress) && (sel.Equal(&selGetPublicKey) || sel.Equal(&selGetPubKeyCC)):
		if len(args) != 0 {
			return nil, contractError("get_public_key takes no argument")
		}
		key = varPublicKey
	default:
		return nil, ErrEntrypointNotFound
	}
	v, err := d.storageIn(ctx, addr, key, pending)
	if err != nil {
		return nil, err
	}
	if key.Equal(&varPublicKey) {
		return appendFeltArray(nil, []Felt{v}), nil
	}
	return appendFeltArray(nil, []Felt{v, {}}), nil // a u256: low, high
}

// contractError is CONTRACT_ERROR with its revert reason.
func contractError(reason string) error {
	return &jsonrpc.Error{Code: 40, Message: "Contract error", Data: jsontext.Value(`{"revert_error":` + string(jsonString(reason)) + `}`)}
}

// decodeFelts reads an array of felts.
func decodeFelts(v jsontext.Value, pos int, field string) ([]Felt, error) {
	if len(v) == 0 {
		return nil, rpcparams.Errorf(pos, field, "missing; it is required")
	}
	items, err := rpcparams.Array(v, pos, field)
	if err != nil {
		return nil, err
	}
	out := make([]Felt, len(items))
	for i, it := range items {
		if out[i], err = decodeFelt(it, pos, rpcparams.Index(field, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d *Devnet) rpcEstimateFee(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, pos, err := splitParamsN(params, 1, "request", "simulation_flags", "block_id")
	if err != nil {
		return nil, err
	}
	items, err := rpcparams.Array(p["request"], pos(0), "request")
	if err != nil {
		return nil, err
	}
	validate := true
	if raw, ok := p["simulation_flags"]; ok && raw.Kind() != 'n' {
		flags, err := rpcparams.Array(raw, pos(1), "simulation_flags")
		if err != nil {
			return nil, err
		}
		for i, f := range flags {
			if _, err := rpcparams.Enum(f, pos(1), rpcparams.Index("simulation_flags", i), "SKIP_VALIDATE"); err != nil {
				return nil, err
			}
			validate = false
		}
	}
	if raw, ok := p["block_id"]; ok {
		ref, err := decodeBlockID(raw, pos(2), "block_id")
		if err != nil {
			return nil, err
		}
		if _, err := d.atPending(ctx, ref, pos(2)); err != nil {
			return nil, err
		}
	}
	ov := newOverlay()
	out := []byte{'['}
	for i, raw := range items {
		field := rpcparams.Index("request", i)
		var typ struct {
			Type string `json:"type"`
		}
		if raw.Kind() != '{' || json.Unmarshal(raw, &typ) != nil {
			return nil, rpcparams.Errorf(pos(0), field, "want a transaction object, got %s", rpcparams.Describe(raw))
		}
		var u *userTx
		switch typ.Type {
		case kindInvoke:
			tx, err := decodeTx(raw, pos(0), field, starknettx.DecodeInvoke)
			if err != nil {
				return nil, err
			}
			if u, err = d.prepareInvoke(tx, ov, validate, false); err != nil {
				return nil, executionError(i, err.Error())
			}
		case kindDeployAccount:
			tx, err := decodeTx(raw, pos(0), field, starknettx.DecodeDeployAccount)
			if err != nil {
				return nil, err
			}
			if u, err = d.prepareDeploy(tx, ov, validate, false); err != nil {
				return nil, executionError(i, err.Error())
			}
			ov.keys[u.sender.Bytes()] = u.pub
		default:
			return nil, rpcparams.Errorf(pos(0), field+".type", "the devnet estimates INVOKE and DEPLOY_ACCOUNT (version 3), got %q", typ.Type)
		}
		ov.nonces[u.sender.Bytes()] = u.nonce + 1
		if i > 0 {
			out = append(out, ',')
		}
		out = appendFeeEstimate(out, u.l2Gas, u.data)
	}
	return append(out, ']'), nil
}

// appendFeeEstimate renders a FEE_ESTIMATE in FRI.
func appendFeeEstimate(b []byte, l2, data uint64) []byte {
	hex := func(v uint64) string { return fmt.Sprintf(`"0x%x"`, v) }
	return fmt.Appendf(b, `{"l1_gas_consumed":"0x0","l1_gas_price":%s,"l2_gas_consumed":%s,"l2_gas_price":%s,"l1_data_gas_consumed":%s,"l1_data_gas_price":%s,"overall_fee":%s,"unit":"FRI"}`,
		hex(l1GasPriceFri), hex(l2), hex(l2GasFri), hex(data), hex(dataGasFri), hex(feeOf(l2, data)))
}

func (d *Devnet) rpcGetTransactionStatus(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, pos, err := splitParams(params, "transaction_hash")
	if err != nil {
		return nil, err
	}
	h, err := decodeFelt(p["transaction_hash"], pos(0), "transaction_hash")
	if err != nil {
		return nil, err
	}
	block, seen, err := d.txBlock(ctx, h)
	if err != nil {
		return nil, err
	}
	if !seen {
		return nil, ErrTxnHashNotFound
	}
	status := statusL2
	if block <= d.head.number && int64(block) <= d.l1Head() {
		status = statusL1
	}
	return []byte(`{"finality_status":"` + status + `","execution_status":"SUCCEEDED"}`), nil
}
