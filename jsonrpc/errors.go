package jsonrpc

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// ErrorFor maps an error to what a client sees: a JSON-RPC error and the
// HTTP status of a single call that fails with it. It is the one place
// where errors get codes, for the gateway and for every server built on
// Server. Anything it does not know is an internal error whose cause must
// not reach the client; known reports whether the error was one of ours,
// so that the caller logs the rest.
func ErrorFor(err error) (e *Error, status int, known bool) {
	var (
		answered   *portico.AnsweredError
		rpcErr     *Error
		limitErr   *portico.LimitError
		upErr      *portico.UpstreamError
		quotaErr   *portico.QuotaError
		forbidErr  *portico.ForbiddenError
		logsErr    *portico.LogsTooLargeError
		jwtErr     *portico.JWTError
		coded      interface{ ErrorCode() int }
		missingErr *portico.MissingError
		txTimeout  *portico.TxTimeoutError
	)
	switch {
	case errors.As(err, &answered):
		e, status, known := ErrorFor(answered.Err)
		if known && len(e.Data) == 0 && len(e.Raw) == 0 {
			own := *e
			own.Data = sourcePortico
			e = &own
		}
		return e, status, known
	case errors.As(err, &quotaErr):
		data := fmt.Appendf(nil, `{"limit":%q,"retryAfterMs":%d`, quotaErr.Limit, quotaErr.RetryAfter.Milliseconds())
		if quotaErr.Limit == portico.QuotaDaily {
			data = fmt.Appendf(data, `,"resetsAt":%q`, quotaErr.ResetAt.UTC().Format(time.RFC3339))
		}
		return &Error{Code: portico.CodeLimitExceeded, Message: quotaErr.Error(), Data: append(data, '}')}, http.StatusTooManyRequests, true
	case errors.As(err, &forbidErr):
		return &Error{Code: portico.CodeKeyRejected, Message: "rejected due to API key settings: " + forbidErr.Error(), Data: reason(forbidErr.What)}, http.StatusForbidden, true
	case errors.Is(err, portico.ErrFilterNotFound):
		// go-ethereum's and anvil's code and words.
		return &Error{Code: -32000, Message: "filter not found"}, http.StatusOK, true
	case errors.Is(err, portico.ErrMeteringUnavailable):
		return &Error{Code: portico.CodeMeteringDown, Message: "metering unavailable: calls are refused until it is back"}, http.StatusServiceUnavailable, true
	case errors.As(err, &txTimeout):
		// EIP-7966: the transaction's hash is the data.
		data, _ := jsontext.AppendQuote(nil, txTimeout.Hash)
		return &Error{Code: txTimeout.ErrorCode(), Message: txTimeout.Error(), Data: data}, http.StatusOK, true
	case errors.As(err, &missingErr):
		// Before a node's answer, which it wraps: Portico's words.
		return &Error{Code: missingErr.ErrorCode(), Message: missingErr.Error()}, http.StatusOK, true
	case errors.As(err, &rpcErr):
		// Envelope errors and node answers pass through as they are.
		status = http.StatusOK
		if rpcErr.Code == CodeParseError || rpcErr.Code == CodeInvalidRequest {
			status = http.StatusBadRequest
		}
		return rpcErr, status, true
	case errors.Is(err, portico.ErrKeyMissing):
		return unauthorized("API key missing: put it in the path, /v3/<API_KEY>", "missing"), http.StatusUnauthorized, true
	case errors.Is(err, portico.ErrKeyMalformed):
		return unauthorized("API key malformed: want 32 to 64 characters of [0-9A-Za-z_-]", "malformed"), http.StatusUnauthorized, true
	case errors.Is(err, portico.ErrKeyUnknown):
		return unauthorized("API key unknown or revoked", "unknown"), http.StatusUnauthorized, true
	case errors.Is(err, portico.ErrSecretMissing):
		return unauthorized("API key secret missing: send it as the password of HTTP Basic auth or in the "+portico.HeaderKeySecret+" header", "secret_missing"), http.StatusUnauthorized, true
	case errors.Is(err, portico.ErrSecretWrong):
		return unauthorized("API key secret wrong", "secret_wrong"), http.StatusUnauthorized, true
	case errors.As(err, &jwtErr):
		return unauthorized(jwtErr.Error(), "jwt"), http.StatusUnauthorized, true
	case errors.Is(err, portico.ErrNetworkUnknown):
		return &Error{Code: portico.CodeNetworkUnknown, Message: "unknown network host"}, http.StatusNotFound, true
	case errors.Is(err, portico.ErrClientTimeout):
		return &Error{Code: portico.CodeClientTimeout, Message: "request not received in time"}, http.StatusRequestTimeout, true
	case errors.Is(err, portico.ErrWrongContentType):
		return &Error{Code: portico.CodeWrongContentType, Message: "Content-Type must be application/json"}, http.StatusUnsupportedMediaType, true
	case errors.Is(err, portico.ErrHTTPMethod):
		return &Error{Code: portico.CodeMethodNotAllowed, Message: "HTTP method must be POST"}, http.StatusMethodNotAllowed, true
	case errors.As(err, &limitErr):
		return limitError(limitErr)
	case errors.Is(err, portico.ErrUnverified):
		return &Error{Code: portico.CodeUnverified, Message: err.Error()}, http.StatusBadGateway, true
	case errors.As(err, &upErr):
		switch {
		case errors.Is(upErr.Err, portico.ErrNoUpstream):
			return &Error{Code: portico.CodeUpstreamDown, Message: "no upstream configured for network " + upErr.Network}, http.StatusBadGateway, true
		case errors.Is(upErr.Err, portico.ErrUpstreamTimeout):
			return &Error{Code: portico.CodeUpstreamTimeout, Message: "upstream timed out for network " + upErr.Network}, http.StatusGatewayTimeout, true
		default:
			return &Error{Code: portico.CodeUpstreamDown, Message: "upstream unavailable for network " + upErr.Network}, http.StatusBadGateway, true
		}
	case errors.As(err, &logsErr):
		return &Error{Code: portico.CodeLogsTooLarge, Message: logsErr.Error(), Data: logsData(logsErr)}, http.StatusOK, true
	case errors.As(err, &coded):
		// Params errors, unknown methods and family errors with spec codes
		// (the rollup's 31 and 34) carry their own code and message.
		return &Error{Code: coded.ErrorCode(), Message: err.Error()}, http.StatusOK, true
	}
	return &Error{Code: CodeInternalError, Message: "internal error"}, http.StatusInternalServerError, false
}

