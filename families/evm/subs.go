package evm

import (
	"context"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// Costs of subscriptions: subscribing, and each notification a client
// receives, by kind (hosted providers charge per notification too).
const (
	CostSubscribe           = 10
	CostNewHeadNotification = 50
	CostLogNotification     = 30
	CostPendingNotification = 20
)

// maxTopicPositions bounds the topic positions of a logs filter, as geth
// does.
const maxTopicPositions = 4

// Subscriptions are eth_subscribe with newHeads, logs (address and topics
// filters, arrays and nulls as in geth) and newPendingTransactions
// (hashes, or full transactions with true), and eth_unsubscribe, in
// geth's envelope: hex ids, notifications named eth_subscription.
func Subscriptions() portico.Subscriptions {
	return portico.Subscriptions{
		Methods: []portico.Subscription{{
			Method:       "eth_subscribe",
			Aliases:      []string{"evm_subscribe"},
			Unsubscribe:  "eth_unsubscribe",
			Notification: "eth_subscription",
			Params:       SubscribeParams,
			Cost:         CostSubscribe,
			NotificationCost: map[string]int{
				"newHeads": CostNewHeadNotification, "logs": CostLogNotification, "newPendingTransactions": CostPendingNotification,
			},
			Contracts: SubscriptionContracts(),
		}},
		IDs:                     portico.IDHex,
		IDMember:                "subscription",
		DefaultNotificationCost: CostNewHeadNotification,
		Seq:                     headNumber,
		Head:                    head,
		HeadOf:                  headOf,
		LogOf:                   logOf,
		Removed:                 removed,
		Backfill:                backfill,
		UnknownID:               &subError{"subscription not found"},
	}
}

// subError is an error of a subscription call as geth answers it.
type subError struct{ msg string }

func (e *subError) Error() string  { return e.msg }
func (e *subError) ErrorCode() int { return -32000 }

// SubscribeParams checks eth_subscribe's params: [kind, options?].
func SubscribeParams(raw jsontext.Value) (portico.SubParams, error) {
	p, err := rpcparams.Positional(raw, 1, "kind", "options")
	if err != nil {
		return portico.SubParams{}, err
	}
	kind, err := rpcparams.Enum(p[0], 1, "kind", "newHeads", "logs", "newPendingTransactions")
	if err != nil {
		return portico.SubParams{}, err
	}
	out := portico.SubParams{Kind: kind, Send: raw}
	switch kind {
	case "newHeads":
		out.Heads = true
		if len(p) > 1 {
			opts, err := rpcparams.Object(p[1], 2, "options", "resumeFrom")
			if _, ok := opts["resumeFrom"]; err != nil || !ok {
				return portico.SubParams{}, rpcparams.Errorf(2, "options", `newHeads takes no options but {"resumeFrom": block hash}, got %s`, rpcparams.Describe(p[1]))
			}
			if out.Resume, err = resumeFrom(opts, "options.resumeFrom"); err != nil {
				return portico.SubParams{}, err
			}
			out.Send = jsontext.Value(`["newHeads"]`)
		}
	case "logs":
		if len(p) > 1 {
			if err := logFilter(p[1]); err != nil {
				return portico.SubParams{}, err
			}
			f, _ := rpcparams.Object(p[1], 2, "filter", logFilterMembers...)
			if out.Resume, err = resumeFrom(f, "filter.resumeFrom"); err != nil {
				return portico.SubParams{}, err
			}
			if out.Resume != nil {
				delete(f, "resumeFrom")
				filter, err := json.Marshal(f, json.Deterministic(true))
				if err != nil {
					return portico.SubParams{}, rpcparams.Errorf(2, "filter", "%v", err)
				}
				out.Send = jsontext.Value(`["logs",` + string(filter) + `]`)
			}
		}
	case "newPendingTransactions":
		if len(p) > 1 {
			if _, err := rpcparams.Bool(p[1], 2, "options"); err != nil {
				return portico.SubParams{}, rpcparams.Errorf(2, "options", "want true for full transactions or false for hashes, got %s", rpcparams.Describe(p[1]))
			}
		}
	}
	return out, nil
}

// logFilterMembers are the members a logs subscription's filter may have:
// geth's, and Portico's resumeFrom (docs/subscriptions.md).
var logFilterMembers = []string{"address", "topics", "fromBlock", "toBlock", "blockHash", "resumeFrom"}

// resumeFrom reads a resume point, the hash of the last block the client
// saw, from member resumeFrom of obj (field names it for errors); nil when
// there is none.
func resumeFrom(obj map[string]jsontext.Value, field string) (*portico.Resume, error) {
	v, ok := obj["resumeFrom"]
	if !ok {
		return nil, nil
	}
	if err := hash(v, 2, field); err != nil {
		return nil, err
	}
	var h string
	_ = json.Unmarshal(v, &h)
	return &portico.Resume{Hash: strings.ToLower(h), Position: 2, Field: field}, nil
}

// logFilter checks a logs subscription's filter: address (one or an array)
// and topics (up to four positions, each null, a hash or an array of
// hashes), as geth reads them. fromBlock, toBlock and blockHash, which
// clients send out of habit (go-ethereum's ethclient does), are checked
// and, as geth does for subscriptions, have no effect.
func logFilter(v jsontext.Value) error {
	f, err := rpcparams.Object(v, 2, "filter", logFilterMembers...)
	if err != nil {
		return err
	}
	for _, name := range []string{"fromBlock", "toBlock", "blockHash"} {
		if b, ok := f[name]; ok && b.Kind() != 'n' {
			if _, err := block(b, 2, "filter."+name); err != nil {
				return err
			}
		}
	}
	if a, ok := f["address"]; ok {
		switch a.Kind() {
		case '[':
			items, err := rpcparams.Array(a, 2, "filter.address")
			if err != nil {
				return err
			}
			for i, it := range items {
				if err := address(it, 2, rpcparams.Index("filter.address", i)); err != nil {
					return err
				}
			}
		case 'n':
		default:
			if err := address(a, 2, "filter.address"); err != nil {
				return err
			}
		}
	}
	if t, ok := f["topics"]; ok && t.Kind() != 'n' {
		positions, err := rpcparams.Array(t, 2, "filter.topics")
		if err != nil {
			return err
		}
		if len(positions) > maxTopicPositions {
			return rpcparams.Errorf(2, "filter.topics", "at most %d topic positions, got %d", maxTopicPositions, len(positions))
		}
		for i, pos := range positions {
			field := rpcparams.Index("filter.topics", i)
			switch pos.Kind() {
			case 'n':
			case '[':
				alts, err := rpcparams.Array(pos, 2, field)
				if err != nil {
					return err
				}
				for j, h := range alts {
					if h.Kind() == 'n' {
						continue
					}
					if err := hash(h, 2, rpcparams.Index(field, j)); err != nil {
						return err
					}
				}
			default:
				if err := hash(pos, 2, field); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// headNumber reads a newHeads notification's block number.
func headNumber(_ string, result jsontext.Value) (uint64, bool) {
	var h struct {
		Number string `json:"number"`
	}
	if err := json.Unmarshal(result, &h, json.RejectUnknownMembers(false)); err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(h.Number, "0x"), 16, 64)
	return n, err == nil
}

// headOf reads a newHeads notification's block: number, hash and parent.
func headOf(_ string, result jsontext.Value) (portico.Header, bool) {
	var h struct {
		Number     string `json:"number"`
		Hash       string `json:"hash"`
		ParentHash string `json:"parentHash"`
	}
	if err := json.Unmarshal(result, &h, json.RejectUnknownMembers(false)); err != nil || h.Hash == "" {
		return portico.Header{}, false
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(h.Number, "0x"), 16, 64)
	if err != nil {
		return portico.Header{}, false
	}
	out := portico.Header{Number: n, Hash: strings.ToLower(h.Hash), Parent: strings.ToLower(h.ParentHash)}
	if n > 0 {
		out.ParentNumber = n - 1
	}
	return out, true
}

// logOf reads a logs notification's block and its removed flag.
func logOf(kind string, result jsontext.Value) (portico.Header, bool, bool) {
	if kind != "logs" {
		return portico.Header{}, false, false
	}
	var l struct {
		BlockHash   string `json:"blockHash"`
		BlockNumber string `json:"blockNumber"`
		Removed     bool   `json:"removed"`
	}
	if err := json.Unmarshal(result, &l, json.RejectUnknownMembers(false)); err != nil || l.BlockHash == "" {
		return portico.Header{}, false, false
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(l.BlockNumber, "0x"), 16, 64)
	if err != nil {
		return portico.Header{}, false, false
	}
	return portico.Header{Number: n, Hash: strings.ToLower(l.BlockHash)}, l.Removed, true
}

// backfill makes a logs subscription's notifications about block b, for
// a resumed subscription: the node's logs of b (by its hash) that the
// subscription's filter matches, marked removed when asked.
func backfill(ctx context.Context, node portico.Caller, kind string, send jsontext.Value, b portico.Header, removedToo bool) ([]jsontext.Value, error) {
	if kind != "logs" {
		return nil, nil
	}
	var params []jsontext.Value
	if err := json.Unmarshal(send, &params); err != nil {
		return nil, err
	}
	filter := map[string]jsontext.Value{}
	if len(params) > 1 && params[1].Kind() == '{' {
		if err := json.Unmarshal(params[1], &filter); err != nil {
			return nil, err
		}
	}
	delete(filter, "fromBlock")
	delete(filter, "toBlock")
	filter["blockHash"] = jsontext.Value(`"` + b.Hash + `"`)
	q, err := json.Marshal([]any{filter})
	if err != nil {
		return nil, err
	}
	res, err := node.Call(ctx, "eth_getLogs", q, nil)
	if err != nil {
		return nil, err
	}
	var logs []jsontext.Value
	if err := json.Unmarshal(res, &logs); err != nil {
		return nil, err
	}
	if removedToo {
		for i, l := range logs {
			logs[i] = removed(l)
		}
	}
	return logs, nil
}

// removed writes a log as a reorg took it away: "removed": true, as geth
// sends the logs of dropped blocks.
func removed(result jsontext.Value) jsontext.Value {
	var l map[string]jsontext.Value
	if err := json.Unmarshal(result, &l); err != nil {
		return result
	}
	l["removed"] = jsontext.Value("true")
	out, err := json.Marshal(l, json.Deterministic(true))
	if err != nil {
		return result
	}
	return out
}

// blockOnlyMembers are the members eth_getBlockByNumber has that a header,
// as a newHeads notification writes it, has not.
var blockOnlyMembers = []string{"transactions", "uncles", "size", "totalDifficulty", "withdrawals"}

// head makes the newHeads notification of block b from the node's
// eth_getBlockByHash (by number when its hash is not known): the block
// without its body.
func head(ctx context.Context, node portico.Caller, _ string, b portico.Header, _ portico.Heads) (jsontext.Value, error) {
	method, id := "eth_getBlockByNumber", "0x"+strconv.FormatUint(b.Number, 16)
	if b.Hash != "" {
		method, id = "eth_getBlockByHash", b.Hash
	}
	res, err := node.Call(ctx, method, jsontext.Value(`["`+id+`",false]`), nil)
	if err != nil {
		return nil, err
	}
	var block map[string]jsontext.Value
	if err := json.Unmarshal(res, &block); err != nil || block == nil {
		return nil, &subError{"block " + strconv.FormatUint(b.Number, 10) + " not found"}
	}
	for _, k := range blockOnlyMembers {
		delete(block, k)
	}
	return json.Marshal(block, json.Deterministic(true))
}
