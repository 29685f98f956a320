package evm

import (
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// This file holds the rules of the methods that are served when
// allowlisted: what block each call is about, how a tag is pinned to the
// block the gateway resolved it to, and how long an answer stays true.
// The params they do not concern (a transaction object, an address) are
// the node's to check, as without a rule.

// knownRules are the rules of allowlisted methods, by name.
func knownRules() []portico.Method {
	at := func(name string, required, pos int, names ...string) portico.Method {
		return portico.Method{Name: name, Params: atBlock(required, pos, names...)}
	}
	byHash := func(name string, names ...string) portico.Method {
		return portico.Method{Name: name, Params: hashFirst(portico.Immutable, nil, names...)}
	}
	return append([]portico.Method{
		at("eth_getBalance", 1, 1, "address", "block"),
		at("eth_getCode", 1, 1, "address", "block"),
		at("eth_getTransactionCount", 1, 1, "address", "block"),
		at("eth_getStorageAt", 2, 2, "address", "slot", "block"),
		at("eth_call", 1, 1, "transaction", "block", "stateOverrides", "blockOverrides"),
		at("eth_estimateGas", 1, 1, "transaction", "block", "stateOverrides"),
		at("eth_createAccessList", 1, 1, "transaction", "block"),
		at("eth_getBlockByNumber", 2, 0, "block", "fullTransactions"),
		at("eth_getBlockTransactionCountByNumber", 1, 0, "block"),
		at("eth_getUncleCountByBlockNumber", 1, 0, "block"),
		at("eth_getTransactionByBlockNumberAndIndex", 2, 0, "block", "index"),
		at("eth_getBlockReceipts", 1, 0, "block"),
		at("eth_feeHistory", 2, 1, "blockCount", "newestBlock", "rewardPercentiles"),
		byHash("eth_getBlockByHash", "blockHash", "fullTransactions"),
		byHash("eth_getBlockTransactionCountByHash", "blockHash"),
		byHash("eth_getUncleCountByBlockHash", "blockHash"),
		{Name: "eth_getTransactionByHash", Params: hashFirst(portico.FinalResult, resultBlock, "transactionHash")},
		{Name: "eth_getTransactionReceipt", Params: hashFirst(portico.FinalResult, resultBlock, "transactionHash")},
		{Name: "eth_getLogs", Params: GetLogsParams},
		{Name: "eth_chainId", Params: fixed(portico.Immutable)},
		{Name: "net_version", Params: fixed(portico.Immutable)},
		{Name: "eth_gasPrice", Params: fixed(portico.PerHead)},
		{Name: "eth_maxPriorityFeePerGas", Params: fixed(portico.PerHead)},
		{Name: "eth_blobBaseFee", Params: fixed(portico.PerHead)},
		{Name: "eth_blockNumber", Params: fixed(portico.NotCacheable), FromHeads: blockNumber},
	}, filterRules()...)
}

// atBlock is the rule of a positional method whose block is param pos
// (0-based) of names; required params come first. A call without the
// block is left as it is: the node's own default decides.
func atBlock(required, pos int, names ...string) func(jsontext.Value) (portico.Params, error) {
	return func(raw jsontext.Value) (portico.Params, error) {
		p, err := rpcparams.Positional(raw, required, names...)
		if err != nil {
			return portico.Params{}, err
		}
		if len(p) <= pos {
			return portico.Params{Send: raw}, nil
		}
		b, err := block(p[pos], pos+1, names[pos])
		if err != nil {
			return portico.Params{}, err
		}
		return blockParams(raw, p, pos, b), nil
	}
}

// blockParams says how a call about block b (param pos of p) is cached and
// pinned: by hash, for good; by number, until final or reorged; at a tag
// the gateway can resolve, pinned to a number first; pending, never.
func blockParams(raw jsontext.Value, p []jsontext.Value, pos int, b portico.Block) portico.Params {
	out := portico.Params{Send: raw, Block: b}
	switch b.Kind {
	case portico.BlockHash:
		out.Cache = portico.Immutable
	case portico.BlockNumber:
		out.Cache = portico.ByBlock
	case portico.BlockTag:
		if b.Tag == "pending" {
			break
		}
		out.Cache = portico.ByBlock
		out.Pin = func(n uint64) jsontext.Value { return replace(p, pos, quantityOf(n)) }
	}
	return out
}

// replace returns the array p with element i replaced by v.
func replace(p []jsontext.Value, i int, v jsontext.Value) jsontext.Value {
	out := []byte{'['}
	for j, e := range p {
		if j > 0 {
			out = append(out, ',')
		}
		if j == i {
			e = v
		}
		out = append(out, e...)
	}
	return append(out, ']')
}

func quantityOf(n uint64) jsontext.Value {
	return jsontext.Value(`"0x` + strconv.FormatUint(n, 16) + `"`)
}

// hashFirst is the rule of a method whose first param is a 32-byte hash
// (of a block or a transaction).
func hashFirst(c portico.Cacheability, rb func(jsontext.Value) (uint64, bool), names ...string) func(jsontext.Value) (portico.Params, error) {
	return func(raw jsontext.Value) (portico.Params, error) {
		p, err := rpcparams.Positional(raw, 1, names...)
		if err != nil {
			return portico.Params{}, err
		}
		if err := hash(p[0], 1, names[0]); err != nil {
			return portico.Params{}, err
		}
		return portico.Params{Send: raw, Cache: c, Block: portico.Block{Kind: portico.BlockHash}, ResultBlock: rb}, nil
	}
}

// resultBlock reads blockNumber from a transaction or receipt; a pending
// transaction has none.
func resultBlock(res jsontext.Value) (uint64, bool) {
	var v struct {
		BlockNumber *string `json:"blockNumber"`
	}
	if err := json.Unmarshal(res, &v, json.RejectUnknownMembers(false)); err != nil || v.BlockNumber == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(*v.BlockNumber, "0x"), 16, 64)
	return n, err == nil
}

