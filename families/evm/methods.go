package evm

import (
	"slices"
	"strings"
)

// The method list: which methods a network serves by default, which it
// turns on by group, and what each costs. The names come from the spec
// (SpecMethods, generated from testdata/execution-apis); only what the
// spec does not say is written here.
//
// By default a network serves every eth_ and net_ method of the spec but
// the five that act with the node's own accounts, and the web3_ and net_
// methods every client calls that the spec leaves out. Off by default, in
// groups a network enables by name: the spec's debug_ and txpool_ methods
// with the tracing methods hosted providers serve (debug, txpool, trace),
// because they are expensive (a trace re-executes a block) or reveal the
// node's internals (its pool); and the account methods (accounts), because
// a node with unlocked keys (anvil, a dev geth, one behind clef) would sign
// and send with them for every API key. The spec's engine_ and testing_
// methods, and admin_, miner_ or personal_ ones, never pass unless a
// network's config names them (docs/methods.md).

// notInSpec are the methods served by default that the spec leaves out:
// ones every client library calls, and the uncle methods, which nodes
// still serve (a block after the merge has no uncles) and hosted providers
// price.
var notInSpec = []string{"net_listening", "web3_clientVersion", "web3_sha3", "eth_sendRawTransactionSync",
	"eth_getUncleByBlockHashAndIndex", "eth_getUncleByBlockNumberAndIndex",
	"eth_getUncleCountByBlockHash", "eth_getUncleCountByBlockNumber"}

// groups are the methods each optional group adds, beyond the spec's
// methods of the group's namespace: the tracing methods hosted providers
// serve (Infura's debug and trace tables) and geth's txpool_inspect.
var groups = map[string][]string{
	"accounts": nodeAccounts,
	"debug":    {"debug_storageRangeAt", "debug_traceBlock", "debug_traceCall"},
	"txpool":   {"txpool_inspect"},
	"trace": {"trace_block", "trace_call", "trace_callMany", "trace_filter", "trace_get",
		"trace_rawTransaction", "trace_replayBlockTransactions", "trace_replayTransaction", "trace_transaction"},
}

// nodeAccounts are the spec's methods that use the node's own accounts:
// its addresses, and signing and sending with its keys.
var nodeAccounts = []string{"eth_accounts", "eth_coinbase", "eth_sign", "eth_signTransaction", "eth_sendTransaction"}

// filterMethods hold state on the node that made the filter: the gateway
// treats them as writes (never hedged, never cached, sent to another node
// only when the first surely did not get the call), so a filter's calls
// stay with its node while that node is healthy.
var filterMethods = []string{"eth_newFilter", "eth_newBlockFilter", "eth_newPendingTransactionFilter",
	"eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter"}

// defaultAllow returns the methods served by default without a row.
func defaultAllow() []string {
	var out []string
	for _, name := range SpecMethods() {
		if (strings.HasPrefix(name, "eth_") || strings.HasPrefix(name, "net_")) && !slices.Contains(nodeAccounts, name) {
			out = append(out, name)
		}
	}
	out = append(out, notInSpec...)
	slices.Sort(out)
	return out
}

// optional returns the groups off by default: the spec's methods of each
// group's namespace and the group's extras.
func optional() map[string][]string {
	out := map[string][]string{}
	for g, extra := range groups {
		out[g] = slices.Clone(extra)
	}
	for _, name := range SpecMethods() {
		ns, _, _ := strings.Cut(name, "_")
		if _, ok := out[ns]; ok {
			out[ns] = append(out[ns], name)
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// Credit costs. Infura's published table (MetaMask/metamask-docs,
// services/get-started/pricing/credit-cost.md) is the reference; methods it
// does not price are priced by the method they resemble, as the comments
// say. Methods not listed cost DefaultCost (80, Infura's default).
var costs = map[string]int{
	// Infura's figures.
	"eth_blobBaseFee":                         300,
	"eth_chainId":                             5,
	"eth_estimateGas":                         300,
	"eth_getBlockReceipts":                    1000,
	"eth_getBlockTransactionCountByHash":      150,
	"eth_getBlockTransactionCountByNumber":    150,
	"eth_getLogs":                             255,
	"eth_getTransactionByBlockNumberAndIndex": 150,
	"eth_getUncleByBlockHashAndIndex":         150,
	"eth_getUncleByBlockNumberAndIndex":       150,
	"eth_getUncleCountByBlockHash":            150,
	"eth_getUncleCountByBlockNumber":          150,
	"eth_syncing":                             5,
	"net_listening":                           5,
	"net_version":                             5,
	"eth_getFilterChanges":                    140,
	"eth_getFilterLogs":                       255,
	"debug_storageRangeAt":                    1000,
	"debug_traceBlock":                        1000,
	"debug_traceBlockByHash":                  1000,
	"debug_traceBlockByNumber":                1000,
	"debug_traceCall":                         1000,
	"debug_traceTransaction":                  1000,
	"trace_block":                             300,
	"trace_call":                              300,
	"trace_callMany":                          300,
	"trace_filter":                            300,
	"trace_transaction":                       300,

	// A send and the reads of its receipt that the gateway makes while
	// it waits (EIP-7966): eth_sendRawTransaction plus
	// eth_getTransactionReceipt.
	"eth_sendRawTransactionSync": 160,
	// Executes calls, as eth_estimateGas does.
	"eth_simulateV1":      300,
	"eth_fillTransaction": 300,
	// Reads several storage slots, as eth_getProof does.
	"eth_getStorageValues": 150,
	// Static answers, as eth_chainId.
	"eth_config":       5,
	"eth_capabilities": 5,
	// A whole block's data, as eth_getBlockReceipts.
	"eth_getBlockAccessList": 1000,
	// The rest of the debug namespace at Infura's debug_* price.
	"debug_getBadBlocks":          1000,
	"debug_getRawBlock":           1000,
	"debug_getRawBlockAccessList": 1000,
	"debug_getRawHeader":          1000,
	"debug_getRawReceipts":        1000,
	"debug_getRawTransaction":     1000,
	// The rest of the trace namespace at Infura's trace_* price.
	"trace_get":                     300,
	"trace_rawTransaction":          300,
	"trace_replayBlockTransactions": 300,
	"trace_replayTransaction":       300,
	// Dumps of the whole pool at the debug price; one sender's part and
	// the two counters at the default.
	"txpool_content": 1000,
	"txpool_inspect": 1000,
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
