package idtoken

import (
	"errors"
	"fmt"
)

// Reasons a token is refused; a *TokenError wraps one of them.
var (
	// ErrMalformed: not a compact JWS with a JSON header and payload.
	ErrMalformed = errors.New("malformed token")
	// ErrAlgorithm: the alg is not an allowed asymmetric algorithm.
	ErrAlgorithm = errors.New("algorithm not allowed")
	// ErrUnknownKey: no key of the verifier has the token's key id and fits its alg.
	ErrUnknownKey = errors.New("no matching key")
	// ErrSignature: the signature does not verify.
	ErrSignature = errors.New("bad signature")
	// ErrExpired: exp is past, beyond the leeway, or missing.
	ErrExpired = errors.New("token expired")
	// ErrNotYetValid: nbf is in the future, beyond the leeway.
	ErrNotYetValid = errors.New("token not yet valid")
	// ErrIssuedInFuture: iat is in the future, beyond the leeway.
	ErrIssuedInFuture = errors.New("token issued in the future")
	// ErrIssuer: iss is not the verifier's issuer.
	ErrIssuer = errors.New("wrong issuer")
	// ErrAudience: aud does not name the verifier's audience.
	ErrAudience = errors.New("wrong audience")
	// ErrMissingClaim: the verifier id claim is missing, empty or not a string.
	ErrMissingClaim = errors.New("missing claim")
	// ErrKeysUnavailable: the verifier's keys could not be fetched.
	ErrKeysUnavailable = errors.New("keys unavailable")
	// ErrUnknownVerifier: no verifier of that name is configured.
	ErrUnknownVerifier = errors.New("unknown verifier")
)

// TokenError is why a token was refused: the verifier, the token part or
// claim at fault (for example "alg", "kid", "exp", "aud" or the verifier id
// field) and the reason, one of the Err values above.
type TokenError struct {
	Verifier string
	Field    string
	Err      error
	// Detail is extra context safe to show (never token content).
	Detail string
}

// Error names the verifier and the field.
func (e *TokenError) Error() string {
	s := fmt.Sprintf("idtoken: verifier %q: %s: %v", e.Verifier, e.Field, e.Err)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the reason.
func (e *TokenError) Unwrap() error { return e.Err }

// ConfigError reports a bad verifier configuration field.
type ConfigError struct {
	Verifier string
	Field    string
	Reason   string
}

// Error names the verifier and the field.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("idtoken: verifier %q: %s: %s", e.Verifier, e.Field, e.Reason)
}
