package idtoken

import (
	"context"

	jose "github.com/go-jose/go-jose/v4"
)

// Verifier checks tokens for one verifier.
type Verifier interface {
	// Verify checks token and returns who it names. A refused token gives a
	// *TokenError.
	Verify(ctx context.Context, token string) (*Identity, error)
}

// jwtVerifier is a custom JWT verifier: its own keys, issuer and audience.
type jwtVerifier struct {
	cfg  Config
	keys keySource
	opts Options
}

// NewJWT makes a custom JWT verifier. It does no I/O: a JWKS URL is
// fetched at the first Verify.
func NewJWT(cfg Config, opts Options) (Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.IsOIDC() {
		return nil, cfg.bad("discoveryUrl", "an OpenID Connect verifier: use NewOIDC")
	}
	opts = opts.withDefaults()
	v := &jwtVerifier{cfg: cfg, opts: opts}
	var static staticKeys
	if len(cfg.JWKS) > 0 {
		keys, err := parseJWKS(cfg.JWKS)
		if err != nil {
			return nil, cfg.bad("jwks", err.Error())
		}
		static = append(static, keys...)
	}
	if cfg.PEM != "" {
		keys, err := parsePEM([]byte(cfg.PEM))
		if err != nil {
			return nil, cfg.bad("pem", err.Error())
		}
		static = append(static, keys...)
	}
	switch {
	case cfg.JWKSURL != "" && len(static) > 0:
		return nil, cfg.bad("jwksUrl", "set together with inline keys: choose one")
	case cfg.JWKSURL != "":
		v.keys = &remoteKeys{url: cfg.JWKSURL, opts: opts}
	case len(static) == 0:
		return nil, cfg.bad("jwks", "no usable key")
	default:
		v.keys = static
	}
	return v, nil
}

func (v *jwtVerifier) Verify(ctx context.Context, token string) (*Identity, error) {
	h, err := peekHeader(&v.cfg, token)
	if err != nil {
		return nil, err
	}
	sig, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(h.Alg)})
	if err != nil || len(sig.Signatures) != 1 {
		return nil, &TokenError{Verifier: v.cfg.Verifier, Field: "token", Err: ErrMalformed}
	}
	keys, err := v.keys.lookup(ctx, h.Kid, h.Alg)
	if err != nil {
		return nil, &TokenError{Verifier: v.cfg.Verifier, Field: "jwksUrl", Err: ErrKeysUnavailable, Detail: err.Error()}
	}
	if len(keys) == 0 {
		return nil, &TokenError{Verifier: v.cfg.Verifier, Field: "kid", Err: ErrUnknownKey}
	}
	var payload []byte
	for _, k := range keys {
		if payload, err = sig.Verify(k.Key); err == nil {
			break
		}
	}
	if err != nil {
		return nil, &TokenError{Verifier: v.cfg.Verifier, Field: "signature", Err: ErrSignature}
	}
	return identity(&v.cfg, v.cfg.Issuer, v.cfg.Audience, payload, v.opts.Now())
}

// New makes the verifier an entry describes: OpenID Connect if it has a
// discovery URL, else custom JWT.
func New(cfg Config, opts Options) (Verifier, error) {
	if cfg.IsOIDC() {
		return NewOIDC(cfg, opts)
	}
	return NewJWT(cfg, opts)
}
