package login

import (
	"errors"
	"net/http"
)

// Error codes the pages report: to the user (translated, as err_<code>),
// in the #error=… fragment of the redirect to the app, and in the log
// with the cause. They are listed in docs/auth.md.
const (
	CodeBadRequest          = "bad_request"
	CodeLoginNotFound       = "login_not_found"
	CodeFlowExpired         = "flow_expired"
	CodeForbidden           = "forbidden"
	CodeTooManyLogins       = "too_many_logins"
	CodeProviderUnavailable = "provider_unavailable"
	CodeBadRedirect         = "bad_redirect"
	CodeUnknownClient       = "unknown_client"
	CodeRateLimited         = "rate_limited"
	CodeTokenRefused        = "token_refused"
	CodeProviderError       = "provider_error"
	CodeNetworkUnavailable  = "network_unavailable"
	CodeKeyNetwork          = "key_network"
	CodeSessionWrite        = "session_write"
	CodeTooManyAttempts     = "too_many_attempts"
	CodeMFARequired         = "mfa_required"
	CodeInternal            = "internal"
)

// codeStatus is the HTTP status of each code.
var codeStatus = map[string]int{
	CodeBadRequest:          http.StatusBadRequest,
	CodeLoginNotFound:       http.StatusNotFound,
	CodeFlowExpired:         http.StatusGone,
	CodeForbidden:           http.StatusForbidden,
	CodeTooManyLogins:       http.StatusServiceUnavailable,
	CodeProviderUnavailable: http.StatusBadRequest,
	CodeBadRedirect:         http.StatusBadRequest,
	CodeUnknownClient:       http.StatusBadRequest,
	CodeRateLimited:         http.StatusTooManyRequests,
	CodeTokenRefused:        http.StatusUnauthorized,
	CodeProviderError:       http.StatusBadGateway,
	CodeNetworkUnavailable:  http.StatusBadRequest,
	CodeKeyNetwork:          http.StatusBadGateway,
	CodeSessionWrite:        http.StatusBadGateway,
	CodeTooManyAttempts:     http.StatusTooManyRequests,
	CodeMFARequired:         http.StatusForbidden,
	CodeInternal:            http.StatusInternalServerError,
}

// Error is a login failure: a stable code for the user and the app, and
// the cause, which is only logged.
type Error struct {
	// Code is one of the Code constants: shown, translated, on the pages
	// and sent to the app.
	Code string
	// Err is the cause; it is logged, never shown.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err == nil {
		return "login: " + e.Code
	}
	return "login: " + e.Code + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status for the code.
func (e *Error) Status() int {
	if s, ok := codeStatus[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

func fail(code string, err error) *Error { return &Error{Code: code, Err: err} }

// asError makes any error a *Error (internal unless it is one).
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Err: err}
}
