package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// The gateway's own JSON-RPC error codes. docs/errors.md is the reference
// and a test keeps it in step with this table.
const (
	CodeLimitExceeded     = -32005
	CodeUnauthorized      = -32040
	CodeForbidden         = -32041
	CodeBodyTooLarge      = -32042
	CodeBatchTooLarge     = -32043
	CodeTooManyConns      = -32044
	CodeUpstreamDown      = -32045
	CodeUpstreamTimeout   = -32046
	CodeClientTimeout     = -32047
	CodeNetworkUnknown    = -32048
	CodeWrongContentType  = -32049
	CodeMethodNotAllowed  = -32050
	CodeWSMessageTooLarge = -32051
	CodeMeteringDown      = -32052
	CodeHeadersTooLarge   = -32053
)

// wireError maps an error to what the client sees: a JSON-RPC error and an
// HTTP status. It is the one place where errors get codes. Anything it does
// not know is an internal error; known reports whether the cause was one of
// ours, so the caller logs the rest.
func wireError(err error) (e *jsonrpc.Error, status int, known bool) {
	var (
		rpcErr    *jsonrpc.Error
		limitErr  *portico.LimitError
		upErr     *portico.UpstreamError
		quotaErr  *portico.QuotaError
		forbidErr *portico.ForbiddenError
		coded     interface{ ErrorCode() int }
	)
	switch {
	case errors.As(err, &quotaErr):
		data := fmt.Appendf(nil, `{"limit":%q,"retryAfterMs":%d`, quotaErr.Limit, quotaErr.RetryAfter.Milliseconds())
		if quotaErr.Limit == portico.QuotaDaily {
			data = fmt.Appendf(data, `,"resetsAt":%q`, quotaErr.ResetAt.UTC().Format(time.RFC3339))
		}
		return &jsonrpc.Error{Code: CodeLimitExceeded, Message: quotaErr.Error(), Data: append(data, '}')}, http.StatusTooManyRequests, true
	case errors.As(err, &forbidErr):
		data, _ := jsontext.AppendQuote([]byte(`{"reason":`), forbidErr.What)
		return &jsonrpc.Error{Code: CodeForbidden, Message: "forbidden: " + forbidErr.Error(), Data: append(data, '}')}, http.StatusForbidden, true
	case errors.Is(err, portico.ErrMeteringUnavailable):
		return &jsonrpc.Error{Code: CodeMeteringDown, Message: "metering unavailable: calls are refused until it is back"}, http.StatusServiceUnavailable, true
	case errors.As(err, &rpcErr):
		// Envelope errors and upstream answers pass through as they are.
		status = http.StatusOK
		if rpcErr.Code == jsonrpc.CodeParseError || rpcErr.Code == jsonrpc.CodeInvalidRequest {
			status = http.StatusBadRequest
		}
		return rpcErr, status, true
	case errors.Is(err, portico.ErrKeyMissing):
		return unauthorized("API key missing: put it in the path, /v3/<API_KEY>", "missing"), http.StatusUnauthorized, true
	case errors.Is(err, portico.ErrKeyMalformed):
		return unauthorized("API key malformed: want 32 to 64 characters of [0-9A-Za-z_-]", "malformed"), http.StatusUnauthorized, true
	case errors.Is(err, portico.ErrKeyUnknown):
		return unauthorized("API key unknown or revoked", "unknown"), http.StatusUnauthorized, true
	case errors.Is(err, portico.ErrNetworkUnknown):
		return &jsonrpc.Error{Code: CodeNetworkUnknown, Message: "unknown network host"}, http.StatusNotFound, true
	case errors.Is(err, portico.ErrClientTimeout):
		return &jsonrpc.Error{Code: CodeClientTimeout, Message: "request not received in time"}, http.StatusRequestTimeout, true
	case errors.As(err, &limitErr):
		switch limitErr.Limit {
		case portico.LimitBody:
			return &jsonrpc.Error{Code: CodeBodyTooLarge, Message: limitErr.Error()}, http.StatusRequestEntityTooLarge, true
		case portico.LimitBatch:
			return &jsonrpc.Error{Code: CodeBatchTooLarge, Message: limitErr.Error()}, http.StatusRequestEntityTooLarge, true
		case portico.LimitWSMessage:
			return &jsonrpc.Error{Code: CodeWSMessageTooLarge, Message: limitErr.Error()}, http.StatusRequestEntityTooLarge, true
		case portico.LimitConnections:
			return &jsonrpc.Error{Code: CodeTooManyConns, Message: limitErr.Error()}, http.StatusServiceUnavailable, true
		case portico.LimitHeaders:
			return &jsonrpc.Error{Code: CodeHeadersTooLarge, Message: limitErr.Error()}, http.StatusRequestHeaderFieldsTooLarge, true
		}
	case errors.As(err, &upErr):
		switch {
		case errors.Is(upErr.Err, portico.ErrNoUpstream):
			return &jsonrpc.Error{Code: CodeUpstreamDown, Message: "no upstream configured for network " + upErr.Network}, http.StatusBadGateway, true
		case errors.Is(upErr.Err, portico.ErrUpstreamTimeout):
			return &jsonrpc.Error{Code: CodeUpstreamTimeout, Message: "upstream timed out for network " + upErr.Network}, http.StatusGatewayTimeout, true
		default:
			return &jsonrpc.Error{Code: CodeUpstreamDown, Message: "upstream unavailable for network " + upErr.Network}, http.StatusBadGateway, true
		}
	case errors.As(err, &coded):
		// Params errors, unknown methods and family errors with spec codes
		// (the rollup's 31 and 34) carry their own code and message.
		return &jsonrpc.Error{Code: coded.ErrorCode(), Message: err.Error()}, http.StatusOK, true
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}, http.StatusInternalServerError, false
}

func unauthorized(msg, reason string) *jsonrpc.Error {
	data, _ := jsontext.AppendQuote([]byte(`{"reason":`), reason)
	return &jsonrpc.Error{Code: CodeUnauthorized, Message: "unauthorized: " + msg, Data: append(data, '}')}
}

// Status codes for errors that are not in wireError's switch because they
// never travel as Go errors.
var (
	errWrongContentType = &jsonrpc.Error{Code: CodeWrongContentType, Message: "Content-Type must be application/json"}
	errMethodNotAllowed = &jsonrpc.Error{Code: CodeMethodNotAllowed, Message: "HTTP method must be POST"}
)
