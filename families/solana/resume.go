package solana

import (
	"context"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// Resumed subscriptions (docs/subscriptions.md): logsSubscribe and
// blockSubscribe take "resumeFrom" in their config, the last slot the
// client saw; Portico first sends what they would have carried for every
// block of the served chain after it (skipped slots have none), read
// with getBlock, then goes on live. slotSubscribe and rootSubscribe
// cannot resume: a node keeps no past slot or root notifications.

// voteProgram is the vote program, whose simple vote transactions the
// logs filter "all" leaves out, as agave does.
const voteProgram = "Vote111111111111111111111111111111111111111"

// errCannotResume is the refusal of a resume by a subscription that has
// nothing to replay.
func errCannotResume(kind string) error {
	return rpcparams.Errorf(1, "resumeFrom", "%sSubscribe cannot resume: past %s notifications are not kept; subscribe without resumeFrom (logsSubscribe and blockSubscribe resume from a slot)", kind, kind)
}

// asksResume reports whether params name resumeFrom anywhere in an
// object param.
func asksResume(p []jsontext.Value) bool {
	for _, v := range p {
		if v.Kind() != '{' {
			continue
		}
		var m map[string]jsontext.Value
		if json.Unmarshal(v, &m) == nil {
			if _, ok := m["resumeFrom"]; ok {
				return true
			}
		}
	}
	return false
}

// resumeConfig takes resumeFrom out of a subscription's config (p[1]):
// the resume point, and the params to send for the live part.
func resumeConfig(raw jsontext.Value, p []jsontext.Value, cfg map[string]jsontext.Value) (*portico.Resume, jsontext.Value, error) {
	v, ok := cfg["resumeFrom"]
	if !ok {
		return nil, raw, nil
	}
	n, err := rpcparams.Uint(v, 2, "config.resumeFrom", rpcparams.MaxUint64)
	if err != nil {
		return nil, nil, err
	}
	rest := make(map[string]jsontext.Value, len(cfg))
	for k, v := range cfg {
		if k != "resumeFrom" {
			rest[k] = v
		}
	}
	c, err := json.Marshal(rest, json.Deterministic(true))
	if err != nil {
		return nil, nil, rpcparams.Errorf(2, "config", "%v", err)
	}
	send := jsontext.Value(`[` + string(p[0]) + `,` + string(c) + `]`)
	return &portico.Resume{Number: n, Position: 2, Field: "config.resumeFrom"}, send, nil
}

// notificationSlot reads the slot a logs or block notification is about.
func notificationSlot(kind string, result jsontext.Value) (portico.Header, bool, bool) {
	if kind != "logs" && kind != "block" {
		return portico.Header{}, false, false
	}
	var n struct {
		Context struct {
			Slot *uint64 `json:"slot"`
		} `json:"context"`
	}
	if json.Unmarshal(result, &n, json.RejectUnknownMembers(false)) != nil || n.Context.Slot == nil {
		return portico.Header{}, false, false
	}
	return portico.Header{Number: *n.Context.Slot}, false, true
}

// subConfig reads a logs or block subscription's params as sent.
func subConfig(send jsontext.Value) (filter jsontext.Value, cfg map[string]jsontext.Value, err error) {
	var p []jsontext.Value
	if err := json.Unmarshal(send, &p); err != nil || len(p) == 0 {
		return nil, nil, rpcparams.Errorf(0, "", "want [filter, config?]")
	}
	cfg = map[string]jsontext.Value{}
	if len(p) > 1 && p[1].Kind() == '{' {
		if err := json.Unmarshal(p[1], &cfg); err != nil {
			return nil, nil, err
		}
	}
	return p[0], cfg, nil
}

// getBlockCommitment is the commitment a backfill reads a block at: the
// subscription's, where getBlock takes it (confirmed for processed).
func getBlockCommitment(cfg map[string]jsontext.Value) jsontext.Value {
	if c, ok := cfg["commitment"]; ok && string(c) == `"finalized"` {
		return c
	}
	return jsontext.Value(`"confirmed"`)
}

// backfill makes a logs or block subscription's notifications about the
// block in slot b, for a resumed subscription, from getBlock.
func backfill(ctx context.Context, node portico.Caller, kind string, send jsontext.Value, b portico.Header, removed bool) ([]jsontext.Value, error) {
	if removed || (kind != "logs" && kind != "block") {
		return nil, nil // the slot chain tells no removals
	}
	filter, cfg, err := subConfig(send)
	if err != nil {
		return nil, err
	}
	opts := map[string]jsontext.Value{"commitment": getBlockCommitment(cfg), "maxSupportedTransactionVersion": jsontext.Value("0")}
	if kind == "logs" {
		opts["encoding"], opts["transactionDetails"], opts["rewards"] = jsontext.Value(`"json"`), jsontext.Value(`"full"`), jsontext.Value("false")
	} else {
		opts["encoding"], opts["transactionDetails"], opts["rewards"] = jsontext.Value(`"base64"`), jsontext.Value(`"full"`), jsontext.Value("false")
		for k, name := range map[string]string{"encoding": "encoding", "transactionDetails": "transactionDetails", "showRewards": "rewards", "maxSupportedTransactionVersion": "maxSupportedTransactionVersion"} {
			if v, ok := cfg[k]; ok {
				opts[name] = v
			}
		}
	}
	o, err := json.Marshal(opts, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	slot := strconv.FormatUint(b.Number, 10)
	res, err := node.Call(ctx, "getBlock", jsontext.Value(`[`+slot+`,`+string(o)+`]`), nil)
	if err != nil {
		return nil, err
	}
	if string(res) == "null" {
		return nil, nil
	}
	ctxSlot := `{"context":{"slot":` + slot + `},"value":`
	if kind == "block" {
		return []jsontext.Value{jsontext.Value(ctxSlot + `{"slot":` + slot + `,"block":` + string(res) + `,"err":null}}`)}, nil
	}
	return blockLogs(res, filter, ctxSlot)
}

// blockLogs makes the logs notifications of a block (getBlock's json
// encoding) that filter matches, in the block's order.
func blockLogs(block, filter jsontext.Value, ctxSlot string) ([]jsontext.Value, error) {
	var blk struct {
		Transactions []struct {
			Transaction struct {
				Signatures []string `json:"signatures"`
				Message    struct {
					AccountKeys  []string `json:"accountKeys"`
					Instructions []struct {
						ProgramIDIndex int `json:"programIdIndex"`
					} `json:"instructions"`
				} `json:"message"`
			} `json:"transaction"`
			Version jsontext.Value `json:"version"`
			Meta    struct {
				Err             jsontext.Value `json:"err"`
				LogMessages     []string       `json:"logMessages"`
				LoadedAddresses struct {
					Writable []string `json:"writable"`
					Readonly []string `json:"readonly"`
				} `json:"loadedAddresses"`
			} `json:"meta"`
		} `json:"transactions"`
	}
	if err := json.Unmarshal(block, &blk, json.RejectUnknownMembers(false)); err != nil {
		return nil, err
	}
	var mention string
	withVotes := string(filter) == `"allWithVotes"`
	if filter.Kind() == '{' {
		var f struct {
			Mentions []string `json:"mentions"`
		}
		if err := json.Unmarshal(filter, &f); err != nil || len(f.Mentions) != 1 {
			return nil, rpcparams.Errorf(1, "filter.mentions", "want one public key")
		}
		mention = f.Mentions[0]
	}
	var out []jsontext.Value
	for _, tx := range blk.Transactions {
		msg := tx.Transaction.Message
		keys := slices.Concat(msg.AccountKeys, tx.Meta.LoadedAddresses.Writable, tx.Meta.LoadedAddresses.Readonly)
		switch {
		case mention != "":
			if !slices.Contains(keys, mention) {
				continue
			}
		case !withVotes:
			legacy := len(tx.Version) == 0 || string(tx.Version) == `"legacy"`
			if legacy && len(tx.Transaction.Signatures) < 3 && len(msg.Instructions) == 1 &&
				msg.Instructions[0].ProgramIDIndex < len(msg.AccountKeys) && msg.AccountKeys[msg.Instructions[0].ProgramIDIndex] == voteProgram {
				continue
			}
		}
		if len(tx.Transaction.Signatures) == 0 {
			continue
		}
		errV := tx.Meta.Err
		if len(errV) == 0 {
			errV = jsontext.Value("null")
		}
		logs := tx.Meta.LogMessages
		if logs == nil {
			logs = []string{}
		}
		v, err := json.Marshal(struct {
			Signature string         `json:"signature"`
			Err       jsontext.Value `json:"err"`
			Logs      []string       `json:"logs"`
		}{tx.Transaction.Signatures[0], errV, logs})
		if err != nil {
			return nil, err
		}
		out = append(out, jsontext.Value(ctxSlot+string(v)+`}`))
	}
	return out, nil
}
