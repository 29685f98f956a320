package apikey

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/porticohq/portico"
)

// Bounds of a key's JWT settings (docs/keys.md).
const (
	// MaxJWTKeys is how many public keys one API key may register.
	MaxJWTKeys = 3
	// DefaultJWTMaxLifetime bounds exp when a key sets no bound: a token
	// may be valid for at most this long (from iat, and from the moment it
	// is used).
	DefaultJWTMaxLifetime = time.Hour
	// MaxJWTLifetime is the longest bound a key may set.
	MaxJWTLifetime = 24 * time.Hour
	// JWTLeeway is the clock skew tolerated on exp, nbf and iat.
	JWTLeeway = 60 * time.Second
	// minRSABits refuses RSA keys too short to be safe.
	minRSABits = 2048
)

// JWTKey is one public key registered with an API key, as stored: its
// name, which tokens carry as kid, and its PEM (PKIX "PUBLIC KEY").
type JWTKey struct {
	Name string `json:"name"`
	PEM  string `json:"pem"`
}

// JWT holds a key's parsed JWT settings and checks tokens against them.
type JWT struct {
	keys        map[string]parsedKey
	maxLifetime time.Duration
	audience    string
	// Fingerprint changes whenever the settings do, so that a cache of
	// tokens checked under them can be keyed by it.
	Fingerprint Hash
}

type parsedKey struct {
	alg jose.SignatureAlgorithm
	key any
}

// ParseJWTKey reads a PEM public key and returns the algorithm tokens
// signed by it must use: RS256 for RSA (2048 bits or more), ES256 for
// ECDSA on P-256.
func ParseJWTKey(pemText string) (jose.SignatureAlgorithm, any, error) {
	b, _ := pem.Decode([]byte(strings.TrimSpace(pemText)))
	if b == nil {
		return "", nil, errors.New("not a PEM block")
	}
	var pub any
	var err error
	switch b.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(b.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(b.Bytes)
	default:
		return "", nil, fmt.Errorf("PEM block %q: want PUBLIC KEY (a private key must never be pasted here)", b.Type)
	}
	if err != nil {
		return "", nil, err
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return "", nil, fmt.Errorf("RSA key of %d bits: want at least %d", k.N.BitLen(), minRSABits)
		}
		return jose.RS256, k, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", nil, fmt.Errorf("ECDSA key on %s: want P-256 (ES256)", k.Curve.Params().Name)
		}
		return jose.ES256, k, nil
	}
	return "", nil, fmt.Errorf("%T: want an RSA (RS256) or P-256 ECDSA (ES256) public key", pub)
}

// NewJWT checks a key's JWT settings: 1 to MaxJWTKeys keys with distinct
// names, each a usable public key. maxLifetime 0 means
// DefaultJWTMaxLifetime; audience "" means the key's name.
func NewJWT(keys []JWTKey, maxLifetime time.Duration, audience string) (*JWT, error) {
	if len(keys) == 0 || len(keys) > MaxJWTKeys {
		return nil, fmt.Errorf("want 1 to %d public keys, got %d", MaxJWTKeys, len(keys))
	}
	if maxLifetime < 0 {
		return nil, errors.New("max lifetime must not be negative")
	}
	if maxLifetime == 0 {
		maxLifetime = DefaultJWTMaxLifetime
	}
	j := &JWT{keys: make(map[string]parsedKey, len(keys)), maxLifetime: maxLifetime, audience: audience}
	fp := sha256.New()
	fmt.Fprintf(fp, "%d\x00%s\x00", maxLifetime, audience)
	for _, k := range keys {
		if k.Name == "" || len(k.Name) > 64 {
			return nil, fmt.Errorf("public key name must be 1 to 64 characters, got %q", k.Name)
		}
		if _, dup := j.keys[k.Name]; dup {
			return nil, fmt.Errorf("public key name %q given twice", k.Name)
		}
		alg, pub, err := ParseJWTKey(k.PEM)
		if err != nil {
			return nil, fmt.Errorf("public key %q: %w", k.Name, err)
		}
		j.keys[k.Name] = parsedKey{alg: alg, key: pub}
		fmt.Fprintf(fp, "%s\x00%s\x00", k.Name, k.PEM)
	}
	fp.Sum(j.Fingerprint[:0])
	return j, nil
}

