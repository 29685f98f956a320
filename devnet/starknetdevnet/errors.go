package starknetdevnet

// SpecError is an error of the Starknet JSON-RPC spec, with its code and
// message exactly as the spec's components/errors give them.
type SpecError struct {
	Code    int
	Message string
}

// Error returns the spec's message.
func (e *SpecError) Error() string { return e.Message }

// ErrorCode returns the spec's code.
func (e *SpecError) ErrorCode() int { return e.Code }

// The spec's errors the devnet returns.
var (
	ErrBlockNotFound   = &SpecError{Code: 24, Message: "Block not found"}
	ErrTxnHashNotFound = &SpecError{Code: 29, Message: "Transaction hash not found"}
	ErrPageSizeTooBig  = &SpecError{Code: 31, Message: "Requested page size is too big"}
	ErrNoBlocks        = &SpecError{Code: 32, Message: "There are no blocks"}
	ErrInvalidToken    = &SpecError{Code: 33, Message: "The supplied continuation token is invalid or unknown"}
	ErrTooManyKeys     = &SpecError{Code: 34, Message: "Too many keys provided in a filter"}
)
