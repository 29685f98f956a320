package solana

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
	CostSlotNotification      = 10
	CostAccountNotification   = 20
	CostLogsNotification      = 20
	CostBlockNotification     = 100
	CostSignatureNotification = 10
	defaultNotificationCost   = 20
)

// maxProgramFilters bounds a program subscription's filters, as agave.
const maxProgramFilters = 4

// accountEncodings are the encodings an account subscription may ask for.
var accountEncodings = []string{"base58", "base64", "base64+zstd", "jsonParsed"}

// Subscriptions are the slot chain's PubSub methods as agave serves them:
// integer ids, notifications named <kind>Notification with the result
// before the id.
func Subscriptions() portico.Subscriptions {
	sub := func(kind string, params func(jsontext.Value) (portico.SubParams, error), cost int) portico.Subscription {
		return portico.Subscription{
			Method:           kind + "Subscribe",
			Unsubscribe:      kind + "Unsubscribe",
			Notification:     kind + "Notification",
			Params:           params,
			Cost:             CostSubscribe,
			NotificationCost: map[string]int{kind: cost},
		}
	}
	return portico.Subscriptions{
		Methods: []portico.Subscription{
			sub("slot", noSubParams("slot", true), CostSlotNotification),
			sub("root", noSubParams("root", false), CostSlotNotification),
			sub("account", accountSubParams, CostAccountNotification),
			sub("program", programSubParams, CostAccountNotification),
			sub("logs", logsSubParams, CostLogsNotification),
			sub("signature", signatureSubParams, CostSignatureNotification),
			sub("block", blockSubParams, CostBlockNotification),
			// agave marks these two unstable; a node serves vote only
			// when started with --rpc-pubsub-enable-vote-subscription.
			sub("slotsUpdates", noSubParams("slotsUpdates", false), CostSlotNotification),
			sub("vote", noSubParams("vote", false), CostSlotNotification),
		},
		IDs:                     portico.IDInteger,
		IDMember:                "subscription",
		ResultFirst:             true,
		DefaultNotificationCost: defaultNotificationCost,
		Seq:                     slotOf,
		Head:                    slotHead,
		BlockOf:                 notificationSlot,
		Backfill:                backfill,
		UnknownID:               &subError{"Invalid subscription id."},
	}
}

// subError is an error of a subscription call as agave answers it.
type subError struct{ msg string }

func (e *subError) Error() string  { return e.msg }
func (e *subError) ErrorCode() int { return -32602 }

// noSubParams is the rule of a subscription that takes no params.
func noSubParams(kind string, heads bool) func(jsontext.Value) (portico.SubParams, error) {
	return func(raw jsontext.Value) (portico.SubParams, error) {
		p, err := positional(raw, 0)
		if err != nil {
			var all []jsontext.Value
			if json.Unmarshal(raw, &all) == nil && asksResume(all) {
				return portico.SubParams{}, errCannotResume(kind)
			}
			return portico.SubParams{}, err
		}
		if asksResume(p) {
			return portico.SubParams{}, errCannotResume(kind)
		}
		return portico.SubParams{Kind: kind, Send: jsontext.Value("[]"), Heads: heads}, nil
	}
}

// accountConfig checks the config of an account or program subscription.
func accountConfig(p []jsontext.Value, fields ...string) (map[string]jsontext.Value, error) {
	cfg, err := config(p, 1, append([]string{"commitment", "encoding", "dataSlice", "minContextSlot"}, fields...)...)
	if err != nil {
		return nil, err
	}
	if err := checkCommitment(cfg, 2, commitments...); err != nil {
		return nil, err
	}
	if v, ok := cfg["encoding"]; ok {
		if _, err := rpcparams.Enum(v, 2, "config.encoding", accountEncodings...); err != nil {
			return nil, err
		}
	}
	if v, ok := cfg["dataSlice"]; ok {
		ds, err := rpcparams.Object(v, 2, "config.dataSlice", "offset", "length")
		if err != nil {
			return nil, err
		}
		for _, f := range []string{"offset", "length"} {
			n, ok := ds[f]
			if !ok {
				return nil, rpcparams.Errorf(2, "config.dataSlice."+f, "missing; it is required")
			}
			if _, err := rpcparams.Uint(n, 2, "config.dataSlice."+f, rpcparams.MaxUint64); err != nil {
				return nil, err
			}
		}
	}
	if _, _, err := checkUint(cfg, 2, "minContextSlot", rpcparams.MaxUint64); err != nil {
		return nil, err
	}
	return cfg, nil
}

