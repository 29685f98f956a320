package solana

import (
	"encoding/base64"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/mr-tron/base58"

	"github.com/porticohq/portico"
)

// This file holds how the family's sent transactions are followed, as
// the staked-connection senders do: a transaction's id is its first
// signature, read from its bytes (so that sendTransaction is broadcast
// and each node's answer checked against it); it has landed once
// getSignatureStatuses says confirmed; no node says it holds a
// transaction it has not put in a block, so one that has not landed is
// sent again at every check until its recent blockhash is no longer valid
// (isBlockhashValid), and then it is let go as expired.

// sendTxParams checks sendTransaction's params and reads the
// transaction's first signature and recent blockhash.
func sendTxParams(raw jsontext.Value) (portico.Params, error) {
	if err := SendTransactionParams(raw); err != nil {
		return portico.Params{}, err
	}
	out := portico.Params{Send: raw, Cache: portico.NotCacheable}
	if sig, _, ok := sentTx(raw); ok {
		out.TxHash = sig
	}
	return out, nil
}

// txRules are how a sent transaction is followed.
func txRules() portico.TxRules {
	return portico.TxRules{
		Landed: func(sig string) (string, jsontext.Value) {
			return "getSignatureStatuses", jsontext.Value(`[["` + sig + `"],{"searchTransactionHistory":false}]`)
		},
		Where: signatureLanded,
		Expiry: func(params jsontext.Value) (string, jsontext.Value, bool) {
			_, hash, ok := sentTx(params)
			if !ok {
				return "", nil, false
			}
			return "isBlockhashValid", jsontext.Value(`["` + hash + `",{"commitment":"processed"}]`), true
		},
		Expired: func(res jsontext.Value) bool {
			var v struct {
				Value *bool `json:"value"`
			}
			return json.Unmarshal(res, &v) == nil && v.Value != nil && !*v.Value
		},
	}
}

// signatureLanded reads getSignatureStatuses' answer for one signature:
// landed once confirmed (or finalized), at its slot. The slot chain's
// confirmed blocks do not reorg, so no block hash is followed.
func signatureLanded(res jsontext.Value) (portico.Header, bool) {
	var r struct {
		Value []*struct {
			Slot               uint64 `json:"slot"`
			ConfirmationStatus string `json:"confirmationStatus"`
		} `json:"value"`
	}
	if json.Unmarshal(res, &r) != nil || len(r.Value) != 1 || r.Value[0] == nil {
		return portico.Header{}, false
	}
	st := r.Value[0]
	if st.ConfirmationStatus != "confirmed" && st.ConfirmationStatus != "finalized" {
		return portico.Header{}, false
	}
	return portico.Header{Number: st.Slot}, true
}

// sentTx reads the first signature and the recent blockhash (base58) of
// the transaction in sendTransaction's params; false when they do not
// hold one.
func sentTx(raw jsontext.Value) (sig, blockhash string, ok bool) {
	var p []jsontext.Value
	if json.Unmarshal(raw, &p) != nil || len(p) == 0 {
		return "", "", false
	}
	var encoded string
	var cfg struct {
		Encoding string `json:"encoding"`
	}
	if json.Unmarshal(p[0], &encoded) != nil || (len(p) > 1 && json.Unmarshal(p[1], &cfg) != nil) {
		return "", "", false
	}
	var b []byte
	var err error
	if cfg.Encoding == "base64" {
		b, err = base64.StdEncoding.DecodeString(encoded)
	} else {
		b, err = base58.Decode(encoded)
	}
	if err != nil {
		return "", "", false
	}
	return wireParts(b)
}

// wireParts reads the first signature and the recent blockhash of a
// transaction in its wire form: signatures (a short vector of 64 bytes
// each), then the message (an optional version byte, a 3-byte header, the
// account keys as a short vector of 32 bytes each, the blockhash).
func wireParts(b []byte) (sig, blockhash string, ok bool) {
	n, at, ok := shortVec(b, 0)
	if !ok || n == 0 || len(b) < at+64*n {
		return "", "", false
	}
	sig = base58.Encode(b[at : at+64])
	at += 64 * n
	if at < len(b) && b[at]&0x80 != 0 {
		at++ // a versioned message
	}
	at += 3
	keys, at, ok := shortVec(b, at)
	if !ok || len(b) < at+32*keys+32 {
		return "", "", false
	}
	at += 32 * keys
	return sig, base58.Encode(b[at : at+32]), true
}

// shortVec reads a compact-u16 length at b[at:].
func shortVec(b []byte, at int) (n, next int, ok bool) {
	for shift := 0; shift < 21; shift += 7 {
		if at >= len(b) {
			return 0, 0, false
		}
		c := b[at]
		at++
		n |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			return n, at, true
		}
	}
	return 0, 0, false
}
