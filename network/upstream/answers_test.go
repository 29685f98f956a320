package upstream_test

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/families/solana"
	"github.com/porticohq/portico/families/starknet"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
)

// TestClassify: the words of each node software, as its source writes
// them, are classified as docs/nodes.md says; an execution error and
// words nobody knows stay the client's.
func TestClassify(t *testing.T) {
	families := map[string][]portico.AnswerRule{"evm": evm.Answers, "solana": solana.Answers, "starknet": starknet.Answers}
	for _, c := range []struct {
		family  string
		code    int
		message string
		data    string
		want    portico.Answer
	}{
		// geth, hash scheme: trie/errors.go MissingNodeError.
		{"evm", -32000, "missing trie node 1a3bddc494098bac19ef26e6506812caa12ca5cf036a13ef0eabde38beab5d21 (path ) <nil>", "", portico.AnswerMissing},
		// geth ≥1.16, path scheme: historical state not available.
		{"evm", -32000, "historical state 0x8a9c1f2d3e4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5 is not available", "", portico.AnswerMissing},
		// reth: ProviderError::StateAtBlockPruned.
		{"evm", -32000, "state at block #19000000 is pruned", "", portico.AnswerMissing},
		// erigon 3: the history reader's words (erigon issue 13198).
		{"evm", -32000, "state transitaion failed: seek with txNum=1962853355 but data before txNum=2662500000 is not available: blockNum=16999999", "", portico.AnswerMissing},
		// nethermind ≥1.36: -32002 for a block without state.
		{"evm", -32002, "No state available for block 0x4a8411", "", portico.AnswerMissing},
		// nethermind before: Internal error with the exception in data.
		{"evm", -32603, "Internal error", `"Nethermind.Trie.MissingTrieNodeException: Node A: P:2 H:0x992e is missing from the DB"`, portico.AnswerMissing},
		// besu: RpcErrorType.WORLD_STATE_UNAVAILABLE.
		{"evm", -32000, "World state unavailable", "", portico.AnswerMissing},
		// geth ≥1.16 history expiry (EIP-4444).
		{"evm", 4444, "pruned history unavailable", "", portico.AnswerMissing},
		// geth: a block the node does not have.
		{"evm", -32000, "header not found", "", portico.AnswerMissing},
		// geth: the client's own errors.
		{"evm", 3, "execution reverted: not owner", `"0x08c379a0"`, portico.AnswerClient},
		{"evm", -32000, "insufficient funds for gas * price + value: have 0 want 21000", "", portico.AnswerClient},
		{"evm", -32602, "invalid argument 0: hex string without 0x prefix", "", portico.AnswerClient},
		{"evm", -32000, "nonce too low: next nonce 5, tx nonce 3", "", portico.AnswerClient},
		// geth --rpc.rangelimit and reth: log ranges too large.
		{"evm", -32000, "exceed maximum block range 5000", "", portico.AnswerTooLarge},
		{"evm", -32602, "query exceeds max block range 100000", "", portico.AnswerTooLarge},
		// A node without the method (geth's words for an unknown one).
		{"evm", -32601, "the method debug_traceTransaction does not exist/is not available", "", portico.AnswerMissing},
		// Hosted providers' rate limits and capacity.
		{"evm", 429, "Your app has exceeded its compute units per second capacity. If you have retries enabled, you can safely ignore this message.", "", portico.AnswerLimited},
		{"evm", -32005, "daily request count exceeded, request rate limited", "", portico.AnswerLimited},
		{"evm", -32005, "project ID request rate exceeded", "", portico.AnswerLimited},
		{"solana", -32007, "15/second request limit reached - reduce calls per second or upgrade your account at quicknode.com", "", portico.AnswerLimited},
		{"evm", -32090, "Too many requests, reason: call rate limit exhausted, retry in 10s", "", portico.AnswerLimited},
		// agave: rpc_custom_error.rs.
		{"solana", -32001, "Block 1000 cleaned up, does not exist on node. First available block: 2000", "", portico.AnswerMissing},
		{"solana", -32004, "Block not available for slot 1234", "", portico.AnswerMissing},
		{"solana", -32007, "Slot 1234 was skipped, or missing due to ledger jump to recent snapshot", "", portico.AnswerMissing},
		{"solana", -32009, "Slot 1234 was skipped, or missing in long-term storage", "", portico.AnswerMissing},
		{"solana", -32011, "Transaction history is not available from this node", "", portico.AnswerMissing},
		{"solana", -32005, "Node is behind by 42 slots", `{"numSlotsBehind":42}`, portico.AnswerUnhealthy},
		{"solana", -32016, "Minimum context slot has not been reached", `{"contextSlot":100}`, portico.AnswerUnhealthy},
		{"solana", -32602, "Invalid param: Invalid", "", portico.AnswerClient},
		{"solana", -32002, "Transaction simulation failed: Blockhash not found", "", portico.AnswerClient},
		// pathfinder and juno: the spec's codes.
		{"starknet", 24, "Block not found", "", portico.AnswerMissing},
		{"starknet", 42, "the node doesn't support storage proofs for blocks that are too far in the past", "", portico.AnswerMissing},
		{"starknet", 20, "Contract not found", "", portico.AnswerClient},
		{"starknet", 40, "Contract error", `{"revert_error":"…"}`, portico.AnswerClient},
	} {
		e := &jsonrpc.Error{Code: c.code, Message: c.message}
		if c.data != "" {
			e.Data = jsontext.Value(c.data)
		}
		if got := upstream.NewClassifier(families[c.family]).Classify(e); got != c.want {
			t.Errorf("%s %d %q: %v, want %v", c.family, c.code, c.message, got, c.want)
		}
	}
}
