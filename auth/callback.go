package auth

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/porticohq/portico/auth/eccrypto"
)

// Callback is what the login pages put in the redirect back to the app.
type Callback struct {
	// SessionID is the new session's key in hex. Secret.
	SessionID string
	// Error is the pages' error, if the login failed.
	Error string
}

// ParseCallbackURL reads a redirect URL in either form the pages use:
// "#sessionId=<hex>&…" (v7) or "#b64Params=<base64url JSON {"sessionId":…}>"
// (v8 and later). An "error" parameter, in the fragment, the b64Params
// JSON or the query, becomes a *LoginError. A missing or malformed session
// id is a *FieldError for "sessionId".
func ParseCallbackURL(raw string) (Callback, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Callback{}, &FieldError{Field: "callbackUrl", Reason: "is not a URL"}
	}
	frag, err := url.ParseQuery(u.EscapedFragment())
	if err != nil {
		return Callback{}, &FieldError{Field: "callbackUrl", Reason: "has a malformed fragment"}
	}
	query := u.Query()
	var cb Callback
	if b64 := frag.Get("b64Params"); b64 != "" {
		raw, err := decodeBase64(b64)
		if err != nil {
			return Callback{}, &FieldError{Field: "b64Params", Reason: "is not base64"}
		}
		var p struct {
			SessionID string `json:"sessionId"`
			Error     string `json:"error"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return Callback{}, &FieldError{Field: "b64Params", Reason: "is not a JSON object with sessionId"}
		}
		cb = Callback{SessionID: p.SessionID, Error: p.Error}
	} else {
		cb = Callback{SessionID: frag.Get("sessionId"), Error: frag.Get("error")}
	}
	if cb.Error == "" {
		cb.Error = query.Get("error")
	}
	if cb.Error != "" {
		return cb, &LoginError{Message: cb.Error}
	}
	if cb.SessionID == "" {
		return cb, &FieldError{Field: "sessionId", Reason: "is missing from the callback"}
	}
	k, err := eccrypto.ParsePrivateKeyHex(cb.SessionID)
	if err != nil {
		return Callback{}, &FieldError{Field: "sessionId", Reason: "is not a 64-hex-character key"}
	}
	cb.SessionID = eccrypto.PrivateKeyHex(k)
	return cb, nil
}

// decodeBase64 accepts the URL-safe and the standard alphabets, with or
// without padding.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	s = strings.NewReplacer("+", "-", " ", "-", "/", "_").Replace(s) // a "+" may arrive as " " after query decoding
	return base64.RawURLEncoding.DecodeString(s)
}