// MaxLifetime is the longest a token may be valid for.
func (j *JWT) MaxLifetime() time.Duration { return j.maxLifetime }

// Verify checks a compact JWS token for the key named keyName at now: its
// alg (RS256 or ES256, matching the key named by kid), its signature, exp
// (required, not past, not further than the max lifetime), nbf and iat
// (not in the future) and aud (the configured audience, else keyName),
// with JWTLeeway on the times. It returns the token's expiry, after which
// a cached check no longer holds. Errors are *portico.JWTError.
func (j *JWT) Verify(token, keyName string, now time.Time) (time.Time, error) {
	if token == "" {
		return time.Time{}, &portico.JWTError{Reason: "token missing: send it as Authorization: Bearer <JWT>"}
	}
	alg, kid, err := peekHeader(token)
	if err != nil {
		return time.Time{}, &portico.JWTError{Reason: "token malformed: " + err.Error()}
	}
	if strings.EqualFold(alg, "none") {
		return time.Time{}, &portico.JWTError{Reason: `alg "none" (an unsigned token) is not accepted`}
	}
	if alg != string(jose.RS256) && alg != string(jose.ES256) {
		return time.Time{}, &portico.JWTError{Reason: fmt.Sprintf("alg %q is not accepted: want RS256 or ES256", alg)}
	}
	k, ok := j.keys[kid]
	if !ok {
		return time.Time{}, &portico.JWTError{Reason: fmt.Sprintf("kid %q names no public key of this API key", kid)}
	}
	if string(k.alg) != alg {
		return time.Time{}, &portico.JWTError{Reason: fmt.Sprintf("alg %q does not fit public key %q, which takes %s", alg, kid, k.alg)}
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{k.alg})
	if err != nil {
		return time.Time{}, &portico.JWTError{Reason: "token malformed: " + trimJose(err)}
	}
	var c jwt.Claims
	if err := tok.Claims(k.key, &c); err != nil {
		return time.Time{}, &portico.JWTError{Reason: fmt.Sprintf("signature does not verify with public key %q", kid)}
	}
	if c.Expiry == nil {
		return time.Time{}, &portico.JWTError{Reason: "exp missing: tokens must expire"}
	}
	aud := j.audience
	if aud == "" {
		aud = keyName
	}
	switch err := c.ValidateWithLeeway(jwt.Expected{AnyAudience: jwt.Audience{aud}, Time: now}, JWTLeeway); {
	case errors.Is(err, jwt.ErrInvalidAudience):
		return time.Time{}, &portico.JWTError{Reason: fmt.Sprintf("aud does not name this API key: want %q", aud)}
	case errors.Is(err, jwt.ErrExpired):
		return time.Time{}, &portico.JWTError{Reason: "token expired"}
	case errors.Is(err, jwt.ErrNotValidYet):
		return time.Time{}, &portico.JWTError{Reason: "token not valid yet (nbf)"}
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return time.Time{}, &portico.JWTError{Reason: "token issued in the future (iat)"}
	case err != nil:
		return time.Time{}, &portico.JWTError{Reason: trimJose(err)}
	}
	exp := c.Expiry.Time()
	from := now
	if c.IssuedAt != nil {
		from = c.IssuedAt.Time()
	}
	if exp.Sub(from) > j.maxLifetime+JWTLeeway || exp.Sub(now) > j.maxLifetime+JWTLeeway {
		return time.Time{}, &portico.JWTError{Reason: fmt.Sprintf("lifetime too long: exp may be at most %s after iat and after now", j.maxLifetime)}
	}
	return exp, nil
}

// peekHeader reads alg and kid from a compact token's header, so that
// the refusal of an unsigned or HMAC token can say why.
func peekHeader(token string) (alg, kid string, err error) {
	head, _, ok := strings.Cut(token, ".")
	if !ok || strings.Count(token, ".") != 2 {
		return "", "", errors.New("want a compact JWS: header.payload.signature")
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return "", "", errors.New("header is not base64url")
	}
	var h struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return "", "", errors.New("header is not JSON")
	}
	return h.Alg, h.Kid, nil
}

// trimJose drops the library's package prefix from its messages.
func trimJose(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "jwt: "); i >= 0 {
		return s[i+len("jwt: "):]
	}
	return strings.TrimPrefix(s, "go-jose/go-jose: ")
}
