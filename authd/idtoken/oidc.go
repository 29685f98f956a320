package idtoken

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
)

// wellKnown is the discovery document path under an issuer.
const wellKnown = "/.well-known/openid-configuration"

// oidcVerifier verifies ID tokens of an OpenID Connect provider found by
// discovery; go-oidc checks the signature (keys from the provider's
// jwks_uri, refreshed on unknown kid), issuer and audience; the shared
// claim checks then apply exp/nbf/iat with the leeway and read the
// verifier id.
type oidcVerifier struct {
	cfg    Config
	opts   Options
	issuer string

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
}

// NewOIDC makes an OpenID Connect verifier. It does no I/O: discovery
// happens at the first Verify, and is retried at the next if it fails.
func NewOIDC(cfg Config, opts Options) (Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.IsOIDC() {
		return nil, cfg.bad("discoveryUrl", "required for an OpenID Connect verifier")
	}
	issuer := strings.TrimSuffix(strings.TrimSuffix(cfg.DiscoveryURL, wellKnown), "/")
	if strings.HasSuffix(cfg.DiscoveryURL, "/") && !strings.HasSuffix(cfg.DiscoveryURL, wellKnown) {
		// An issuer with a trailing slash is a different issuer: keep it.
		issuer = cfg.DiscoveryURL
	}
	if cfg.Issuer != "" && cfg.Issuer != issuer {
		return nil, cfg.bad("issuer", "does not match the discovery URL's issuer "+issuer)
	}
	return &oidcVerifier{cfg: cfg, opts: opts.withDefaults(), issuer: issuer}, nil
}

func (v *oidcVerifier) idTokenVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	// The provider keeps this context for later key fetches: it must
	// outlive the request.
	pctx := oidc.ClientContext(context.WithoutCancel(ctx), v.opts.HTTPClient)
	p, err := oidc.NewProvider(pctx, v.issuer)
	if err != nil {
		return nil, err
	}
	v.verifier = p.VerifierContext(pctx, &oidc.Config{
		ClientID:             v.cfg.ClientID,
		SupportedSigningAlgs: v.cfg.algorithms(),
		// exp, nbf and iat are checked with the entry's leeway by identity.
		SkipExpiryCheck: true,
		Now:             v.opts.Now,
	})
	return v.verifier, nil
}

func (v *oidcVerifier) Verify(ctx context.Context, token string) (*Identity, error) {
	if _, err := peekHeader(&v.cfg, token); err != nil {
		return nil, err
	}
	iv, err := v.idTokenVerifier(ctx)
	if err != nil {
		return nil, &TokenError{Verifier: v.cfg.Verifier, Field: "discoveryUrl", Err: ErrKeysUnavailable, Detail: err.Error()}
	}
	idt, err := iv.Verify(ctx, token)
	if err != nil {
		return nil, v.classify(err)
	}
	var raw json.RawMessage
	if err := idt.Claims(&raw); err != nil {
		return nil, &TokenError{Verifier: v.cfg.Verifier, Field: "payload", Err: ErrMalformed}
	}
	return identity(&v.cfg, v.issuer, []string{v.cfg.ClientID}, raw, v.opts.Now())
}

// classify maps go-oidc's errors to ours. go-oidc has no typed errors for
// most cases; its messages are matched, and anything else is a signature
// failure (the safe answer: the token is refused either way).
func (v *oidcVerifier) classify(err error) error {
	te := &TokenError{Verifier: v.cfg.Verifier, Field: "signature", Err: ErrSignature}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "malformed") || strings.Contains(msg, "failed to unmarshal"):
		te.Field, te.Err = "token", ErrMalformed
	case strings.Contains(msg, "id token issued by a different provider"):
		te.Field, te.Err = "iss", ErrIssuer
	case strings.Contains(msg, "expected audience"):
		te.Field, te.Err = "aud", ErrAudience
	case strings.Contains(msg, "signing algorithm") || strings.Contains(msg, "unsupported"):
		te.Field, te.Err = "alg", ErrAlgorithm
	case strings.Contains(msg, "fetching keys"):
		te.Field, te.Err = "discoveryUrl", ErrKeysUnavailable
	}
	var ke *oidc.TokenExpiredError
	if errors.As(err, &ke) {
		te.Field, te.Err = "exp", ErrExpired
	}
	return te
}
