// Package evmverify is the EVM family's verifier: it checks EVM nodes'
// answers against block headers Portico trusts, so the gateway can serve
// an answer the chain itself commits to instead of a node's word (issue
// 27; docs/verify.md). NewVerifier builds the verifier a verifying
// network calls (network/verify.Verifier; the family registers it in
// package families); the rest is its checks.
//
// A Header is trusted by verify.Trust (a quorum of nodes, a checkpoint, or a
// parent link from a trusted header) and made only from fields that hash
// to it. From one, a Chain checks blocks and their transactions
// (VerifyBlock), receipts (VerifyReceipts) and logs (VerifyLogs);
// VerifyProof checks eth_getProof against the state root; an Executor
// answers eth_call and eth_estimateGas by running go-ethereum's EVM over
// state fetched with proofs. Each check takes the node's raw JSON and
// returns it verified, or an error that says what did not match
// (verify.ErrMismatch), what could not be decoded (verify.ErrMalformed)
// or what no commitment covers (verify.ErrUnverifiable).
//
// Where it departs from what a light client such as Helios does: trust
// comes from our own nodes agreeing (or a checkpoint), not from the
// beacon chain's sync committee, which needs a consensus endpoint; and a
// member of an answer that nothing commits to is refused rather than
// passed on, except totalDifficulty (dropped) and size (recomputed).
package evmverify