func accountSubParams(raw jsontext.Value) (portico.SubParams, error) {
	p, err := positional(raw, 1, "pubkey", "config")
	if err != nil {
		return portico.SubParams{}, err
	}
	if err := checkKey(p[0], 1, "pubkey", "public key", 32); err != nil {
		return portico.SubParams{}, err
	}
	if _, err := accountConfig(p); err != nil {
		return portico.SubParams{}, err
	}
	return portico.SubParams{Kind: "account", Send: raw}, nil
}

func programSubParams(raw jsontext.Value) (portico.SubParams, error) {
	p, err := positional(raw, 1, "programId", "config")
	if err != nil {
		return portico.SubParams{}, err
	}
	if err := checkKey(p[0], 1, "programId", "public key", 32); err != nil {
		return portico.SubParams{}, err
	}
	cfg, err := accountConfig(p, "filters", "withContext")
	if err != nil {
		return portico.SubParams{}, err
	}
	if v, ok := cfg["filters"]; ok {
		filters, err := rpcparams.Array(v, 2, "config.filters")
		if err != nil {
			return portico.SubParams{}, err
		}
		if len(filters) > maxProgramFilters {
			return portico.SubParams{}, rpcparams.Errorf(2, "config.filters", "Too many filters provided; max %d", maxProgramFilters)
		}
		for i, f := range filters {
			field := rpcparams.Index("config.filters", i)
			obj, err := rpcparams.Object(f, 2, field, "memcmp", "dataSize")
			if err != nil {
				return portico.SubParams{}, err
			}
			if len(obj) != 1 {
				return portico.SubParams{}, rpcparams.Errorf(2, field, "want exactly one of memcmp and dataSize")
			}
			if m, ok := obj["memcmp"]; ok {
				mc, err := rpcparams.Object(m, 2, field+".memcmp", "offset", "bytes", "encoding")
				if err != nil {
					return portico.SubParams{}, err
				}
				if _, err := rpcparams.Uint(mc["offset"], 2, field+".memcmp.offset", rpcparams.MaxUint64); err != nil {
					return portico.SubParams{}, err
				}
				if _, err := rpcparams.String(mc["bytes"], 2, field+".memcmp.bytes"); err != nil {
					return portico.SubParams{}, err
				}
			} else if _, err := rpcparams.Uint(obj["dataSize"], 2, field+".dataSize", rpcparams.MaxUint64); err != nil {
				return portico.SubParams{}, err
			}
		}
	}
	if v, ok := cfg["withContext"]; ok {
		if _, err := rpcparams.Bool(v, 2, "config.withContext"); err != nil {
			return portico.SubParams{}, err
		}
	}
	return portico.SubParams{Kind: "program", Send: raw}, nil
}

func logsSubParams(raw jsontext.Value) (portico.SubParams, error) {
	p, err := positional(raw, 1, "filter", "config")
	if err != nil {
		return portico.SubParams{}, err
	}
	switch p[0].Kind() {
	case '"':
		if _, err := rpcparams.Enum(p[0], 1, "filter", "all", "allWithVotes"); err != nil {
			return portico.SubParams{}, err
		}
	default:
		f, err := rpcparams.Object(p[0], 1, "filter", "mentions")
		if err != nil {
			return portico.SubParams{}, rpcparams.Errorf(1, "filter", `want "all", "allWithVotes" or {"mentions": [pubkey]}, got %s`, rpcparams.Describe(p[0]))
		}
		keys, err := rpcparams.Array(f["mentions"], 1, "filter.mentions")
		if err != nil {
			return portico.SubParams{}, err
		}
		if len(keys) != 1 {
			return portico.SubParams{}, rpcparams.Errorf(1, "filter.mentions", "Invalid Request: Only 1 address supported")
		}
		if err := checkKey(keys[0], 1, "filter.mentions[0]", "public key", 32); err != nil {
			return portico.SubParams{}, err
		}
	}
	cfg, err := config(p, 1, "commitment", "resumeFrom")
	if err != nil {
		return portico.SubParams{}, err
	}
	if err := checkCommitment(cfg, 2, commitments...); err != nil {
		return portico.SubParams{}, err
	}
	resume, send, err := resumeConfig(raw, p, cfg)
	if err != nil {
		return portico.SubParams{}, err
	}
	return portico.SubParams{Kind: "logs", Send: send, Resume: resume}, nil
}

