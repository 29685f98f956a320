// Package verify is what a verifying network and each family's verifier
// share (issue 27; docs/verify.md): the Verifier interface a family
// implements (families/evm/evmverify, families/starknet/starkverify) and
// the network calls, what the network gives it (Env), the Base every
// family's verifier builds on (the hashes trusted and why: a quorum of
// the nodes, a checkpoint, a parent link; one quorum ask per height at a
// time; node calls whose answers a check judges, a wrong one the node's
// fault), what a verified call holds against its memory budget
// (Holding), and the errors of checks, which the network tells apart to
// refuse, pass on or fail a call.
package verify
