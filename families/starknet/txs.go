package starknet

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// This file holds how the family's transactions are sent and followed: an
// invoke's or a deploy-account's hash is computed from the transaction
// with the family's hashing code (it commits to the chain id, so it is
// computed once the network knows its chain), so that the send is
// broadcast and each node's answer ({"transaction_hash": …}) checked
// against it; a transaction has landed once its receipt names a block of
// the served chain, and a node holds it while
// starknet_getTransactionStatus knows it.

// sendRules are the rules of the methods that send a transaction whose
// hash Portico computes.
func sendRules() []portico.Method {
	return []portico.Method{
		{Name: "starknet_addInvokeTransaction", Write: true, Params: sendParams("invoke_transaction", invokeHash)},
		{Name: "starknet_addDeployAccountTransaction", Write: true, Params: sendParams("deploy_account_transaction", deployHash)},
	}
}

// txHasher reads a transaction object and returns its hash on a chain,
// and the answer a node that took it gives.
type txHasher func(tx jsontext.Value) (hash func(chain starknettx.Felt) starknettx.Felt, answer func(hash string) jsontext.Value, ok bool)

// sendParams reads {name} (or [name]) and says how the hash is
// computed; a transaction Portico cannot read is left for the nodes to
// judge, sent once to each as any other.
func sendParams(name string, hasher txHasher) func(jsontext.Value) (portico.Params, error) {
	return func(raw jsontext.Value) (portico.Params, error) {
		out := portico.Params{Send: raw, Cache: portico.NotCacheable}
		p, _, err := splitParams(raw, 1, name)
		if err != nil {
			return portico.Params{}, err
		}
		hash, answer, ok := hasher(p[name])
		if !ok {
			return out, nil
		}
		out.TxHashOn = func(chain string) (string, bool) {
			id, err := starknettx.ParseFelt(chain)
			if err != nil {
				return "", false
			}
			h := hash(id)
			return starknettx.Hex(&h), true
		}
		out.TxAnswer, out.TxResult = answeredHash, answer
		return out, nil
	}
}

// invokeHash reads an INVOKE v3.
func invokeHash(tx jsontext.Value) (func(starknettx.Felt) starknettx.Felt, func(string) jsontext.Value, bool) {
	t, err := starknettx.DecodeInvoke(tx)
	if err != nil {
		return nil, nil, false
	}
	return t.Hash, func(h string) jsontext.Value { return jsontext.Value(`{"transaction_hash":"` + h + `"}`) }, true
}

// deployHash reads a DEPLOY_ACCOUNT v3; its answer names the account.
func deployHash(tx jsontext.Value) (func(starknettx.Felt) starknettx.Felt, func(string) jsontext.Value, bool) {
	t, err := starknettx.DecodeDeployAccount(tx)
	if err != nil {
		return nil, nil, false
	}
	addr := t.Address()
	return t.Hash, func(h string) jsontext.Value {
		return jsontext.Value(`{"transaction_hash":"` + h + `","contract_address":"` + starknettx.Hex(&addr) + `"}`)
	}, true
}

// answeredHash reads the transaction_hash of a send's answer.
func answeredHash(res jsontext.Value) string {
	var a struct {
		Hash string `json:"transaction_hash"`
	}
	if json.Unmarshal(res, &a) != nil {
		return ""
	}
	return a.Hash
}

// txRules are how a sent transaction is followed.
func txRules() portico.TxRules {
	byHash := func(method string) func(string) (string, jsontext.Value) {
		return func(hash string) (string, jsontext.Value) {
			return method, jsontext.Value(`{"transaction_hash":"` + hash + `"}`)
		}
	}
	return portico.TxRules{
		Landed: byHash("starknet_getTransactionReceipt"),
		Where:  receiptBlock,
		Held:   byHash("starknet_getTransactionStatus"),
		Holds:  func(res jsontext.Value) bool { return len(res) > 0 && res.Kind() == '{' },
	}
}

// receiptBlock reads the block a receipt is in; a pre-confirmed receipt
// names none yet.
func receiptBlock(res jsontext.Value) (portico.Header, bool) {
	var r struct {
		BlockHash   string  `json:"block_hash"`
		BlockNumber *uint64 `json:"block_number"`
	}
	if json.Unmarshal(res, &r) != nil || r.BlockHash == "" || r.BlockNumber == nil {
		return portico.Header{}, false
	}
	return portico.Header{Number: *r.BlockNumber, Hash: r.BlockHash}, true
}
