package evm

import (
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// This file holds how the family's signed transactions are sent and
// followed: each send's hash is computed from its bytes (so that the send
// is broadcast and every node's answer checked against it),
// eth_sendRawTransactionSync (EIP-7966) is served by the gateway itself
// (a send, then a wait for the receipt on the served chain), and the
// receipt and the transaction by hash tell where a sent transaction is.

// maxSyncTimeout is the largest timeout eth_sendRawTransactionSync's
// params may name, in milliseconds (a day); the network holds the wait
// to its own, much smaller, bound.
const maxSyncTimeout = 24 * 60 * 60 * 1000

// sendRaw is the method a sync send is sent as.
var sendRaw = &portico.Method{Name: "eth_sendRawTransaction", Write: true, Params: sendRawParams}

// sendRules are the rules of the methods that send a signed transaction.
func sendRules() []portico.Method {
	return []portico.Method{
		*sendRaw,
		{Name: "eth_sendRawTransactionSync", Write: true, Params: sendSyncParams},
	}
}

// txRules are how a sent transaction is followed: its receipt says where
// it landed, the transaction by hash whether a node holds it.
func txRules() portico.TxRules {
	return portico.TxRules{
		Landed: func(hash string) (string, jsontext.Value) {
			return "eth_getTransactionReceipt", jsontext.Value(`["` + hash + `"]`)
		},
		Where: receiptBlock,
		Held: func(hash string) (string, jsontext.Value) {
			return "eth_getTransactionByHash", jsontext.Value(`["` + hash + `"]`)
		},
		Holds: func(res jsontext.Value) bool { return len(res) > 0 && res.Kind() == '{' },
	}
}

// receiptBlock reads the block a receipt is in; a null receipt is in
// none.
func receiptBlock(res jsontext.Value) (portico.Header, bool) {
	var r struct {
		BlockHash   string          `json:"blockHash"`
		BlockNumber *hexutil.Uint64 `json:"blockNumber"`
	}
	if len(res) == 0 || res.Kind() != '{' || json.Unmarshal(res, &r) != nil || r.BlockHash == "" || r.BlockNumber == nil {
		return portico.Header{}, false
	}
	return portico.Header{Number: uint64(*r.BlockNumber), Hash: r.BlockHash}, true
}

// txHash is the hash of the signed transaction in v (a hex string), and
// false when v is not one.
func txHash(v jsontext.Value) (string, bool) {
	var data hexutil.Bytes
	if json.Unmarshal(v, &data) != nil {
		return "", false
	}
	var tx types.Transaction
	if tx.UnmarshalBinary(data) != nil {
		return "", false
	}
	return tx.Hash().Hex(), true
}

// sendRawParams reads [signedTransaction]: what the node gets is the
// call's own bytes; a transaction that does not decode is left for the
// node to refuse in its own words.
func sendRawParams(raw jsontext.Value) (portico.Params, error) {
	out := portico.Params{Send: raw, Cache: portico.NotCacheable}
	p, err := rpcparams.Positional(raw, 1, "signedTransaction")
	if err != nil || len(p) != 1 {
		return out, nil
	}
	out.TxHash, _ = txHash(p[0])
	return out, nil
}

// sendSyncParams checks [signedTransaction, timeoutMs?] of
// eth_sendRawTransactionSync: the transaction must decode (its hash is
// what the wait follows); the timeout is a number of milliseconds, as a
// JSON integer (EIP-7966's example) or a hex quantity (viem's). The
// transaction is sent with eth_sendRawTransaction, which every node
// serves.
func sendSyncParams(raw jsontext.Value) (portico.Params, error) {
	p, err := rpcparams.Positional(raw, 1, "signedTransaction", "timeoutMs")
	if err != nil {
		return portico.Params{}, err
	}
	hash, ok := txHash(p[0])
	if !ok {
		return portico.Params{}, rpcparams.Errorf(1, "signedTransaction", "want a signed transaction, RLP-encoded in hex, got %s", rpcparams.Describe(p[0]))
	}
	var ms uint64
	if len(p) == 2 && p[1].Kind() == '"' {
		ms, err = quantity(p[1], 2, "timeoutMs", 64)
	} else if len(p) == 2 && p[1].Kind() != 'n' {
		ms, err = rpcparams.Uint(p[1], 2, "timeoutMs", maxSyncTimeout)
	}
	if err != nil {
		return portico.Params{}, err
	}
	send := append(append(jsontext.Value(`[`), p[0]...), ']')
	return portico.Params{Send: send, Cache: portico.NotCacheable, TxHash: hash,
		Wait: &portico.TxWait{Send: sendRaw, SendParams: send, Timeout: time.Duration(min(ms, maxSyncTimeout)) * time.Millisecond}}, nil
}
