// Package starknet is the method table of the rollup family (the Starknet
// JSON-RPC, spec v0.8 with the later block tags): starknet_getEvents and
// starknet_getStateUpdate with full params validation (also under the seed's
// names rollup_getEvents and rollup_getStateUpdate), rows with params
// validation for the methods every client calls first (blockNumber,
// blockHashAndNumber, chainId, specVersion, getBlockWithTxHashes,
// getTransactionReceipt), and every other method of the spec's read, write,
// trace and executables APIs served by default, params as they came. Every
// starknet_ method also answers as rollup_.
//
// Params may be named (an object) or positional (an array), as real rollup
// nodes accept both. The seed makes filter.from_block and filter.to_block
// required where the spec makes them optional; the gateway follows the seed
// (docs/methods.md).
package starknet

import (
	"math/big"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// Family is the rollup family's name.
const Family portico.Family = "starknet"

// Credit costs of the family's methods, Infura's published figures (its
// default is 80, as here). getEvents scans a block range, so it costs more
// than a single block read.
const (
	CostGetEvents      = 200
	CostGetStateUpdate = 80
	DefaultCost        = 80
)

// costs are the credit costs of the methods without a row of their own
// that do not cost DefaultCost: Infura's figures, and for the methods it
// does not price, the figure of the method each resembles.
var costs = map[string]int{
	"starknet_addInvokeTransaction":        700,
	"starknet_addDeclareTransaction":       700,
	"starknet_addDeployAccountTransaction": 700,
	"starknet_estimateFee":                 240,
	"starknet_simulateTransactions":        160,
	"starknet_syncing":                     5,
	// An estimate, as starknet_estimateFee.
	"starknet_estimateMessageFee": 240,
	// One transaction re-executed, as starknet_simulateTransactions.
	"starknet_traceTransaction": 160,
	// Every transaction of a block re-executed, as the EVM's
	// debug_traceBlockByNumber.
	"starknet_traceBlockTransactions": 1000,
	// Merkle proofs, as the EVM's eth_getProof.
	"starknet_getStorageProof": 150,
}

// Costs returns the credit costs of the methods without a row of their
// own that do not cost DefaultCost.
func Costs() map[string]int {
	out := make(map[string]int, len(costs))
	for k, v := range costs {
		out[k] = v
	}
	return out
}

// Limits of getEvents, as pathfinder enforces them.
const (
	MaxChunkSize    = 1024
	MaxKeyPositions = 16
	MaxKeys         = 256 // felts over all positions
)

// SpecError is an error with a code from the rollup spec (31 page size too
// big, 34 too many keys), raised by the gateway about params it checks
// before forwarding.
type SpecError struct {
	Code    int
	Message string
}

// Error returns the spec's message.
func (e *SpecError) Error() string { return e.Message }

// ErrorCode returns the spec's code.
func (e *SpecError) ErrorCode() int { return e.Code }

// The spec's errors the gateway raises itself.
var (
	ErrPageSizeTooBig = &SpecError{Code: 31, Message: "Requested page size is too big"}
	ErrTooManyKeys    = &SpecError{Code: 34, Message: "Too many keys provided in a filter"}
)

// Table returns the rollup family's method table.
func Table() portico.Table {
	return withNodes(portico.Table{
		Family: Family,
		Methods: []portico.Method{
			{
				Name:    "starknet_getEvents",
				Aliases: []string{"rollup_getEvents"},
				Params:  GetEventsParams,
				Cost:    CostGetEvents,
			},
			{
				Name:    "starknet_getStateUpdate",
				Aliases: []string{"rollup_getStateUpdate"},
				Params:  GetStateUpdateParams,
				Cost:    CostGetStateUpdate,
			},
			{Name: "starknet_blockNumber", Aliases: []string{"rollup_blockNumber"}, Params: NoParams, Cost: DefaultCost, FromHeads: blockNumber},
			{Name: "starknet_blockHashAndNumber", Aliases: []string{"rollup_blockHashAndNumber"}, Params: NoParams, Cost: DefaultCost, FromHeads: blockHashAndNumber},
			{Name: "starknet_chainId", Aliases: []string{"rollup_chainId"}, Params: immutable(NoParams), Cost: 5},
			{Name: "starknet_specVersion", Aliases: []string{"rollup_specVersion"}, Params: immutable(NoParams), Cost: 5},
			{
				Name:    "starknet_getBlockWithTxHashes",
				Aliases: []string{"rollup_getBlockWithTxHashes"},
				Params:  GetBlockParams,
				Cost:    DefaultCost,
			},
			{
				Name:    "starknet_getTransactionReceipt",
				Aliases: []string{"rollup_getTransactionReceipt"},
				Params:  GetTransactionReceiptParams,
				Cost:    DefaultCost,
			},
		},
		DefaultCost:   DefaultCost,
		Costs:         Costs(),
		Chain:         Chain(),
		AliasPrefixes: map[string]string{"rollup_": "starknet_"},
		Known:         knownRules(),
		Subscriptions: Subscriptions(),
		Writes:        []string{"starknet_addInvokeTransaction", "starknet_addDeclareTransaction", "starknet_addDeployAccountTransaction"},
		NamePattern:   `^(starknet|rollup)_[A-Za-z0-9]+$`,
		KeyForm:       portico.KeyHexFold,
		// The spec's methods without a row (TestSpecMethods checks the
		// list against the spec in testdata/specs/starknet-0.8.1).
		DefaultAllow: []string{
			// Read API.
			"starknet_call", "starknet_estimateFee", "starknet_estimateMessageFee", "starknet_getBlockTransactionCount",
			"starknet_getBlockWithReceipts", "starknet_getBlockWithTxs",
			"starknet_getClass", "starknet_getClassAt", "starknet_getClassHashAt", "starknet_getMessagesStatus",
			"starknet_getNonce", "starknet_getStorageAt", "starknet_getStorageProof", "starknet_getTransactionByBlockIdAndIndex",
			"starknet_getTransactionByHash", "starknet_getTransactionStatus", "starknet_syncing",
			// Write API.
			"starknet_addInvokeTransaction", "starknet_addDeclareTransaction", "starknet_addDeployAccountTransaction",
			// Trace API.
			"starknet_simulateTransactions", "starknet_traceBlockTransactions", "starknet_traceTransaction",
			// Executables API.
			"starknet_getCompiledCasm",
		},
	})
}

var (
	filterFields = []string{"from_block", "to_block", "address", "keys", "chunk_size", "continuation_token"}
	blockTags    = []string{"latest", "pending", "pre_confirmed", "l1_accepted"}
	// fieldPrime is the Stark field's modulus, 2^251 + 17·2^192 + 1: a felt
	// is below it.
	fieldPrime = func() *big.Int {
		p := new(big.Int).Lsh(big.NewInt(1), 251)
		p.Add(p, new(big.Int).Lsh(big.NewInt(17), 192))
		return p.Add(p, big.NewInt(1))
	}()
)

// splitParams splits named or positional params into values by name.
func splitParams(raw jsontext.Value, required int, names ...string) (map[string]jsontext.Value, bool, error) {
	if len(raw) > 0 && raw.Kind() == '{' {
		obj, err := rpcparams.Object(raw, 0, "", names...)
		if err != nil {
			return nil, true, err
		}
		for _, n := range names[:required] {
			if _, ok := obj[n]; !ok {
				return nil, true, rpcparams.Errorf(0, n, "missing; it is required")
			}
		}
		return obj, true, nil
	}
	if len(raw) == 0 || raw.Kind() != '[' {
		return nil, false, rpcparams.Errorf(0, "", "want an object {%s} or an array, got %s", strings.Join(names, ", "), rpcparams.Describe(raw))
	}
	items, err := rpcparams.Positional(raw, required, names...)
	if err != nil {
		return nil, false, err
	}
	out := map[string]jsontext.Value{}
	for i, v := range items {
		out[names[i]] = v
	}
	return out, false, nil
}

// pos returns the position to report for a named param: its index+1 for
// positional params, 0 for named ones.
func pos(named bool, i int) int {
	if named {
		return 0
	}
	return i + 1
}

// GetEventsParams checks {filter} or [filter]. Params are forwarded as
// they came.
func GetEventsParams(raw jsontext.Value) (portico.Params, error) {
	p, named, err := splitParams(raw, 1, "filter")
	if err != nil {
		return portico.Params{}, err
	}
	at := pos(named, 0)
	f, err := rpcparams.Object(p["filter"], at, "filter", filterFields...)
	if err != nil {
		return portico.Params{}, err
	}
	for _, name := range []string{"from_block", "to_block", "chunk_size"} {
		if _, ok := f[name]; !ok {
			return portico.Params{}, rpcparams.Errorf(at, "filter."+name, "missing; it is required")
		}
	}
	from, err := blockID(f["from_block"], at, "filter.from_block")
	if err != nil {
		return portico.Params{}, err
	}
	to, err := blockID(f["to_block"], at, "filter.to_block")
	if err != nil {
		return portico.Params{}, err
	}
	if v, ok := f["address"]; ok {
		if v.Kind() == '[' {
			addrs, err := rpcparams.Array(v, at, "filter.address")
			if err != nil {
				return portico.Params{}, err
			}
			for i, a := range addrs {
				if err := felt(a, at, rpcparams.Index("filter.address", i)); err != nil {
					return portico.Params{}, err
				}
			}
		} else if err := felt(v, at, "filter.address"); err != nil {
			return portico.Params{}, err
		}
	}
	if v, ok := f["keys"]; ok {
		if err := keys(v, at); err != nil {
			return portico.Params{}, err
		}
	}
	size, err := rpcparams.Uint(f["chunk_size"], at, "filter.chunk_size", rpcparams.MaxUint64)
	if err != nil {
		return portico.Params{}, err
	}
	if size == 0 {
		return portico.Params{}, rpcparams.Errorf(at, "filter.chunk_size", "must be at least 1, got 0")
	}
	if size > MaxChunkSize {
		return portico.Params{}, ErrPageSizeTooBig
	}
	if v, ok := f["continuation_token"]; ok {
		tok, err := rpcparams.String(v, at, "filter.continuation_token")
		if err != nil {
			return portico.Params{}, err
		}
		if tok == "" {
			return portico.Params{}, rpcparams.Errorf(at, "filter.continuation_token", "must not be empty; leave it out for the first page")
		}
	}
	out := eventsParams(raw, named, f, from, to)
	if from.Kind != portico.BlockHash && to.Kind != portico.BlockHash {
		// Bounded by the network's (and the key's) log limits; pages are
		// the client's to follow, so the range is never split.
		out.Logs = &portico.LogQuery{From: from, To: to, Addresses: countFelts(f["address"]), Topics: countFelts(f["keys"])}
	}
	return out, nil
}

// countFelts counts the felts of an address (one, or an array) or of
// keys (an array of arrays), once checked.
func countFelts(v jsontext.Value) int {
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
			n += countFelts(e)
		}
		return n
	}
	return 0
}

