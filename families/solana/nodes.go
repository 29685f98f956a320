package solana

import "github.com/porticohq/portico"

// This file holds what the family knows of its nodes: what each method
// reads at its slot, and the words of agave (and the validators built on
// it) for a slot it does not have or a node that is behind
// (docs/nodes.md shows the table). Codes are agave's
// rpc_custom_error.rs; the hosted providers' rate limits
// (upstream.ProviderAnswers) are matched first.

// readsAt is what each method reads at the slot it is about.
var readsAt = map[string]portico.Data{
	"getBlock":     portico.DataHistory,
	"getBlockTime": portico.DataHistory,
}

// Answers are agave's words, by code.
var Answers = []portico.AnswerRule{
	{Code: -32001, Class: portico.AnswerMissing,
		Source: "agave BlockCleanedUp: Block <slot> cleaned up, does not exist on node. First available block: <slot>"},
	{Code: -32004, Class: portico.AnswerMissing,
		Source: "agave BlockNotAvailable: Block not available for slot <slot>"},
	{Code: -32007, Class: portico.AnswerMissing,
		Source: "agave SlotSkipped: Slot <slot> was skipped, or missing due to ledger jump to recent snapshot"},
	{Code: -32009, Class: portico.AnswerMissing,
		Source: "agave LongTermStorageSlotSkipped: Slot <slot> was skipped, or missing in long-term storage"},
	{Code: -32011, Class: portico.AnswerMissing,
		Source: "agave TransactionHistoryNotAvailable: Transaction history is not available from this node"},
	{Code: -32014, Class: portico.AnswerMissing,
		Source: "agave BlockStatusNotAvailableYet: Block status not yet available for slot <slot>"},
	// A transaction the node already has: as good as taking it, for a
	// broadcast send.
	{Words: "already been processed", Class: portico.AnswerKnown,
		Source: "agave AlreadyProcessed: Transaction simulation failed: This transaction has already been processed"},
	{Code: -32005, Class: portico.AnswerUnhealthy,
		Source: "agave NodeUnhealthy: Node is behind by <n> slots / Node is unhealthy"},
	{Code: -32016, Class: portico.AnswerUnhealthy,
		Source: "agave MinContextSlotNotReached: Minimum context slot has not been reached"},
	{Code: -32019, Class: portico.AnswerUnhealthy,
		Source: "agave LongTermStorageUnreachable: Failed to query long-term storage; please try again"},
}

// withNodes completes a table with what the family knows of its nodes.
func withNodes(t portico.Table) portico.Table {
	t = t.WithData(readsAt)
	t.Chain.Answers = Answers
	t.Txs = txRules()
	return t
}