// limitError maps the size and count limits.
func limitError(l *portico.LimitError) (*Error, int, bool) {
	switch l.Limit {
	case portico.LimitBody:
		return &Error{Code: portico.CodeBodyTooLarge, Message: l.Error()}, http.StatusRequestEntityTooLarge, true
	case portico.LimitBatch:
		return &Error{Code: portico.CodeBatchTooLarge, Message: l.Error()}, http.StatusRequestEntityTooLarge, true
	case portico.LimitWSMessage:
		return &Error{Code: portico.CodeWSMessageTooLarge, Message: l.Error()}, http.StatusRequestEntityTooLarge, true
	case portico.LimitConnections, portico.LimitConnectionsPerIP, portico.LimitWSPerKey:
		return &Error{Code: portico.CodeTooManyConns, Message: l.Error()}, http.StatusServiceUnavailable, true
	case portico.LimitSubscriptions, portico.LimitKeySubscriptions, portico.LimitKeyFilters:
		return &Error{Code: portico.CodeTooManySubs, Message: l.Error()}, http.StatusOK, true
	case portico.LimitBatchResponse:
		return &Error{Code: portico.CodeBatchResponse, Message: l.Error()}, http.StatusRequestEntityTooLarge, true
	case portico.LimitHeaders:
		return &Error{Code: portico.CodeHeadersTooLarge, Message: l.Error()}, http.StatusRequestHeaderFieldsTooLarge, true
	case portico.LimitResult:
		return &Error{Code: portico.CodeResultTooLarge, Message: l.Error()}, http.StatusBadGateway, true
	case portico.LimitMemory:
		return &Error{Code: portico.CodeMemoryBusy, Message: l.Error()}, http.StatusServiceUnavailable, true
	}
	return &Error{Code: CodeInvalidRequest, Message: l.Error()}, http.StatusBadRequest, true
}

// logsData is the data of a refused log query: the bound, its value and,
// where there is one, the range that would fit, as hex block numbers.
func logsData(e *portico.LogsTooLargeError) jsontext.Value {
	data, _ := jsontext.AppendQuote([]byte(`{"bound":`), e.Bound)
	data = fmt.Appendf(data, `,"max":%d`, e.Max)
	if e.Suggest {
		data = fmt.Appendf(data, `,"from":"0x%x","to":"0x%x"`, e.From, e.To)
	}
	return append(data, '}')
}

// sourcePortico is the data of an error Portico answers in place of a
// node (portico.AnsweredError).
var sourcePortico = jsontext.Value(`{"source":"portico"}`)

func unauthorized(msg, why string) *Error {
	return &Error{Code: portico.CodeUnauthorized, Message: "unauthorized: " + msg, Data: reason(why)}
}

// reason is the data object {"reason": why}.
func reason(why string) jsontext.Value {
	data, _ := jsontext.AppendQuote([]byte(`{"reason":`), why)
	return append(data, '}')
}