func signatureSubParams(raw jsontext.Value) (portico.SubParams, error) {
	p, err := positional(raw, 1, "signature", "config")
	if err != nil {
		return portico.SubParams{}, err
	}
	if err := checkKey(p[0], 1, "signature", "signature", 64); err != nil {
		return portico.SubParams{}, err
	}
	cfg, err := config(p, 1, "commitment", "enableReceivedNotification")
	if err != nil {
		return portico.SubParams{}, err
	}
	if err := checkCommitment(cfg, 2, commitments...); err != nil {
		return portico.SubParams{}, err
	}
	received := false
	if v, ok := cfg["enableReceivedNotification"]; ok {
		if received, err = rpcparams.Bool(v, 2, "config.enableReceivedNotification"); err != nil {
			return portico.SubParams{}, err
		}
	}
	// With received notifications the subscription sends two.
	return portico.SubParams{Kind: "signature", Send: raw, Ends: !received}, nil
}

func blockSubParams(raw jsontext.Value) (portico.SubParams, error) {
	p, err := positional(raw, 1, "filter", "config")
	if err != nil {
		return portico.SubParams{}, err
	}
	if p[0].Kind() == '"' {
		if _, err := rpcparams.Enum(p[0], 1, "filter", "all"); err != nil {
			return portico.SubParams{}, err
		}
	} else {
		f, err := rpcparams.Object(p[0], 1, "filter", "mentionsAccountOrProgram")
		if err != nil {
			return portico.SubParams{}, err
		}
		if err := checkKey(f["mentionsAccountOrProgram"], 1, "filter.mentionsAccountOrProgram", "public key", 32); err != nil {
			return portico.SubParams{}, err
		}
	}
	cfg, err := config(p, 1, "commitment", "encoding", "transactionDetails", "showRewards", "maxSupportedTransactionVersion", "resumeFrom")
	if err != nil {
		return portico.SubParams{}, err
	}
	if err := checkCommitment(cfg, 2, commitments...); err != nil {
		return portico.SubParams{}, err
	}
	if v, ok := cfg["encoding"]; ok {
		if _, err := rpcparams.Enum(v, 2, "config.encoding", encodings...); err != nil {
			return portico.SubParams{}, err
		}
	}
	if v, ok := cfg["transactionDetails"]; ok {
		if _, err := rpcparams.Enum(v, 2, "config.transactionDetails", transactionDetails...); err != nil {
			return portico.SubParams{}, err
		}
	}
	if v, ok := cfg["showRewards"]; ok {
		if _, err := rpcparams.Bool(v, 2, "config.showRewards"); err != nil {
			return portico.SubParams{}, err
		}
	}
	if _, _, err := checkUint(cfg, 2, "maxSupportedTransactionVersion", 255); err != nil {
		return portico.SubParams{}, err
	}
	resume, send, err := resumeConfig(raw, p, cfg)
	if err != nil {
		return portico.SubParams{}, err
	}
	if resume != nil && p[0].Kind() != '"' {
		return portico.SubParams{}, rpcparams.Errorf(2, "config.resumeFrom", `a block subscription resumes with the filter "all" only`)
	}
	return portico.SubParams{Kind: "block", Send: send, Resume: resume}, nil
}

// slotOf reads the slot of a slot notification.
func slotOf(kind string, result jsontext.Value) (uint64, bool) {
	if kind != "slot" {
		return 0, false
	}
	var s struct {
		Slot *uint64 `json:"slot"`
	}
	if json.Unmarshal(result, &s, json.RejectUnknownMembers(false)) != nil || s.Slot == nil {
		return 0, false
	}
	return *s.Slot, true
}

// slotHead makes a slot notification from tracked heads (for nodes that
// speak HTTP only): the slot, the one before it as parent (skipped slots
// are not known from polling), and the finalized slot as root, in agave's
// member order.
func slotHead(_ context.Context, _ portico.Caller, _ string, b portico.Header, h portico.Heads) (jsontext.Value, error) {
	n := b.Number
	parent := n
	if n > 0 {
		parent = n - 1
	}
	return jsontext.Value(`{"slot":` + strconv.FormatUint(n, 10) + `,"parent":` + strconv.FormatUint(parent, 10) +
		`,"root":` + strconv.FormatUint(min(h.Finalized, n), 10) + `}`), nil
}
