package evm

import (
	"strings"

	"github.com/porticohq/portico"
)

// Where each method's params name the contracts a call reads or runs, for
// a key's contract-address allowlist (portico.Contracts, docs/keys.md).
// Every method of the spec, every method served by default or in a group,
// states it (TestContractsStated); a method a network names that is none
// of these states nothing and is refused to such a key.
//
// The shapes are read as strictly as the nodes that read them most
// strictly: go-ethereum reads object members in any case and takes the
// last of two matches, while anvil and reth (Rust, serde) read the exact
// name only. A call object or filter is therefore closed: it may hold the
// members below, each in its exact spelling and once; any other is
// refused, so that the address checked is the one every node acts on.

// callObject is a transaction or call object (the spec's
// GenericTransaction, with data, go-ethereum's and anvil's other name for
// input): to is required (a call without it creates a contract, whose
// init code may call anything), and an authorization list, which
// delegates an account's code to any contract for the call, must be left
// out.
func callObject() portico.Shape {
	others := func(names ...string) []portico.Member {
		out := make([]portico.Member, len(names))
		for i, n := range names {
			out[i] = portico.Member{Name: n}
		}
		return out
	}
	members := append([]portico.Member{
		{Name: "to", Shape: portico.Shape{Kind: portico.ShapeAddress, Required: true}},
		{Name: "authorizationList", Shape: portico.Shape{Kind: portico.ShapeAbsent}},
	}, others("from", "data", "input", "gas", "gasPrice", "maxFeePerGas", "maxPriorityFeePerGas", "value", "nonce",
		"accessList", "chainId", "type", "maxFeePerBlobGas", "blobVersionedHashes", "blobs", "commitments", "proofs")...)
	return portico.Shape{Kind: portico.ShapeObject, Required: true, Members: members}
}

// logFilterShape is the filter of eth_getLogs, eth_newFilter and a logs
// subscription: address is required (without it, or with null or [], a
// node returns the logs of every contract).
func logFilterShape() portico.Shape {
	return portico.Shape{Kind: portico.ShapeObject, Required: true, Members: []portico.Member{
		{Name: "address", Shape: portico.Shape{Kind: portico.ShapeAddresses, Required: true}},
		{Name: "fromBlock"}, {Name: "toBlock"}, {Name: "blockHash"}, {Name: "topics"},
	}}
}

// logSubscriptionShape is a logs subscription's filter: a log query's,
// and resumeFrom, a block hash (docs/subscriptions.md).
func logSubscriptionShape() portico.Shape {
	s := logFilterShape()
	s.Members = append(s.Members, portico.Member{Name: "resumeFrom"})
	return s
}

func param(name string, s portico.Shape) portico.Param { return portico.Param{Name: name, Shape: s} }

func anyParam(name string) portico.Param { return portico.Param{Name: name} }

func absent(name string) portico.Param {
	return portico.Param{Name: name, Shape: portico.Shape{Kind: portico.ShapeAbsent}}
}

func named(params ...portico.Param) portico.Contracts {
	return portico.Contracts{Reads: portico.ReadsNamed, Params: params}
}

func address1() portico.Shape { return portico.Shape{Kind: portico.ShapeAddress, Required: true} }

func readsNone() portico.Contracts { return portico.Contracts{Reads: portico.ReadsNone} }

func readsAny() portico.Contracts { return portico.Contracts{Reads: portico.ReadsAny} }