// keys checks an array of arrays of felts: OR within a position, AND across
// positions, an empty position matches any key.
func keys(v jsontext.Value, at int) error { return keysAt(v, at, "filter.keys") }

// keysAt is keys for a field named field.
func keysAt(v jsontext.Value, at int, fieldName string) error {
	outer, err := rpcparams.Array(v, at, fieldName)
	if err != nil {
		return err
	}
	if len(outer) > MaxKeyPositions {
		return ErrTooManyKeys
	}
	total := 0
	for i, pos := range outer {
		field := rpcparams.Index(fieldName, i)
		inner, err := rpcparams.Array(pos, at, field)
		if err != nil {
			return err
		}
		total += len(inner)
		if total > MaxKeys {
			return ErrTooManyKeys
		}
		for j, k := range inner {
			if err := felt(k, at, rpcparams.Index(field, j)); err != nil {
				return err
			}
		}
	}
	return nil
}

// GetStateUpdateParams checks {block_id, contract_addresses?} or the
// positional form. The state update of a block named by hash never
// changes.
func GetStateUpdateParams(raw jsontext.Value) (portico.Params, error) {
	p, named, err := splitParams(raw, 1, "block_id", "contract_addresses")
	if err != nil {
		return portico.Params{}, err
	}
	b, err := blockID(p["block_id"], pos(named, 0), "block_id")
	if err != nil {
		return portico.Params{}, err
	}
	if v, ok := p["contract_addresses"]; ok {
		addrs, err := rpcparams.Array(v, pos(named, 1), "contract_addresses")
		if err != nil {
			return portico.Params{}, err
		}
		for i, a := range addrs {
			if err := felt(a, pos(named, 1), rpcparams.Index("contract_addresses", i)); err != nil {
				return portico.Params{}, err
			}
		}
	}
	return blockIDParams(raw, p, named, []string{"block_id", "contract_addresses"}, "block_id", b), nil
}

