package solanadevnet

import (
	"errors"
	"fmt"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// Error codes a real node (agave) uses, from rpc-client-api's
// custom_error.rs.
const (
	CodeBlockCleanedUp             = -32001
	CodeSendTransactionPreflight   = -32002
	CodeSignatureVerification      = -32003
	CodeBlockNotAvailable          = -32004
	CodeSlotSkipped                = -32007
	CodeUnsupportedTransactionVers = -32015
)

func errBlockCleanedUp(slot, first uint64) error {
	return &jsonrpc.Error{Code: CodeBlockCleanedUp, Message: fmt.Sprintf("Block %d cleaned up, does not exist on node. First available block: %d", slot, first)}
}

func errBlockNotAvailable(slot uint64) error {
	return &jsonrpc.Error{Code: CodeBlockNotAvailable, Message: fmt.Sprintf("Block not available for slot %d", slot)}
}

func errSlotSkipped(slot uint64) error {
	return &jsonrpc.Error{Code: CodeSlotSkipped, Message: fmt.Sprintf("Slot %d was skipped, or missing due to ledger jump to recent snapshot", slot)}
}

func errUnsupportedVersion(v int) error {
	return &jsonrpc.Error{Code: CodeUnsupportedTransactionVers, Message: fmt.Sprintf(`Transaction version (%d) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": %d`, v, v)}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// toRPCError maps an error to the JSON-RPC error a client sees. Params
// errors keep their text (it names the field); anything unexpected becomes
// an internal error, and the cause is left to the caller to log.
func toRPCError(err error) (e *jsonrpc.Error, internal bool) {
	if errors.As(err, &e) {
		return e, false
	}
	var pe *portico.ParamsError
	if errors.As(err, &pe) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: pe.Error()}, false
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error"}, true
}
