package auth

import "errors"

// Errors of the SDK's operations.
var (
	// ErrNoUserFound: there is no logged-in user (Swift noUserFound).
	ErrNoUserFound = errors.New("auth: no user found")
	// ErrLoginTimeout: the login did not finish within the login timeout.
	ErrLoginTimeout = errors.New("auth: login timed out")
	// ErrLoginExpired: the pending login's loginId has expired.
	ErrLoginExpired = errors.New("auth: pending login expired")
	// ErrLoginCompleted: the pending login was already completed; a second
	// callback is refused.
	ErrLoginCompleted = errors.New("auth: pending login already completed")
	// ErrSessionNotFound: the session server holds no (unexpired) record
	// for the session.
	ErrSessionNotFound = errors.New("auth: session not found or expired")
)

// LoginError is an error the login pages reported in the callback.
type LoginError struct {
	// Message is the pages' error text.
	Message string
}

// Error returns the pages' message.
func (e *LoginError) Error() string { return "auth: login failed: " + e.Message }

// SessionError reports a session record that could not be used: it did not
// decrypt or lacks a required field. The saved session is cleared.
type SessionError struct {
	// Field names the missing or bad field ("privKey", "userInfo.typeOfLogin",
	// or "data" when the record did not decrypt).
	Field string
	// Err is the cause, if any.
	Err error
}

// Error names the field.
func (e *SessionError) Error() string {
	if e.Err != nil {
		return "auth: session record: " + e.Field + ": " + e.Err.Error()
	}
	return "auth: session record: " + e.Field + " missing"
}

// Unwrap returns the cause.
func (e *SessionError) Unwrap() error { return e.Err }
