package starknetdevnet

import (
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
)

// Params of the WebSocket API, named or positional like every other
// method of the devnet. An optional param may also be given as null, which
// is how a positional call skips one.

// optional returns a param that is present and not null.
func optional(p map[string]jsontext.Value, name string) (jsontext.Value, bool) {
	v, ok := p[name]
	if !ok || v.Kind() == 'n' {
		return nil, false
	}
	return v, true
}

// decodeSubscriptionBlockID decodes a SUBSCRIPTION_BLOCK_ID: a block hash,
// a block number or "latest". The pending block (and the later specs'
// tags) are not a place a subscription can start from.
func decodeSubscriptionBlockID(v jsontext.Value, at int, field string) (*blockRef, error) {
	const want = `want {"block_hash": felt}, {"block_number": integer} or "latest"`
	switch v.Kind() {
	case '"':
		if string(v) == `"latest"` {
			return &blockRef{tag: "latest"}, nil
		}
	case '{':
		return decodeBlockID(v, at, field)
	}
	return nil, rpcparams.Errorf(at, field, "%s, got %s", want, rpcparams.Describe(v))
}

// decodeNewHeadsParams decodes subscribeNewHeads' [block_id]; nil means
// latest.
func decodeNewHeadsParams(raw jsontext.Value) (*blockRef, error) {
	p, pos, err := splitParamsN(raw, 0, "block_id")
	if err != nil {
		return nil, err
	}
	if v, ok := optional(p, "block_id"); ok {
		return decodeSubscriptionBlockID(v, pos(0), "block_id")
	}
	return nil, nil
}

// decodeSubscribeEventsParams decodes subscribeEvents' [from_address,
// keys, block_id] into a filter (the getEvents one, with its key limits
// and semantics) and the block to start from (nil: latest).
func decodeSubscribeEventsParams(raw jsontext.Value) (*eventFilter, *blockRef, error) {
	p, pos, err := splitParamsN(raw, 0, "from_address", "keys", "block_id")
	if err != nil {
		return nil, nil, err
	}
	f := &eventFilter{}
	if v, ok := optional(p, "from_address"); ok {
		a, err := decodeFelt(v, pos(0), "from_address")
		if err != nil {
			return nil, nil, err
		}
		f.addresses = []Felt{a}
	}
	if v, ok := optional(p, "keys"); ok {
		if f.keys, err = decodeKeys(v, pos(1), "keys"); err != nil {
			return nil, nil, err
		}
	}
	var from *blockRef
	if v, ok := optional(p, "block_id"); ok {
		if from, err = decodeSubscriptionBlockID(v, pos(2), "block_id"); err != nil {
			return nil, nil, err
		}
	}
	return f, from, nil
}

// decodeTxStatusParams decodes subscribeTransactionStatus'
// [transaction_hash].
func decodeTxStatusParams(raw jsontext.Value) (Felt, error) {
	p, pos, err := splitParams(raw, "transaction_hash")
	if err != nil {
		return Felt{}, err
	}
	return decodeFelt(p["transaction_hash"], pos(0), "transaction_hash")
}

// pendingTxParams are subscribePendingTransactions' params.
type pendingTxParams struct {
	details bool
	senders []Felt // empty: every transaction
}

// decodePendingTxParams decodes subscribePendingTransactions'
// [transaction_details, sender_address].
func decodePendingTxParams(raw jsontext.Value) (*pendingTxParams, error) {
	p, pos, err := splitParamsN(raw, 0, "transaction_details", "sender_address")
	if err != nil {
		return nil, err
	}
	out := &pendingTxParams{}
	if v, ok := optional(p, "transaction_details"); ok {
		if out.details, err = rpcparams.Bool(v, pos(0), "transaction_details"); err != nil {
			return nil, err
		}
	}
	if v, ok := optional(p, "sender_address"); ok {
		items, err := rpcparams.Array(v, pos(1), "sender_address")
		if err != nil {
			return nil, err
		}
		if len(items) > MaxSenderAddresses {
			return nil, ErrTooManyAddresses
		}
		for i, it := range items {
			a, err := decodeFelt(it, pos(1), rpcparams.Index("sender_address", i))
			if err != nil {
				return nil, err
			}
			out.senders = append(out.senders, a)
		}
	}
	return out, nil
}

// decodeUnsubscribeParams decodes unsubscribe's [subscription_id]. The
// spec types SUBSCRIPTION_ID as a string but unsubscribe's param as an
// integer, so both are taken: "7" and 7 name the same subscription. It
// returns 0 for a string or integer that cannot be an id the devnet
// issued (its ids are canonical decimals from 1), which the caller answers
// with INVALID_SUBSCRIPTION_ID; other kinds are invalid params.
func decodeUnsubscribeParams(raw jsontext.Value) (uint64, error) {
	p, pos, err := splitParams(raw, "subscription_id")
	if err != nil {
		return 0, err
	}
	v, at := p["subscription_id"], pos(0)
	switch v.Kind() {
	case '"':
		s, err := rpcparams.String(v, at, "subscription_id")
		if err != nil {
			return 0, err
		}
		n, perr := strconv.ParseUint(s, 10, 64)
		if perr != nil || strconv.FormatUint(n, 10) != s {
			return 0, nil
		}
		return n, nil
	case '0':
		if strings.ContainsAny(string(v), ".eE") {
			break
		}
		n, err := rpcparams.Uint(v, at, "subscription_id", rpcparams.MaxUint64)
		if err != nil {
			return 0, nil // negative or past u64: an integer, but not an id
		}
		return n, nil
	}
	return 0, rpcparams.Errorf(at, "subscription_id", "want a subscription id (a string, or an integer), got %s", rpcparams.Describe(v))
}
