package solana

import (
	"encoding/base64"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mr-tron/base58"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// Rows with params validation for the methods real clients (solana-go,
// @solana/kit) call most. Each checks types, required params, allowed
// values and key lengths, and forwards the caller's params unchanged.
// Config objects accept exactly the fields agave reads for the method, so a
// misspelt field is reported instead of silently ignored.
func clientMethods() []portico.Method {
	row := func(name string, params func(jsontext.Value) error) portico.Method {
		return cached(name, params, portico.NotCacheable)
	}
	return []portico.Method{
		{Name: "getSlot", Cost: DefaultCost, Params: getSlotParams, FromHeads: slotFromHeads},
		row("getBlockHeight", contextOnly),
		row("getLatestBlockhash", contextOnly),
		row("getEpochInfo", contextOnly),
		row("getVersion", noParams),
		cached("getGenesisHash", noParams, portico.Immutable),
		row("getHealth", noParams),
		row("getFirstAvailableBlock", noParams),
		cached("getBalance", GetBalanceParams, portico.PerHead),
		cached("getAccountInfo", GetAccountInfoParams, portico.PerHead),
		row("getBlocks", GetBlocksParams),
		{Name: "getTransaction", Cost: DefaultCost, Params: GetTransactionParams},
		row("getSignaturesForAddress", GetSignaturesForAddressParams),
		row("getSignatureStatuses", GetSignatureStatusesParams),
		write(row("requestAirdrop", RequestAirdropParams)),
		{Name: "sendTransaction", Cost: DefaultCost, Write: true, Params: sendTxParams},
	}
}

// Limits agave applies.
const (
	maxSignatureStatuses = 256
	maxSignaturesLimit   = 1000
	maxTxBytes           = 1232
)

// positional treats a null params member as no params.
func positional(raw jsontext.Value, required int, names ...string) ([]jsontext.Value, error) {
	if raw.Kind() == 'n' {
		raw = nil
	}
	return rpcparams.Positional(raw, required, names...)
}

// config checks an optional config object (null is absent) with its
// allowed fields, and returns its members.
func config(p []jsontext.Value, i int, fields ...string) (map[string]jsontext.Value, error) {
	if len(p) <= i || p[i].Kind() == 'n' {
		return map[string]jsontext.Value{}, nil
	}
	return rpcparams.Object(p[i], i+1, "config", fields...)
}

// checkCommitment checks config.commitment against the allowed levels.
func checkCommitment(cfg map[string]jsontext.Value, pos int, levels ...string) error {
	if v, ok := cfg["commitment"]; ok {
		_, err := rpcparams.Enum(v, pos, "config.commitment", levels...)
		return err
	}
	return nil
}

// checkUint checks an optional u64 config field.
func checkUint(cfg map[string]jsontext.Value, pos int, name string, max uint64) (uint64, bool, error) {
	v, ok := cfg[name]
	if !ok {
		return 0, false, nil
	}
	n, err := rpcparams.Uint(v, pos, "config."+name, max)
	return n, true, err
}

// checkKey checks a base58 string of n bytes (32 for a public key, 64 for
// a signature).
func checkKey(v jsontext.Value, pos int, field, what string, n int) error {
	s, err := rpcparams.String(v, pos, field)
	if err != nil {
		return err
	}
	b, err := base58.Decode(s)
	if err != nil || len(b) != n || s == "" {
		return rpcparams.Errorf(pos, field, "want a base58 %s of %d bytes, got %s", what, n, rpcparams.Describe(v))
	}
	return nil
}

func noParams(raw jsontext.Value) error {
	_, err := positional(raw, 0)
	return err
}

// cached is a row whose params check is check and whose answers are cached
// as c.
func cached(name string, check func(jsontext.Value) error, c portico.Cacheability) portico.Method {
	return portico.Method{Name: name, Cost: DefaultCost, Params: func(raw jsontext.Value) (portico.Params, error) {
		if err := check(raw); err != nil {
			return portico.Params{}, err
		}
		return portico.Params{Send: raw, Cache: c}, nil
	}}
}

// write marks a row as a method that changes state.
func write(m portico.Method) portico.Method {
	m.Write = true
	return m
}

// getSlotParams checks getSlot's [config?] and says which commitment the
// slot is asked at (finalized when none is named), so that the gateway
// can answer from the tracked heads; a call with minContextSlot goes to a
// node.
func getSlotParams(raw jsontext.Value) (portico.Params, error) {
	p, err := positional(raw, 0, "config")
	if err != nil {
		return portico.Params{}, err
	}
	cfg, err := config(p, 0, "commitment", "minContextSlot")
	if err != nil {
		return portico.Params{}, err
	}
	if err := checkCommitment(cfg, 1, commitments...); err != nil {
		return portico.Params{}, err
	}
	if _, set, err := checkUint(cfg, 1, "minContextSlot", rpcparams.MaxUint64); err != nil || set {
		return portico.Params{Send: raw}, err
	}
	tag := "finalized"
	if c, ok := cfg["commitment"]; ok {
		tag, _ = rpcparams.String(c, 1, "config.commitment")
	}
	return portico.Params{Send: raw, Block: portico.Block{Kind: portico.BlockTag, Tag: tag}}, nil
}

// slotFromHeads answers getSlot from the tracked slot at its commitment.
func slotFromHeads(p portico.Params, h portico.Heads) (jsontext.Value, bool) {
	if p.Block.Kind != portico.BlockTag {
		return nil, false
	}
	head, ok := Chain().Tags[p.Block.Tag]
	if !ok {
		return nil, false
	}
	n, ok := h.Of(head)
	if !ok {
		return nil, false
	}
	return jsontext.Value(strconv.FormatUint(n, 10)), true
}

// contextOnly checks [config?] with commitment and minContextSlot.
func contextOnly(raw jsontext.Value) error {
	p, err := positional(raw, 0, "config")
	if err != nil {
		return err
	}
	cfg, err := config(p, 0, "commitment", "minContextSlot")
	if err != nil {
		return err
	}
	if err := checkCommitment(cfg, 1, commitments...); err != nil {
		return err
	}
	_, _, err = checkUint(cfg, 1, "minContextSlot", rpcparams.MaxUint64)
	return err
}

// GetBalanceParams checks getBalance's params: [pubkey, config?].
func GetBalanceParams(raw jsontext.Value) error {
	p, err := positional(raw, 1, "pubkey", "config")
	if err != nil {
		return err
	}
	if err := checkKey(p[0], 1, "pubkey", "public key", 32); err != nil {
		return err
	}
	cfg, err := config(p, 1, "commitment", "minContextSlot")
	if err != nil {
		return err
	}
	if err := checkCommitment(cfg, 2, commitments...); err != nil {
		return err
	}
	_, _, err = checkUint(cfg, 2, "minContextSlot", rpcparams.MaxUint64)
	return err
}

// GetAccountInfoParams checks getAccountInfo's params: [pubkey, config?].
func GetAccountInfoParams(raw jsontext.Value) error {
	p, err := positional(raw, 1, "pubkey", "config")
	if err != nil {
		return err
	}
	if err := checkKey(p[0], 1, "pubkey", "public key", 32); err != nil {
		return err
	}
	cfg, err := config(p, 1, "commitment", "encoding", "dataSlice", "minContextSlot")
	if err != nil {
		return err
	}
	if err := checkCommitment(cfg, 2, commitments...); err != nil {
		return err
	}
	if v, ok := cfg["encoding"]; ok {
		if _, err := rpcparams.Enum(v, 2, "config.encoding", "base58", "base64", "base64+zstd", "jsonParsed"); err != nil {
			return err
		}
	}
	if v, ok := cfg["dataSlice"]; ok {
		ds, err := rpcparams.Object(v, 2, "config.dataSlice", "offset", "length")
		if err != nil {
			return err
		}
		for _, f := range []string{"offset", "length"} {
			fv, ok := ds[f]
			if !ok {
				return rpcparams.Errorf(2, "config.dataSlice."+f, "missing")
			}
			if _, err := rpcparams.Uint(fv, 2, "config.dataSlice."+f, rpcparams.MaxUint64); err != nil {
				return err
			}
		}
	}
	_, _, err = checkUint(cfg, 2, "minContextSlot", rpcparams.MaxUint64)
	return err
}

// GetBlocksParams checks getBlocks' params: [startSlot, endSlot?, config?]
// or [startSlot, config]. Commitment must be confirmed or finalized.
func GetBlocksParams(raw jsontext.Value) error {
	p, err := positional(raw, 1, "startSlot", "endSlot", "config")
	if err != nil {
		return err
	}
	if _, err := rpcparams.Uint(p[0], 1, "startSlot", rpcparams.MaxUint64); err != nil {
		return err
	}
	cfgAt := 2
	if len(p) > 1 {
		switch p[1].Kind() {
		case '{':
			if len(p) > 2 {
				return rpcparams.Errorf(3, "", "too many params: with a config in position 2 there is no position 3")
			}
			cfgAt = 1
		case 'n':
		default:
			if _, err := rpcparams.Uint(p[1], 2, "endSlot", rpcparams.MaxUint64); err != nil {
				return err
			}
		}
	}
	cfg, err := config(p, cfgAt, "commitment", "minContextSlot")
	if err != nil {
		return err
	}
	if err := checkCommitment(cfg, cfgAt+1, "finalized", "confirmed"); err != nil {
		return err
	}
	_, _, err = checkUint(cfg, cfgAt+1, "minContextSlot", rpcparams.MaxUint64)
	return err
}

// GetTransactionParams checks getTransaction's params: [signature,
// config?], config being an object or a bare encoding. A transaction
// found at finalized commitment (the default) never changes.
func GetTransactionParams(raw jsontext.Value) (portico.Params, error) {
	p, err := positional(raw, 1, "signature", "config")
	if err != nil {
		return portico.Params{}, err
	}
	if err := checkKey(p[0], 1, "signature", "signature", 64); err != nil {
		return portico.Params{}, err
	}
	final := portico.Params{Send: raw, Cache: portico.Immutable, Block: portico.Block{Kind: portico.BlockTag, Tag: "finalized"}}
	if len(p) > 1 && p[1].Kind() == '"' {
		if _, err := rpcparams.Enum(p[1], 2, "config", bareEncodings...); err != nil {
			return portico.Params{}, rpcparams.Errorf(2, "config", "want an object or an encoding (json, jsonParsed, base58, base64), got %s", rpcparams.Describe(p[1]))
		}
		return final, nil
	}
	cfg, err := config(p, 1, "commitment", "encoding", "maxSupportedTransactionVersion")
	if err != nil {
		return portico.Params{}, err
	}
	if err := checkCommitment(cfg, 2, "finalized", "confirmed"); err != nil {
		return portico.Params{}, err
	}
	if v, ok := cfg["encoding"]; ok {
		if _, err := rpcparams.Enum(v, 2, "config.encoding", encodings...); err != nil {
			return portico.Params{}, err
		}
	}
	if _, _, err = checkUint(cfg, 2, "maxSupportedTransactionVersion", 255); err != nil {
		return portico.Params{}, err
	}
	if c, ok := cfg["commitment"]; ok && string(c) != `"finalized"` {
		return portico.Params{Send: raw, Block: portico.Block{Kind: portico.BlockTag, Tag: "confirmed"}}, nil
	}
	return final, nil
}

// GetSignaturesForAddressParams checks [address, config?]: limit 1 to
// 1000, before and until signatures, commitment confirmed or finalized.
func GetSignaturesForAddressParams(raw jsontext.Value) error {
	p, err := positional(raw, 1, "address", "config")
	if err != nil {
		return err
	}
	if err := checkKey(p[0], 1, "address", "public key", 32); err != nil {
		return err
	}
	cfg, err := config(p, 1, "commitment", "limit", "before", "until", "minContextSlot")
	if err != nil {
		return err
	}
	if err := checkCommitment(cfg, 2, "finalized", "confirmed"); err != nil {
		return err
	}
	if n, ok, err := checkUint(cfg, 2, "limit", maxSignaturesLimit); err != nil {
		return err
	} else if ok && n == 0 {
		return rpcparams.Errorf(2, "config.limit", "want an integer from 1 to %d, got 0", maxSignaturesLimit)
	}
	for _, f := range []string{"before", "until"} {
		if v, ok := cfg[f]; ok {
			if err := checkKey(v, 2, "config."+f, "signature", 64); err != nil {
				return err
			}
		}
	}
	_, _, err = checkUint(cfg, 2, "minContextSlot", rpcparams.MaxUint64)
	return err
}

// GetSignatureStatusesParams checks [signatures (1 to 256), config?].
func GetSignatureStatusesParams(raw jsontext.Value) error {
	p, err := positional(raw, 1, "signatures", "config")
	if err != nil {
		return err
	}
	sigs, err := rpcparams.Array(p[0], 1, "signatures")
	if err != nil {
		return err
	}
	if len(sigs) == 0 || len(sigs) > maxSignatureStatuses {
		return rpcparams.Errorf(1, "signatures", "want 1 to %d signatures, got %d", maxSignatureStatuses, len(sigs))
	}
	for i, s := range sigs {
		if err := checkKey(s, 1, rpcparams.Index("signatures", i), "signature", 64); err != nil {
			return err
		}
	}
	cfg, err := config(p, 1, "searchTransactionHistory")
	if err != nil {
		return err
	}
	if v, ok := cfg["searchTransactionHistory"]; ok {
		_, err = rpcparams.Bool(v, 2, "config.searchTransactionHistory")
	}
	return err
}

// RequestAirdropParams checks [pubkey, lamports (at least 1), config?].
func RequestAirdropParams(raw jsontext.Value) error {
	p, err := positional(raw, 2, "pubkey", "lamports", "config")
	if err != nil {
		return err
	}
	if err := checkKey(p[0], 1, "pubkey", "public key", 32); err != nil {
		return err
	}
	n, err := rpcparams.Uint(p[1], 2, "lamports", rpcparams.MaxUint64)
	if err != nil {
		return err
	}
	if n == 0 {
		return rpcparams.Errorf(2, "lamports", "want at least 1 lamport, got 0")
	}
	cfg, err := config(p, 2, "commitment")
	if err != nil {
		return err
	}
	return checkCommitment(cfg, 3, commitments...)
}

// SendTransactionParams checks [transaction, config?]: the transaction
// must decode in the declared encoding (base58 by default) to at most 1232
// bytes.
func SendTransactionParams(raw jsontext.Value) error {
	p, err := positional(raw, 1, "transaction", "config")
	if err != nil {
		return err
	}
	tx, err := rpcparams.String(p[0], 1, "transaction")
	if err != nil {
		return err
	}
	cfg, err := config(p, 1, "encoding", "skipPreflight", "preflightCommitment", "maxRetries", "minContextSlot")
	if err != nil {
		return err
	}
	enc := "base58"
	if v, ok := cfg["encoding"]; ok {
		if enc, err = rpcparams.Enum(v, 2, "config.encoding", "base58", "base64"); err != nil {
			return err
		}
	}
	if v, ok := cfg["skipPreflight"]; ok {
		if _, err := rpcparams.Bool(v, 2, "config.skipPreflight"); err != nil {
			return err
		}
	}
	if v, ok := cfg["preflightCommitment"]; ok {
		if _, err := rpcparams.Enum(v, 2, "config.preflightCommitment", commitments...); err != nil {
			return err
		}
	}
	for _, f := range []string{"maxRetries", "minContextSlot"} {
		if _, _, err := checkUint(cfg, 2, f, rpcparams.MaxUint64); err != nil {
			return err
		}
	}
	var b []byte
	if enc == "base64" {
		b, err = base64.StdEncoding.DecodeString(tx)
	} else {
		b, err = base58.Decode(tx)
	}
	if err != nil || len(b) == 0 {
		return rpcparams.Errorf(1, "transaction", "want a %s-encoded signed transaction, got %s", enc, rpcparams.Describe(p[0]))
	}
	if len(b) > maxTxBytes {
		return rpcparams.Errorf(1, "transaction", "decodes to %d bytes; a transaction is at most %d bytes", len(b), maxTxBytes)
	}
	return nil
}