// fixed is the rule of a method whose answer is cached as c whatever its
// params, which the node checks.
func fixed(c portico.Cacheability) func(jsontext.Value) (portico.Params, error) {
	return func(raw jsontext.Value) (portico.Params, error) {
		return portico.Params{Send: raw, Cache: c}, nil
	}
}

// blockNumber answers eth_blockNumber from the tracked heads.
func blockNumber(_ portico.Params, h portico.Heads) (jsontext.Value, bool) {
	if h.Latest == 0 {
		return nil, false
	}
	return quantityOf(h.Latest), true
}

// logFilterFields are the members of an eth_getLogs filter.
var logFilterFields = []string{"fromBlock", "toBlock", "address", "topics", "blockHash"}

// GetLogsParams checks [filter]: a blockHash, or a range whose ends are
// numbers or tags (latest when left out). Logs of a block named by hash
// never change; a range is about its last block, and tags in it are
// pinned to numbers. A filter the node refuses on its own (a blockHash
// with a range, a range whose start is after its end) is sent as it came,
// not cached, so that the client gets the node's answer, not Portico's
// version of it.
func GetLogsParams(raw jsontext.Value) (portico.Params, error) {
	p, err := rpcparams.Positional(raw, 1, "filter")
	if err != nil {
		return portico.Params{}, err
	}
	f, err := rpcparams.Object(p[0], 1, "filter", logFilterFields...)
	if err != nil {
		return portico.Params{}, err
	}
	if h, ok := f["blockHash"]; ok {
		if err := hash(h, 1, "filter.blockHash"); err != nil {
			return portico.Params{}, err
		}
		_, from := f["fromBlock"]
		_, to := f["toBlock"]
		if from || to {
			return portico.Params{Send: raw}, nil // the node's to refuse
		}
		return portico.Params{Send: raw, Cache: portico.Immutable, Block: portico.Block{Kind: portico.BlockHash}}, nil
	}
	ends := [2]portico.Block{{Kind: portico.BlockTag, Tag: "latest"}, {Kind: portico.BlockTag, Tag: "latest"}}
	for i, name := range []string{"fromBlock", "toBlock"} {
		v, ok := f[name]
		if !ok {
			continue
		}
		if v.Kind() != '"' {
			return portico.Params{}, rpcparams.Errorf(1, "filter."+name, "want a hex block number or a tag, got %s", rpcparams.Describe(v))
		}
		b, err := block(v, 1, "filter."+name)
		if err != nil {
			return portico.Params{}, err
		}
		if b.Kind == portico.BlockHash {
			return portico.Params{}, rpcparams.Errorf(1, "filter."+name, "want a hex block number or a tag, got a hash; use blockHash")
		}
		ends[i] = b
	}
	from, to := ends[0], ends[1]
	out := portico.Params{Send: raw, Block: to, Logs: logQuery(f, from, to)}
	switch {
	case from.Kind == portico.BlockNumber && to.Kind == portico.BlockNumber:
		if from.Number > to.Number {
			return portico.Params{Send: raw}, nil // the node's to refuse
		}
		out.Cache = portico.ByBlock
	case from.Tag == "pending" || to.Tag == "pending":
	case to.Kind == portico.BlockTag && (from.Kind == portico.BlockNumber || from.Tag == to.Tag):
		// One tag, in toBlock or in both ends: pinned, the filter names a
		// fixed range.
		out.Cache = portico.ByBlock
		tag := to.Tag
		out.Pin = func(n uint64) jsontext.Value {
			g := map[string]jsontext.Value{}
			for k, v := range f {
				g[k] = v
			}
			for _, name := range []string{"fromBlock", "toBlock"} {
				if v, ok := f[name]; !ok || string(v) == strconv.Quote(tag) {
					g[name] = quantityOf(n)
				}
			}
			b, _ := json.Marshal(g, json.Deterministic(true))
			return jsontext.Value("[" + string(b) + "]")
		}
	}
	return out, nil
}

// logQuery describes a range filter for the network's bounds and splits:
// its ends, how many addresses and topic values it names, and the same
// filter about any range of numbered blocks.
func logQuery(f map[string]jsontext.Value, from, to portico.Block) *portico.LogQuery {
	q := &portico.LogQuery{From: from, To: to, Addresses: countValues(f["address"]), Wrong: wrongRange}
	if t := f["topics"]; t.Kind() == '[' {
		var positions []jsontext.Value
		if json.Unmarshal(t, &positions) == nil {
			for _, p := range positions {
				q.Topics += countValues(p)
			}
		}
	}
	q.Range = func(a, b uint64) jsontext.Value {
		g := make(map[string]jsontext.Value, len(f))
		for k, v := range f {
			g[k] = v
		}
		g["fromBlock"], g["toBlock"] = quantityOf(a), quantityOf(b)
		out, _ := json.Marshal(g, json.Deterministic(true))
		return jsontext.Value("[" + string(out) + "]")
	}
	return q
}

// countValues counts what a filter member names: one for a string, the
// length of an array, none for null or nothing.
func countValues(v jsontext.Value) int {
	switch v.Kind() {
	case '"':
		return 1
	case '[':
		var vs []jsontext.Value
		if json.Unmarshal(v, &vs) != nil {
			return 0
		}
		n := 0
		for _, e := range vs {
			if e.Kind() != 'n' {
				n++
			}
		}
		return n
	}
	return 0
}
