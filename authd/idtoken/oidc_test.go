package idtoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/porticohq/portico/authd/idtoken"
)

// oidcServer is an OpenID provider: a discovery document and its JWK set.
func oidcServer(t *testing.T, set jose.JSONWebKeySet) (*httptest.Server, *atomic.Int64) {
	var discoveries atomic.Int64
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		discoveries.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": srv.URL, "jwks_uri": srv.URL + "/keys",
			"authorization_endpoint": srv.URL + "/auth", "token_endpoint": srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(set) })
	return srv, &discoveries
}

func TestOIDC(t *testing.T) {
	k := newKeyring(t)
	srv, discoveries := oidcServer(t, k.jwks())
	no := false
	cfg := idtoken.Config{Verifier: "google", TypeOfLogin: "google", DiscoveryURL: srv.URL + "/.well-known/openid-configuration",
		ClientID: "client-123", Leeway: 60, VerifierIDField: "email", IsVerifierIDCaseSensitive: &no}
	v, err := idtoken.New(cfg, opts())
	if err != nil {
		t.Fatal(err)
	}
	if discoveries.Load() != 0 {
		t.Fatal("New ran discovery")
	}
	good := with(goodClaims(), "iss", srv.URL, "aud", "client-123")
	tests := []struct {
		name  string
		token string
		err   error
		field string
	}{
		{"RS256 ok", sign(t, jose.RS256, "rsa", k.rsa, good), nil, ""},
		{"ES256 ok", sign(t, jose.ES256, "ec", k.ec, good), nil, ""},
		{"expired within leeway", sign(t, jose.RS256, "rsa", k.rsa, with(good, "exp", testNow.Add(-30*time.Second).Unix())), nil, ""},
		{"expired beyond leeway", sign(t, jose.RS256, "rsa", k.rsa, with(good, "exp", testNow.Add(-2*time.Minute).Unix())), idtoken.ErrExpired, "exp"},
		{"nbf in the future", sign(t, jose.RS256, "rsa", k.rsa, with(good, "nbf", testNow.Add(10*time.Minute).Unix())), idtoken.ErrNotYetValid, "nbf"},
		{"wrong aud", sign(t, jose.RS256, "rsa", k.rsa, with(good, "aud", "other-client")), idtoken.ErrAudience, "aud"},
		{"wrong iss", sign(t, jose.RS256, "rsa", k.rsa, with(good, "iss", "https://evil.test")), idtoken.ErrIssuer, "iss"},
		{"wrong key", sign(t, jose.RS256, "rsa", k.rsa2, good), idtoken.ErrSignature, "signature"},
		{"HS256", rawToken(map[string]any{"alg": "HS256", "kid": "rsa"}, good, hs256(pemOf(t, &k.rsa.PublicKey))), idtoken.ErrAlgorithm, "alg"},
		{"alg none", rawToken(map[string]any{"alg": "none"}, good, func(string) []byte { return []byte{1} }), idtoken.ErrAlgorithm, "alg"},
		{"missing email", sign(t, jose.RS256, "rsa", k.rsa, with(good, "email", nil)), idtoken.ErrMissingClaim, "email"},
		{"malformed", "x.y.z", idtoken.ErrMalformed, "header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := v.Verify(context.Background(), tc.token)
			if tc.err == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if id.VerifierID != "alice@example.com" || id.Verifier != "google" {
					t.Fatalf("identity %+v", id)
				}
				return
			}
			var te *idtoken.TokenError
			if !errors.Is(err, tc.err) || !errors.As(err, &te) || te.Field != tc.field {
				t.Fatalf("err = %v, want %v on %q", err, tc.err, tc.field)
			}
		})
	}
	if n := discoveries.Load(); n != 1 {
		t.Fatalf("%d discoveries, want 1", n)
	}
}

func TestOIDCIssuerMismatch(t *testing.T) {
	k := newKeyring(t)
	srv, _ := oidcServer(t, k.jwks())
	// The discovery document names srv.URL; asking for another issuer path
	// must fail discovery, not trust the document.
	v, err := idtoken.NewOIDC(idtoken.Config{Verifier: "g", DiscoveryURL: srv.URL + "/tenant", ClientID: "c"}, opts())
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), sign(t, jose.RS256, "rsa", k.rsa, with(goodClaims(), "iss", srv.URL, "aud", "c")))
	if !errors.Is(err, idtoken.ErrKeysUnavailable) {
		t.Fatalf("err = %v, want ErrKeysUnavailable (discovery failed)", err)
	}
	if _, err := idtoken.NewOIDC(idtoken.Config{Verifier: "g", DiscoveryURL: srv.URL, ClientID: "c", Issuer: "https://other"}, opts()); err == nil {
		t.Fatal("issuer that contradicts the discovery URL accepted")
	}
}
