package starknet

import "github.com/porticohq/portico"

// This file holds what the family knows of its nodes: what each method
// reads at its block, and the words of pathfinder and juno for data they
// do not have (docs/nodes.md shows the table). Codes are the Starknet
// JSON-RPC spec's (specs/starknet_api_openrpc.json); the hosted
// providers' rate limits (upstream.ProviderAnswers) are matched first.

// readsAt is what each method reads at the block it is about.
var readsAt = map[string]portico.Data{
	"starknet_getNonce":        portico.DataState,
	"starknet_getClassAt":      portico.DataState,
	"starknet_getClassHashAt":  portico.DataState,
	"starknet_getStorageAt":    portico.DataState,
	"starknet_call":            portico.DataState,
	"starknet_estimateFee":     portico.DataState,
	"starknet_getStorageProof": portico.DataState,
	"starknet_getClass":        portico.DataState,

	"starknet_getBlockWithTxHashes":            portico.DataHistory,
	"starknet_getBlockWithTxs":                 portico.DataHistory,
	"starknet_getBlockWithReceipts":            portico.DataHistory,
	"starknet_getStateUpdate":                  portico.DataHistory,
	"starknet_getTransactionByBlockIdAndIndex": portico.DataHistory,
	"starknet_getBlockTransactionCount":        portico.DataHistory,
}

// Answers are pathfinder's and juno's words, by the spec's codes.
var Answers = []portico.AnswerRule{
	{Code: 24, Class: portico.AnswerMissing,
		Source: "spec BLOCK_NOT_FOUND (pathfinder, juno): 24 Block not found"},
	{Code: 42, Class: portico.AnswerMissing,
		Source: "spec STORAGE_PROOF_NOT_SUPPORTED (pathfinder --storage.prune-state-tries): 42 the node doesn't support storage proofs for blocks that are too far in the past"},
	{Words: "state is not available", Class: portico.AnswerMissing,
		Source: "pathfinder: state for the block is not available (pruned tries)"},
	{Words: "too many blocks back", Class: portico.AnswerMissing,
		Source: "juno: too many blocks back"},
	// A transaction the node already has: as good as taking it, for a
	// broadcast send.
	{Code: 59, Class: portico.AnswerKnown,
		Source: "spec DUPLICATE_TX (pathfinder, juno): 59 A transaction with the same hash already exists in the mempool"},
	{Code: -32603, Words: "not synced", Class: portico.AnswerUnhealthy,
		Source: "juno, pathfinder: -32603 Internal error while the node is not synced"},
}

// withNodes completes a table with what the family knows of its nodes.
func withNodes(t portico.Table) portico.Table {
	t = t.WithData(readsAt)
	t.Chain.Answers = Answers
	t.Known = append(t.Known, sendRules()...)
	t.Txs = txRules()
	return t
}