// Contracts returns the statement of every method of the family, by
// name (portico.Table.Contracts).
func Contracts() map[string]portico.Contracts {
	// eth_call, eth_estimateGas and eth_createAccessList run the call
	// against the state; go-ethereum and anvil take state overrides
	// third and block overrides fourth, which must be left out.
	call := named(param("transaction", callObject()), anyParam("block"), absent("stateOverrides"), absent("blockOverrides"))
	account := named(param("address", address1()), anyParam("block"))
	filter := named(param("filter", logFilterShape()))
	out := map[string]portico.Contracts{
		"eth_call":                call,
		"eth_estimateGas":         call,
		"eth_createAccessList":    call,
		"eth_fillTransaction":     call, // estimates gas: runs the call
		"eth_getBalance":          account,
		"eth_getCode":             account,
		"eth_getTransactionCount": account,
		"eth_getStorageAt":        named(param("address", address1()), anyParam("slot"), anyParam("block")),
		"eth_getProof":            named(param("address", address1()), anyParam("storageKeys"), anyParam("block")),
		// {address: [slots]}: every member name is a contract.
		"eth_getStorageValues": named(param("requests", portico.Shape{Kind: portico.ShapeAddressKeys, Required: true}), anyParam("block")),
		"eth_getLogs":          filter,
		"eth_newFilter":        filter,
		// blockStateCalls[].calls[] are call objects; each block's
		// overrides must be left out.
		"eth_simulateV1": named(param("payload", portico.Shape{Kind: portico.ShapeObject, Required: true, Members: []portico.Member{
			{Name: "blockStateCalls", Shape: portico.Shape{Kind: portico.ShapeList, Elem: &portico.Shape{Kind: portico.ShapeObject, Members: []portico.Member{
				{Name: "calls", Shape: portico.Shape{Kind: portico.ShapeList, Elem: ptr(callObject())}},
				{Name: "stateOverrides", Shape: portico.Shape{Kind: portico.ShapeAbsent}},
				{Name: "blockOverrides", Shape: portico.Shape{Kind: portico.ShapeAbsent}},
			}}}},
			{Name: "traceTransfers"}, {Name: "validation"}, {Name: "returnFullTransactions"},
		}}), anyParam("block")),
		"debug_storageRangeAt": named(anyParam("blockHash"), anyParam("txIndex"), param("address", address1()), anyParam("keyStart"), anyParam("maxResult")),

		// A block's access list holds the storage every transaction of
		// the block wrote, of any contract.
		"eth_getBlockAccessList":      readsAny(),
		"debug_getRawBlockAccessList": readsAny(),
	}
	// Traces run blocks, transactions or calls with a tracer that reads
	// any state it likes (prestateTracer, a JavaScript tracer's db).
	for _, name := range []string{"debug_traceBlock", "debug_traceBlockByHash", "debug_traceBlockByNumber", "debug_traceCall", "debug_traceTransaction",
		"trace_block", "trace_call", "trace_callMany", "trace_filter", "trace_get", "trace_rawTransaction",
		"trace_replayBlockTransactions", "trace_replayTransaction", "trace_transaction"} {
		out[name] = readsAny()
	}
	// The chain's record (heads, fees, blocks, transactions, receipts,
	// filters by id, whose address was checked when they were made), the
	// node's pool, and writes: they read no contract's state. A signed
	// transaction is sent as it is, as hosted providers do for their
	// contract allowlists.
	for _, name := range []string{"eth_baseFee", "eth_blobBaseFee", "eth_blockNumber", "eth_capabilities", "eth_chainId", "eth_config",
		"eth_feeHistory", "eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_syncing", "net_version", "net_listening",
		"web3_clientVersion", "web3_sha3",
		"eth_getBlockByHash", "eth_getBlockByNumber", "eth_getBlockReceipts", "eth_getBlockTransactionCountByHash",
		"eth_getBlockTransactionCountByNumber", "eth_getTransactionByBlockHashAndIndex", "eth_getTransactionByBlockNumberAndIndex",
		"eth_getTransactionByHash", "eth_getTransactionReceipt", "eth_getUncleByBlockHashAndIndex",
		"eth_getUncleByBlockNumberAndIndex", "eth_getUncleCountByBlockHash", "eth_getUncleCountByBlockNumber",
		"eth_newBlockFilter", "eth_newPendingTransactionFilter", "eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter",
		"eth_sendRawTransaction", "eth_sendRawTransactionSync",
		"debug_getBadBlocks", "debug_getRawBlock", "debug_getRawHeader", "debug_getRawReceipts", "debug_getRawTransaction",
		"txpool_content", "txpool_contentFrom", "txpool_inspect", "txpool_status",
		"eth_accounts", "eth_coinbase", "eth_sign", "eth_signTransaction", "eth_sendTransaction"} {
		out[name] = readsNone()
	}
	// The engine API and testing_ build and run whole blocks: they are
	// never a client's, and a key restricted by contract is refused them.
	for _, name := range SpecMethods() {
		if _, ok := out[name]; !ok && (strings.HasPrefix(name, "engine_") || strings.HasPrefix(name, "testing_")) {
			out[name] = readsAny()
		}
	}
	return out
}

// SubscriptionContracts returns the statement of each eth_subscribe kind:
// a logs subscription follows the contracts its filter names.
func SubscriptionContracts() map[string]portico.Contracts {
	return map[string]portico.Contracts{
		"newHeads":               readsNone(),
		"newPendingTransactions": readsNone(),
		"logs":                   named(anyParam("kind"), param("filter", logSubscriptionShape())),
	}
}

func ptr[T any](v T) *T { return &v }
