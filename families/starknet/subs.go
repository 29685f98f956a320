package starknet

import (
	"context"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// Costs of subscriptions: subscribing, and each notification a client
// receives, by kind.
const (
	CostSubscribe             = 10
	CostNewHeadNotification   = 50
	CostEventNotification     = 30
	CostStatusNotification    = 20
	CostPendingTxNotification = 20
)

// MaxSenderAddresses bounds the sender_address filter of a pending
// transactions subscription.
const MaxSenderAddresses = 128

// Errors of the WebSocket API (spec 0.8.1).
var (
	ErrInvalidSubscriptionID  = &SpecError{Code: 66, Message: "Invalid subscription id"}
	ErrTooManyAddresses       = &SpecError{Code: 67, Message: "Too many addresses in filter sender_address filter"}
	errSubscriptionBlockIDTag = "want {\"block_hash\": felt}, {\"block_number\": integer} or latest"
)

// Subscriptions are the WebSocket API of spec 0.8.1: string ids,
// notifications named starknet_subscription<Kind> with the id in
// subscription_id; every subscription may also carry reorg notifications.
func Subscriptions() portico.Subscriptions {
	sub := func(name, kind string, params func(jsontext.Value) (portico.SubParams, error), cost int) portico.Subscription {
		return portico.Subscription{
			Method:           "starknet_subscribe" + name,
			Aliases:          []string{"rollup_subscribe" + name},
			Unsubscribe:      "starknet_unsubscribe",
			Notification:     "starknet_subscription" + name,
			Also:             []string{"starknet_subscriptionReorg"},
			Params:           params,
			Cost:             CostSubscribe,
			NotificationCost: map[string]int{kind: cost},
		}
	}
	return portico.Subscriptions{
		Methods: []portico.Subscription{
			sub("NewHeads", "newHeads", newHeadsParams, CostNewHeadNotification),
			sub("Events", "events", eventsSubParams, CostEventNotification),
			sub("TransactionStatus", "transactionStatus", txStatusParams, CostStatusNotification),
			sub("PendingTransactions", "pendingTransactions", pendingTxParams, CostPendingTxNotification),
		},
		IDs:                     portico.IDString,
		IDMember:                "subscription_id",
		DefaultNotificationCost: CostNewHeadNotification,
		Seq:                     headSeq,
		Head:                    head,
		HeadOf:                  headOf,
		Reorg:                   reorgNotice,
		BlockOf:                 eventBlock,
		Backfill:                backfillEvents,
		UnknownID:               ErrInvalidSubscriptionID,
	}
}

// subscriptionBlockID reads a SUBSCRIPTION_BLOCK_ID: a past block
// (by hash or number) is where the subscription resumes from, inclusive,
// served from the chain view (docs/subscriptions.md); latest, or none,
// is nil.
func subscriptionBlockID(p map[string]jsontext.Value, at int) (*portico.Resume, error) {
	v, ok := p["block_id"]
	if !ok {
		return nil, nil
	}
	if v.Kind() == '"' {
		if _, err := rpcparams.Enum(v, at, "block_id", "latest"); err != nil {
			return nil, rpcparams.Errorf(at, "block_id", "%s, got %s", errSubscriptionBlockIDTag, rpcparams.Describe(v))
		}
		return nil, nil
	}
	b, err := blockID(v, at, "block_id")
	if err != nil {
		return nil, err
	}
	r := &portico.Resume{Number: b.Number, Inclusive: true, Position: at, Field: "block_id"}
	if b.Kind == portico.BlockHash {
		var id struct {
			Hash string `json:"block_hash"`
		}
		_ = json.Unmarshal(v, &id, json.RejectUnknownMembers(false))
		r.Hash = hashForm(id.Hash)
	}
	return r, nil
}

func newHeadsParams(raw jsontext.Value) (portico.SubParams, error) {
	if len(raw) == 0 {
		raw = jsontext.Value("{}")
	}
	p, named, err := splitParams(raw, 0, "block_id")
	if err != nil {
		return portico.SubParams{}, err
	}
	resume, err := subscriptionBlockID(p, pos(named, 0))
	if err != nil {
		return portico.SubParams{}, err
	}
	out := portico.SubParams{Kind: "newHeads", Send: raw, Heads: true, Resume: resume}
	if resume != nil {
		out.Send = jsontext.Value("{}") // the live part, shared
	}
	return out, nil
}

func eventsSubParams(raw jsontext.Value) (portico.SubParams, error) {
	if len(raw) == 0 {
		raw = jsontext.Value("{}")
	}
	p, named, err := splitParams(raw, 0, "from_address", "keys", "block_id")
	if err != nil {
		return portico.SubParams{}, err
	}
	if v, ok := p["from_address"]; ok {
		if err := felt(v, pos(named, 0), "from_address"); err != nil {
			return portico.SubParams{}, err
		}
	}
	if v, ok := p["keys"]; ok {
		if err := keysAt(v, pos(named, 1), "keys"); err != nil {
			return portico.SubParams{}, err
		}
	}
	resume, err := subscriptionBlockID(p, pos(named, 2))
	if err != nil {
		return portico.SubParams{}, err
	}
	out := portico.SubParams{Kind: "events", Send: raw, Resume: resume}
	if resume != nil {
		// The live part, shared, by name.
		delete(p, "block_id")
		if out.Send, err = json.Marshal(p, json.Deterministic(true)); err != nil {
			return portico.SubParams{}, rpcparams.Errorf(0, "", "%v", err)
		}
	}
	return out, nil
}

func txStatusParams(raw jsontext.Value) (portico.SubParams, error) {
	p, named, err := splitParams(raw, 1, "transaction_hash")
	if err != nil {
		return portico.SubParams{}, err
	}
	if err := felt(p["transaction_hash"], pos(named, 0), "transaction_hash"); err != nil {
		return portico.SubParams{}, err
	}
	return portico.SubParams{Kind: "transactionStatus", Send: raw}, nil
}

func pendingTxParams(raw jsontext.Value) (portico.SubParams, error) {
	if len(raw) == 0 {
		raw = jsontext.Value("{}")
	}
	p, named, err := splitParams(raw, 0, "transaction_details", "sender_address")
	if err != nil {
		return portico.SubParams{}, err
	}
	if v, ok := p["transaction_details"]; ok {
		if _, err := rpcparams.Bool(v, pos(named, 0), "transaction_details"); err != nil {
			return portico.SubParams{}, err
		}
	}
	if v, ok := p["sender_address"]; ok {
		addrs, err := rpcparams.Array(v, pos(named, 1), "sender_address")
		if err != nil {
			return portico.SubParams{}, err
		}
		if len(addrs) > MaxSenderAddresses {
			return portico.SubParams{}, ErrTooManyAddresses
		}
		for i, a := range addrs {
			if err := felt(a, pos(named, 1), rpcparams.Index("sender_address", i)); err != nil {
				return portico.SubParams{}, err
			}
		}
	}
	return portico.SubParams{Kind: "pendingTransactions", Send: raw}, nil
}

// headSeq reads a new head's block number.
func headSeq(kind string, result jsontext.Value) (uint64, bool) {
	if kind != "newHeads" {
		return 0, false
	}
	var h struct {
		Number *uint64 `json:"block_number"`
	}
	if json.Unmarshal(result, &h, json.RejectUnknownMembers(false)) != nil || h.Number == nil {
		return 0, false
	}
	return *h.Number, true
}

// headOf reads a new head's block: number, hash and parent.
func headOf(kind string, result jsontext.Value) (portico.Header, bool) {
	if kind != "newHeads" {
		return portico.Header{}, false
	}
	var h struct {
		Number *uint64 `json:"block_number"`
		Hash   string  `json:"block_hash"`
		Parent string  `json:"parent_hash"`
	}
	if json.Unmarshal(result, &h, json.RejectUnknownMembers(false)) != nil || h.Number == nil || h.Hash == "" {
		return portico.Header{}, false
	}
	out := portico.Header{Number: *h.Number, Hash: hashForm(h.Hash), Parent: hashForm(h.Parent)}
	if out.Number > 0 {
		out.ParentNumber = out.Number - 1
	}
	return out, true
}

// reorgNotice is the spec's starknet_subscriptionReorg for the dropped
// blocks: the first and last of them.
func reorgNotice(_ string, dropped []portico.Header) (string, jsontext.Value) {
	first, last := dropped[0], dropped[len(dropped)-1]
	return "starknet_subscriptionReorg", jsontext.Value(`{"starting_block_hash":"` + first.Hash + `","starting_block_number":` +
		strconv.FormatUint(first.Number, 10) + `,"ending_block_hash":"` + last.Hash + `","ending_block_number":` + strconv.FormatUint(last.Number, 10) + `}`)
}

// head makes the new heads notification of block b: the node's block
// without its transactions and status, a BLOCK_HEADER, asked for by hash
// when b has one.
func head(ctx context.Context, node portico.Caller, _ string, b portico.Header, _ portico.Heads) (jsontext.Value, error) {
	id := `{"block_number":` + strconv.FormatUint(b.Number, 10) + `}`
	if b.Hash != "" {
		id = `{"block_hash":"` + b.Hash + `"}`
	}
	res, err := node.Call(ctx, "starknet_getBlockWithTxHashes", jsontext.Value(`{"block_id":`+id+`}`), nil)
	if err != nil {
		return nil, err
	}
	var block map[string]jsontext.Value
	if err := json.Unmarshal(res, &block); err != nil || block == nil {
		return nil, &SpecError{Code: 24, Message: "Block not found"}
	}
	delete(block, "transactions")
	delete(block, "status")
	return json.Marshal(block, json.Deterministic(true))
}

// eventBlock reads the block an event notification is about.
func eventBlock(kind string, result jsontext.Value) (portico.Header, bool, bool) {
	if kind != "events" {
		return portico.Header{}, false, false
	}
	var e struct {
		Hash   string  `json:"block_hash"`
		Number *uint64 `json:"block_number"`
	}
	if json.Unmarshal(result, &e, json.RejectUnknownMembers(false)) != nil || e.Hash == "" || e.Number == nil {
		return portico.Header{}, false, false
	}
	return portico.Header{Number: *e.Number, Hash: hashForm(e.Hash)}, false, true
}

// maxEventPages bounds the pages of one block's events a backfill reads.
const maxEventPages = 64

// backfillEvents makes an events subscription's notifications about
// block b, for a resumed subscription: the node's events of b (by its
// hash) that the subscription's filter matches, each an EMITTED_EVENT as
// the notification carries it. A reorg is told by the spec's reorg
// notice, so removed asks for nothing.
func backfillEvents(ctx context.Context, node portico.Caller, kind string, send jsontext.Value, b portico.Header, removed bool) ([]jsontext.Value, error) {
	if kind != "events" || removed {
		return nil, nil
	}
	filter := map[string]jsontext.Value{}
	if send.Kind() == '{' {
		if err := json.Unmarshal(send, &filter); err != nil {
			return nil, err
		}
	}
	if a, ok := filter["from_address"]; ok {
		filter["address"] = a
		delete(filter, "from_address")
	}
	id := jsontext.Value(`{"block_hash":"` + b.Hash + `"}`)
	filter["from_block"], filter["to_block"] = id, id
	filter["chunk_size"] = jsontext.Value("1000")
	var out []jsontext.Value
	for range maxEventPages {
		q, err := json.Marshal(map[string]any{"filter": filter})
		if err != nil {
			return nil, err
		}
		res, err := node.Call(ctx, "starknet_getEvents", q, nil)
		if err != nil {
			return nil, err
		}
		var page struct {
			Events []jsontext.Value `json:"events"`
			Token  string           `json:"continuation_token"`
		}
		if err := json.Unmarshal(res, &page, json.RejectUnknownMembers(false)); err != nil {
			return nil, err
		}
		out = append(out, page.Events...)
		if page.Token == "" {
			return out, nil
		}
		filter["continuation_token"], _ = json.Marshal(page.Token)
	}
	return out, nil
}
