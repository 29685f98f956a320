package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"time"

	"github.com/maypok86/otter/v2"
	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// A key's own rules (issue 26, docs/keys.md): its secret and JWT are
// checked once per request (HTTP request or WebSocket handshake), before
// any allowlist, so that a caller without them learns nothing of the key's
// settings; its User-Agent list once per request; its contract-address
// list per call; its bounds on calls per request body (metering.Bounds).
// A key without rules (Identity.Rules nil) skips all of it.

// authorize checks a request's credentials beyond the key in the path:
// the key's secret (the password of HTTP Basic auth, or the
// X-Portico-Secret header) and its JWT (Authorization: Bearer).
func (g *Gateway) authorize(h *fasthttp.RequestHeader, id apikey.Identity) error {
	r := id.Rules
	now := time.Now()
	auth := h.Peek("Authorization")
	if len(r.Secrets) > 0 {
		secret := string(h.Peek(portico.HeaderKeySecret))
		if secret == "" {
			secret = basicPassword(auth)
		}
		if err := r.CheckSecret(secret, now); err != nil {
			return err
		}
	}
	if r.JWT != nil {
		var token string
		if len(auth) > 7 && bytes.EqualFold(auth[:7], []byte("Bearer ")) {
			token = string(bytes.TrimSpace(auth[7:]))
		}
		return g.tokens.verify(r.JWT, token, id.Name, now)
	}
	return nil
}

// basicPassword is the password of an HTTP Basic Authorization header,
// whatever the user name; "" when there is none.
func basicPassword(auth []byte) string {
	if len(auth) < 6 || !bytes.EqualFold(auth[:6], []byte("Basic ")) {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(auth[6:])))
	if err != nil {
		return ""
	}
	if i := bytes.IndexByte(raw, ':'); i >= 0 {
		return string(raw[i+1:])
	}
	return ""
}

// tokenCache remembers the tokens that passed a check until they expire,
// so that a client sending the same JWT on every call pays for one
// signature check, not one per call. The entry is keyed by a digest of the
// key's JWT settings (a changed public key starts over), the key's name
// and the token.
type tokenCache struct {
	c *otter.Cache[apikey.Hash, time.Time]
}

func newTokenCache() tokenCache {
	return tokenCache{c: otter.Must(&otter.Options[apikey.Hash, time.Time]{
		MaximumSize:      100_000,
		ExpiryCalculator: otter.ExpiryWriting[apikey.Hash, time.Time](5 * time.Minute),
	})}
}

func (t tokenCache) verify(j *apikey.JWT, token, keyName string, now time.Time) error {
	if token == "" {
		_, err := j.Verify(token, keyName, now)
		return err
	}
	d := sha256.New()
	d.Write(j.Fingerprint[:])
	d.Write([]byte(keyName))
	d.Write([]byte{0})
	d.Write([]byte(token))
	var k apikey.Hash
	d.Sum(k[:0])
	if exp, ok := t.c.GetIfPresent(k); ok && !now.Add(-apikey.JWTLeeway).After(exp) {
		return nil
	}
	exp, err := j.Verify(token, keyName, now)
	if err != nil {
		return err
	}
	t.c.Set(k, exp)
	return nil
}
