package starknetdevnet

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

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

// The spec's errors of the write API and of call, getNonce and
// estimateFee (spec 0.8: starknet_api_openrpc.json and the write API's
// components/errors). Those with data are built by specError.
var (
	ErrContractNotFound   = &SpecError{Code: 20, Message: "Contract not found"}
	ErrEntrypointNotFound = &SpecError{Code: 21, Message: "Requested entrypoint does not exist in the contract"}
	ErrClassHashNotFound  = &SpecError{Code: 28, Message: "Class hash not found"}
	ErrInvalidNonce       = &SpecError{Code: 52, Message: "Invalid transaction nonce"}
	ErrInsufficientBounds = &SpecError{Code: 53, Message: "The transaction's resources don't cover validation or the minimal transaction fee"}
	ErrInsufficientFunds  = &SpecError{Code: 54, Message: "Account balance is smaller than the transaction's max_fee"}
	ErrNonAccount         = &SpecError{Code: 58, Message: "Sender address in not an account contract"}
	ErrDuplicateTx        = &SpecError{Code: 59, Message: "A transaction with the same hash already exists in the mempool"}
	ErrUnsupportedVersion = &SpecError{Code: 61, Message: "the transaction version is not supported"}
)

// Codes of the spec's errors that carry data.
const (
	codeExecutionError    = 41 // Transaction execution error; data {transaction_index, execution_error}
	codeValidationFailure = 55 // Account validation failed; data a string
	codeUnexpected        = 63 // An unexpected error occurred; data a string
)

// specError builds a spec error whose data is a string.
func specError(code int, data string) error {
	msg := map[int]string{codeValidationFailure: "Account validation failed", codeUnexpected: "An unexpected error occurred"}[code]
	return &jsonrpc.Error{Code: code, Message: msg, Data: jsonString(data)}
}

// executionError is TRANSACTION_EXECUTION_ERROR for the i-th transaction
// of an estimate.
func executionError(i int, reason string) error {
	data := append([]byte(`{"transaction_index":`), strconv.Itoa(i)...)
	data = append(data, `,"execution_error":`...)
	data = append(data, jsonString(reason)...)
	return &jsonrpc.Error{Code: codeExecutionError, Message: "Transaction execution error", Data: append(data, '}')}
}

// jsonString renders s as a JSON string.
func jsonString(s string) jsontext.Value {
	b, _ := jsontext.AppendQuote(nil, s)
	return b
}
