package evmverify

import (
	"github.com/ethereum/go-ethereum/common"

	"github.com/porticohq/portico/network/verify"
)

// mismatch is a verify.MismatchError: what failed its check, what the
// trusted header commits to and what the node sent.
func mismatch(what, want, got string) error {
	return &verify.MismatchError{What: what, Want: want, Got: got}
}

// malformed is a verify.MalformedError: what could not be decoded.
func malformed(what string, err error) error { return &verify.MalformedError{What: what, Err: err} }

// ParentHash is the parent hash the header commits to (verify.Linked).
func (h *Header) ParentHash() common.Hash { return h.eth.ParentHash }
