package idtoken

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"
)

// Identity is who a verified token says the user is.
type Identity struct {
	// Verifier is the verifier the token was checked for.
	Verifier string `json:"verifier"`
	// VerifierID is the verifier id claim, lower-cased if the verifier is
	// not case sensitive.
	VerifierID string `json:"verifierId"`
	// Claims are all the token's claims, numbers as json.Number.
	Claims map[string]any `json:"claims"`
	// Email, Name and Picture are the standard claims, if present.
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
	Picture string `json:"picture,omitempty"`
}

// header is the part of a JOSE header we check before anything else.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// peekHeader checks the token's shape and reads its header, so that a
// disallowed alg is refused before any key is looked at.
func peekHeader(cfg *Config, token string) (header, error) {
	var h header
	bad := func(field string, err error, detail string) (header, error) {
		return h, &TokenError{Verifier: cfg.Verifier, Field: field, Err: err, Detail: detail}
	}
	if len(token) > MaxTokenBytes {
		return bad("token", ErrMalformed, "too long")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return bad("token", ErrMalformed, "want three non-empty dot-separated parts")
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return bad("header", ErrMalformed, "not base64url")
	}
	dec := json.NewDecoder(bytes.NewReader(hb))
	if err := dec.Decode(&h); err != nil || dec.More() {
		return bad("header", ErrMalformed, "not a JSON object")
	}
	if !slices.Contains(cfg.algorithms(), h.Alg) {
		return bad("alg", ErrAlgorithm, "allowed: "+strings.Join(cfg.algorithms(), ", "))
	}
	return h, nil
}

// identity checks the claims of a token whose signature is good and
// returns the identity.
func identity(cfg *Config, issuer string, audience []string, payload []byte, now time.Time) (*Identity, error) {
	fail := func(field string, err error, detail string) (*Identity, error) {
		return nil, &TokenError{Verifier: cfg.Verifier, Field: field, Err: err, Detail: detail}
	}
	var claims map[string]any
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil || claims == nil || dec.More() {
		return fail("payload", ErrMalformed, "not a JSON object")
	}
	if iss, _ := claims["iss"].(string); iss != issuer {
		return fail("iss", ErrIssuer, "")
	}
	if !audienceMatches(claims["aud"], audience) {
		return fail("aud", ErrAudience, "")
	}
	leeway := time.Duration(cfg.Leeway) * time.Second
	exp, ok, err := numericDate(claims["exp"])
	if err != nil || !ok {
		return fail("exp", ErrExpired, "missing or not a number")
	}
	if !now.Before(exp.Add(leeway)) {
		return fail("exp", ErrExpired, "")
	}
	if nbf, ok, err := numericDate(claims["nbf"]); err != nil {
		return fail("nbf", ErrMalformed, "not a number")
	} else if ok && now.Add(leeway).Before(nbf) {
		return fail("nbf", ErrNotYetValid, "")
	}
	if iat, ok, err := numericDate(claims["iat"]); err != nil {
		return fail("iat", ErrMalformed, "not a number")
	} else if ok && now.Add(leeway).Before(iat) {
		return fail("iat", ErrIssuedInFuture, "")
	}
	field := cfg.idField()
	id, _ := claims[field].(string)
	if id == "" {
		return fail(field, ErrMissingClaim, "the verifier id claim must be a non-empty string")
	}
	if !cfg.caseSensitive() {
		id = strings.ToLower(id)
	}
	str := func(k string) string { s, _ := claims[k].(string); return s }
	return &Identity{
		Verifier: cfg.Verifier, VerifierID: id, Claims: claims,
		Email: str("email"), Name: str("name"), Picture: str("picture"),
	}, nil
}

func audienceMatches(aud any, want []string) bool {
	var have []string
	switch a := aud.(type) {
	case string:
		have = []string{a}
	case []any:
		for _, v := range a {
			if s, ok := v.(string); ok {
				have = append(have, s)
			}
		}
	}
	for _, w := range want {
		if w != "" && slices.Contains(have, w) {
			return true
		}
	}
	return false
}

// numericDate reads a JWT NumericDate (seconds since the epoch, possibly
// fractional). ok is false if v is absent.
func numericDate(v any) (t time.Time, ok bool, err error) {
	if v == nil {
		return time.Time{}, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return time.Time{}, false, ErrMalformed
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
		return time.Time{}, false, ErrMalformed
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}
