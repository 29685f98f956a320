package verify

import (
	"errors"
	"fmt"
)

// Sentinels a caller tells apart with errors.Is. Each typed error below
// unwraps to one of them, so the gateway can decide per kind: a mismatch
// blames the node (try another, log it), an unverifiable answer blames
// no one (serve it unverified or refuse, as configured).
var (
	// ErrMismatch means the node's answer contradicts what the trusted
	// header commits to: the node is wrong or lying.
	ErrMismatch = errors.New("verify: answer does not match the trusted header")
	// ErrMalformed means the node's answer could not be decoded at all.
	ErrMalformed = errors.New("verify: answer malformed")
	// ErrUnverifiable means the answer may be right but this package
	// cannot prove it (a field no commitment covers, a pre-merge uncle,
	// a block hash the executor has no trusted header for).
	ErrUnverifiable = errors.New("verify: answer cannot be verified")
	// ErrFetch means a node did not give what the executor asked for (a
	// transport failure or a JSON-RPC error): the node's fault, not a lie.
	ErrFetch = errors.New("verify: fetch from node failed")
)

// MismatchError says which part of an answer failed its check. What
// names the part as a path into the answer ("block.stateRoot",
// "receipts[3].logs", "proof.accountProof[2]"), so the log line reads
// node, method, what.
type MismatchError struct {
	What string
	Want string // what the commitment says, when there is one value to show
	Got  string // what the node said
}

func (e *MismatchError) Error() string {
	if e.Want == "" && e.Got == "" {
		return "verify: " + e.What + " does not match"
	}
	return fmt.Sprintf("verify: %s: node says %s, commitment says %s", e.What, e.Got, e.Want)
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// MalformedError is an answer that did not decode; What names the part.
type MalformedError struct {
	What string
	Err  error
}

func (e *MalformedError) Error() string { return "verify: " + e.What + ": " + e.Err.Error() }

// Unwrap returns both ErrMalformed and the decoder's error.
func (e *MalformedError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

// UnverifiableError names what cannot be proven and why.
type UnverifiableError struct {
	What   string
	Reason string
}

func (e *UnverifiableError) Error() string {
	return "verify: " + e.What + " cannot be verified: " + e.Reason
}

// Unwrap returns ErrUnverifiable.
func (e *UnverifiableError) Unwrap() error { return ErrUnverifiable }

// FetchError is a failed request of the executor to its ProofSource.
type FetchError struct {
	What string // "eth_getProof 0x…", "eth_getCode 0x…"
	Err  error
}

func (e *FetchError) Error() string { return "verify: " + e.What + ": " + e.Err.Error() }

// Unwrap returns ErrFetch and the source's error.
func (e *FetchError) Unwrap() []error { return []error{ErrFetch, e.Err} }