// NoParams checks the params of a method that takes none: absent, [] or
// {}.
func NoParams(raw jsontext.Value) (portico.Params, error) {
	switch {
	case len(raw) == 0:
		return portico.Params{Send: raw}, nil
	case raw.Kind() == '[':
		items, err := rpcparams.Array(raw, 0, "")
		if err != nil {
			return portico.Params{}, err
		}
		if len(items) > 0 {
			return portico.Params{}, rpcparams.Errorf(1, "", "this method takes no params, got %d", len(items))
		}
		return portico.Params{Send: raw}, nil
	case raw.Kind() == '{':
		if _, err := rpcparams.Object(raw, 0, ""); err != nil {
			return portico.Params{}, rpcparams.Errorf(0, "", "this method takes no params, got an object with members")
		}
		return portico.Params{Send: raw}, nil
	}
	return portico.Params{}, rpcparams.Errorf(0, "", "this method takes no params, got %s", rpcparams.Describe(raw))
}

// GetBlockParams checks {block_id} or [block_id], the params of
// getBlockWithTxHashes. A block named by hash never changes.
func GetBlockParams(raw jsontext.Value) (portico.Params, error) {
	p, named, err := splitParams(raw, 1, "block_id")
	if err != nil {
		return portico.Params{}, err
	}
	b, err := blockID(p["block_id"], pos(named, 0), "block_id")
	if err != nil {
		return portico.Params{}, err
	}
	return blockIDParams(raw, p, named, []string{"block_id"}, "block_id", b), nil
}

