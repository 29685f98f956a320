package starknet

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// This file holds what the gateway needs beyond params checks: which block
// a call is about, how a tag is pinned to the block the gateway resolved
// it to, how long an answer stays true, and the rules of methods served
// when allowlisted. Params these rules do not concern (a call request, a
// class hash) are the node's to check, as without a rule.

// knownRules are the rules of allowlisted methods that name a block.
func knownRules() []portico.Method {
	at := func(name string, names ...string) portico.Method {
		return portico.Method{Name: name, Params: atBlockID(names...)}
	}
	return []portico.Method{
		at("starknet_getBlockWithTxs", "block_id"),
		at("starknet_getBlockWithReceipts", "block_id"),
		at("starknet_getBlockTransactionCount", "block_id"),
		at("starknet_getTransactionByBlockIdAndIndex", "block_id", "index"),
		at("starknet_getNonce", "block_id", "contract_address"),
		at("starknet_getClassHashAt", "block_id", "contract_address"),
		at("starknet_getClassAt", "block_id", "contract_address"),
		at("starknet_getClass", "block_id", "class_hash"),
		at("starknet_getStorageAt", "contract_address", "key", "block_id"),
		at("starknet_call", "request", "block_id"),
		at("starknet_estimateFee", "request", "simulation_flags", "block_id"),
		at("starknet_estimateMessageFee", "message", "block_id"),
		at("starknet_simulateTransactions", "block_id", "transactions", "simulation_flags"),
		at("starknet_traceBlockTransactions", "block_id"),
		// A class's compiled code never changes; the node checks the hash.
		{Name: "starknet_getCompiledCasm", Params: immutable(func(raw jsontext.Value) (portico.Params, error) {
			return portico.Params{Send: raw}, nil
		})},
	}
}

// atBlockID is the rule of a method whose params are names, all required,
// one of them block_id, named or positional.
func atBlockID(names ...string) func(jsontext.Value) (portico.Params, error) {
	return func(raw jsontext.Value) (portico.Params, error) {
		p, named, err := splitParams(raw, len(names), names...)
		if err != nil {
			return portico.Params{}, err
		}
		i := 0
		for names[i] != "block_id" {
			i++
		}
		b, err := blockID(p["block_id"], pos(named, i), "block_id")
		if err != nil {
			return portico.Params{}, err
		}
		return blockIDParams(raw, p, named, names, "block_id", b), nil
	}
}

// blockIDParams says how a call about block b (param field of p) is cached
// and pinned: by hash, for good; by number, until final or reorged;
// latest and l1_accepted, pinned to a number first; pending and
// pre_confirmed, never.
func blockIDParams(raw jsontext.Value, p map[string]jsontext.Value, named bool, names []string, field string, b portico.Block) portico.Params {
	out := portico.Params{Send: raw, Block: b}
	switch b.Kind {
	case portico.BlockHash:
		out.Cache = portico.Immutable
	case portico.BlockNumber:
		out.Cache = portico.ByBlock
	case portico.BlockTag:
		if _, ok := Chain().Tags[b.Tag]; !ok {
			break // pending state
		}
		out.Cache = portico.ByBlock
		out.Pin = func(n uint64) jsontext.Value { return rebuild(p, named, names, field, blockNumberID(n)) }
	}
	return out
}

func blockNumberID(n uint64) jsontext.Value {
	return jsontext.Value(`{"block_number":` + strconv.FormatUint(n, 10) + `}`)
}

// rebuild writes params back in their form (an object or an array in
// names' order) with field set to v.
func rebuild(p map[string]jsontext.Value, named bool, names []string, field string, v jsontext.Value) jsontext.Value {
	open, end := byte('['), byte(']')
	if named {
		open, end = '{', '}'
	}
	out := []byte{open}
	for _, name := range names {
		val, ok := p[name]
		if name == field {
			val, ok = v, true
		}
		if !ok {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		if named {
			out = strconv.AppendQuote(out, name)
			out = append(out, ':')
		}
		out = append(out, val...)
	}
	return append(out, end)
}

// eventsParams says how a getEvents page is cached: about its to_block; a
// to_block tag (and a from_block with the same tag) is pinned to a number.
func eventsParams(raw jsontext.Value, named bool, f map[string]jsontext.Value, from, to portico.Block) portico.Params {
	out := portico.Params{Send: raw, Block: to}
	_, pinnable := Chain().Tags[to.Tag]
	switch {
	case from.Kind == portico.BlockHash || to.Kind == portico.BlockHash:
		// A range ending at a block named by hash: the node resolves it.
	case from.Kind == portico.BlockNumber && to.Kind == portico.BlockNumber:
		out.Cache = portico.ByBlock
	case to.Kind == portico.BlockTag && pinnable && (from.Kind == portico.BlockNumber || from.Tag == to.Tag):
		out.Cache = portico.ByBlock
		tag := `"` + to.Tag + `"`
		out.Pin = func(n uint64) jsontext.Value {
			g := map[string]jsontext.Value{}
			for k, v := range f {
				g[k] = v
			}
			for _, end := range []string{"from_block", "to_block"} {
				if string(f[end]) == tag {
					g[end] = blockNumberID(n)
				}
			}
			filter, _ := json.Marshal(g, json.Deterministic(true))
			return rebuild(map[string]jsontext.Value{"filter": filter}, named, []string{"filter"}, "", nil)
		}
	}
	return out
}

// immutable makes a rule's answers cacheable for good.
func immutable(rule func(jsontext.Value) (portico.Params, error)) func(jsontext.Value) (portico.Params, error) {
	return func(raw jsontext.Value) (portico.Params, error) {
		p, err := rule(raw)
		p.Cache = portico.Immutable
		return p, err
	}
}

// resultBlock reads block_number from a receipt; a receipt of a pending
// transaction has none.
func resultBlock(res jsontext.Value) (uint64, bool) {
	var v struct {
		BlockNumber *uint64 `json:"block_number"`
	}
	if err := json.Unmarshal(res, &v, json.RejectUnknownMembers(false)); err != nil || v.BlockNumber == nil {
		return 0, false
	}
	return *v.BlockNumber, true
}

// blockNumber answers starknet_blockNumber from the tracked heads.
func blockNumber(_ portico.Params, h portico.Heads) (jsontext.Value, bool) {
	if h.Latest == 0 {
		return nil, false
	}
	return jsontext.Value(strconv.FormatUint(h.Latest, 10)), true
}

// blockHashAndNumber answers starknet_blockHashAndNumber from the tracked
// heads when they hold the newest block's hash.
func blockHashAndNumber(_ portico.Params, h portico.Heads) (jsontext.Value, bool) {
	if h.Latest == 0 || h.Head.Hash == "" || h.Head.Number != h.Latest {
		return nil, false
	}
	return jsontext.Value(`{"block_hash":` + strconv.Quote(h.Head.Hash) + `,"block_number":` + strconv.FormatUint(h.Latest, 10) + `}`), true
}
