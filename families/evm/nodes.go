package evm

import "github.com/porticohq/portico"

// This file holds what the family knows of its nodes: what each method
// reads at its block (so that a call about old state goes to a node that
// keeps it) and the words of the node software people run for "I lack
// that", "I am behind" or "too large" (docs/nodes.md shows the table).

// readsAt is what each method reads at the block it is about.
var readsAt = map[string]portico.Data{
	"eth_getBalance":          portico.DataState,
	"eth_getCode":             portico.DataState,
	"eth_getTransactionCount": portico.DataState,
	"eth_getStorageAt":        portico.DataState,
	"eth_getProof":            portico.DataState,
	"eth_call":                portico.DataState,
	"eth_estimateGas":         portico.DataState,
	"eth_createAccessList":    portico.DataState,

	"eth_getBlockByNumber":                    portico.DataHistory,
	"eth_getBlockTransactionCountByNumber":    portico.DataHistory,
	"eth_getTransactionByBlockNumberAndIndex": portico.DataHistory,
	"eth_getBlockReceipts":                    portico.DataHistory,
}

// Answers are the EVM node software's words, each from its source. Rate
// limits and capacity are the hosted providers' (upstream.ProviderAnswers),
// matched before these.
var Answers = []portico.AnswerRule{
	// State a node does not keep.
	{Words: "missing trie node", Class: portico.AnswerMissing,
		Source: "geth (hash scheme) trie.MissingNodeError: -32000 missing trie node <hash> (path <path>) <err>"},
	{Words: "historical state", Class: portico.AnswerMissing,
		Source: "geth (path scheme) ≥1.16: -32000 historical state <root> is not available"},
	{Words: "state histories haven't been fully indexed", Class: portico.AnswerMissing,
		Source: "geth (path scheme): state history still being indexed"},
	{Words: "is pruned", Class: portico.AnswerMissing,
		Source: "reth ProviderError::StateAtBlockPruned: state at block #<n> is pruned"},
	{Words: "exceeds maximum proof window", Class: portico.AnswerMissing,
		Source: "reth eth_getProof: distance to target block exceeds maximum proof window"},
	{Words: "not available due to pruning", Class: portico.AnswerMissing,
		Source: "erigon 3 state.PrunedError: old data not available due to pruning"},
	{Words: "data before txnum", Class: portico.AnswerMissing,
		Source: "erigon 3 history reader: seek with txNum=<n> but data before txNum=<m> is not available"},
	{Words: "no state available", Class: portico.AnswerMissing,
		Source: "nethermind -32002: No state available for block <hash>"},
	{Words: "is missing from the db", Class: portico.AnswerMissing,
		Source: "nethermind -32603 Internal error, data: MissingTrieNodeException … is missing from the DB"},
	{Words: "world state unavailable", Class: portico.AnswerMissing,
		Source: "besu RpcErrorType.WORLD_STATE_UNAVAILABLE: -32000 World state unavailable"},
	{Words: "running with state pruning", Class: portico.AnswerMissing,
		Source: "openethereum: This request is not supported because your node is running with state pruning"},
	// History a node does not keep (EIP-4444 and pruned receipts).
	{Code: 4444, Class: portico.AnswerMissing,
		Source: "geth ≥1.16 history expiry: 4444 pruned history unavailable"},
	{Words: "pruned history unavailable", Class: portico.AnswerMissing,
		Source: "geth ≥1.16 history expiry: pruned history unavailable"},
	{Words: "header not found", Class: portico.AnswerMissing,
		Source: "geth: -32000 header not found (a block the node does not have)"},
	{Words: "block not found", Class: portico.AnswerMissing,
		Source: "erigon: -32000 block not found <n>; reth, besu: block not found"},
	// A transaction the node already has: as good as taking it, for a
	// broadcast send.
	{Words: "already known", Class: portico.AnswerKnown,
		Source: "geth txpool.ErrAlreadyKnown, erigon, reth: already known"},
	{Words: "alreadyknown", Class: portico.AnswerKnown,
		Source: "nethermind AcceptTxResult.AlreadyKnown"},
	{Words: "known transaction", Class: portico.AnswerKnown,
		Source: "besu TRANSACTION_ALREADY_KNOWN: Known transaction"},
	{Words: "transaction already imported", Class: portico.AnswerKnown,
		Source: "anvil, reth: transaction already imported"},
	// A node that cannot serve now.
	{Words: "database closed", Class: portico.AnswerUnhealthy,
		Source: "geth: leveldb/pebble database closed (shutting down)"},
	{Words: "no suitable peers available", Class: portico.AnswerUnhealthy,
		Source: "geth: no suitable peers available"},
	{Words: "starting up", Class: portico.AnswerUnhealthy,
		Source: "erigon, nethermind: node is starting up"},
	// Log queries too large for the node (network/refusal.go reads the
	// bound they name).
	{Words: "exceed maximum block range", Class: portico.AnswerTooLarge, Source: "geth --rpc.rangelimit, BSC"},
	{Words: "query exceeds max block range", Class: portico.AnswerTooLarge, Source: "reth"},
	{Words: "query block range exceeds server limit", Class: portico.AnswerTooLarge, Source: "erigon --rpc.blockrange.limit"},
	{Words: "blocks per logs request", Class: portico.AnswerTooLarge, Source: "nethermind Receipt.MaxBlockDepth"},
	{Words: "query returned more than", Class: portico.AnswerTooLarge, Source: "Infura and many hosted nodes"},
	{Words: "query exceeds max results", Class: portico.AnswerTooLarge, Source: "reth --rpc.max-logs-per-response"},
	{Words: "query returns too many logs", Class: portico.AnswerTooLarge, Source: "erigon --rpc.logs.maxresults"},
	{Words: "log response size exceeded", Class: portico.AnswerTooLarge, Source: "Alchemy"},
}

// withNodes completes a table with what the family knows of its nodes.
func withNodes(t portico.Table) portico.Table {
	t.Known = append(t.Known, sendRules()...)
	t = t.WithData(readsAt)
	t.Chain.Answers = Answers
	t.Txs = txRules()
	return t
}