// GetTransactionReceiptParams checks {transaction_hash} or
// [transaction_hash].
func GetTransactionReceiptParams(raw jsontext.Value) (portico.Params, error) {
	p, named, err := splitParams(raw, 1, "transaction_hash")
	if err != nil {
		return portico.Params{}, err
	}
	if err := felt(p["transaction_hash"], pos(named, 0), "transaction_hash"); err != nil {
		return portico.Params{}, err
	}
	return portico.Params{Send: raw, Cache: portico.FinalResult, ResultBlock: resultBlock}, nil
}

// blockID checks a BLOCK_ID: {block_hash} or {block_number}, exactly one,
// or a tag, and says which block it names.
func blockID(v jsontext.Value, at int, field string) (portico.Block, error) {
	const want = `want {"block_hash": felt}, {"block_number": integer} or one of latest, pending, pre_confirmed, l1_accepted`
	switch v.Kind() {
	case '"':
		tag, err := rpcparams.Enum(v, at, field, blockTags...)
		if err != nil {
			return portico.Block{}, rpcparams.Errorf(at, field, "%s, got %s", want, rpcparams.Describe(v))
		}
		return portico.Block{Kind: portico.BlockTag, Tag: tag}, nil
	case '{':
		obj, err := rpcparams.Object(v, at, field, "block_hash", "block_number")
		if err != nil {
			return portico.Block{}, err
		}
		h, hasHash := obj["block_hash"]
		n, hasNum := obj["block_number"]
		switch {
		case hasHash == hasNum:
			return portico.Block{}, rpcparams.Errorf(at, field, "set exactly one of block_hash and block_number")
		case hasHash:
			return portico.Block{Kind: portico.BlockHash}, felt(h, at, field+".block_hash")
		}
		num, err := rpcparams.Uint(n, at, field+".block_number", rpcparams.MaxUint64)
		return portico.Block{Kind: portico.BlockNumber, Number: num}, err
	}
	return portico.Block{}, rpcparams.Errorf(at, field, "%s, got %s", want, rpcparams.Describe(v))
}

// felt checks a field element: 0x and 1 to 64 hex digits, below the
// field's prime.
func felt(v jsontext.Value, at int, field string) error {
	s, err := rpcparams.String(v, at, field)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(s, "0x") || len(s) < 3 || len(s) > 66 || !rpcparams.IsHex(s[2:]) {
		return rpcparams.Errorf(at, field, "want a felt, 0x and 1 to 64 hex digits, got %s", rpcparams.Describe(v))
	}
	n, _ := new(big.Int).SetString(s[2:], 16)
	if n.Cmp(fieldPrime) >= 0 {
		return rpcparams.Errorf(at, field, "felt is not below the field prime 2^251+17*2^192+1: %s", rpcparams.Describe(v))
	}
	return nil
}
