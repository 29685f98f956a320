package idtoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/porticohq/portico/authd/idtoken"
)

func opts() idtoken.Options {
	return idtoken.Options{Now: func() time.Time { return testNow }}
}

func TestJWTAttacks(t *testing.T) {
	k := newKeyring(t)
	srv := newJWKSServer(t, k.jwks())
	v, err := idtoken.NewJWT(idtoken.Config{
		Verifier: "custom", TypeOfLogin: "jwt", JWKSURL: srv.URL,
		Issuer: "https://issuer.test", Audience: []string{"portico-app"}, Leeway: 60,
	}, opts())
	if err != nil {
		t.Fatal(err)
	}
	good := goodClaims()
	rsaPEM := pemOf(t, &k.rsa.PublicKey)
	tests := []struct {
		name  string
		token string
		err   error
		field string
	}{
		{"RS256 ok", sign(t, jose.RS256, "rsa", k.rsa, good), nil, ""},
		{"PS256 ok", sign(t, jose.PS256, "rsa", k.rsa, good), nil, ""},
		{"ES256 ok", sign(t, jose.ES256, "ec", k.ec, good), nil, ""},
		{"EdDSA ok", sign(t, jose.EdDSA, "ed", k.ed, good), nil, ""},
		{"audience in a list", sign(t, jose.RS256, "rsa", k.rsa, with(good, "aud", []string{"other", "portico-app"})), nil, ""},
		{"wrong aud", sign(t, jose.RS256, "rsa", k.rsa, with(good, "aud", "someone-else")), idtoken.ErrAudience, "aud"},
		{"no aud", sign(t, jose.RS256, "rsa", k.rsa, with(good, "aud", nil)), idtoken.ErrAudience, "aud"},
		{"wrong iss", sign(t, jose.RS256, "rsa", k.rsa, with(good, "iss", "https://evil.test")), idtoken.ErrIssuer, "iss"},
		{"expired beyond leeway", sign(t, jose.RS256, "rsa", k.rsa, with(good, "exp", testNow.Add(-61*time.Second).Unix())), idtoken.ErrExpired, "exp"},
		{"expired exactly at leeway", sign(t, jose.RS256, "rsa", k.rsa, with(good, "exp", testNow.Add(-60*time.Second).Unix())), idtoken.ErrExpired, "exp"},
		{"expired within leeway", sign(t, jose.RS256, "rsa", k.rsa, with(good, "exp", testNow.Add(-30*time.Second).Unix())), nil, ""},
		{"no exp", sign(t, jose.RS256, "rsa", k.rsa, with(good, "exp", nil)), idtoken.ErrExpired, "exp"},
		{"exp not a number", sign(t, jose.RS256, "rsa", k.rsa, with(good, "exp", "tomorrow")), idtoken.ErrExpired, "exp"},
		{"nbf in the future", sign(t, jose.RS256, "rsa", k.rsa, with(good, "nbf", testNow.Add(2*time.Minute).Unix())), idtoken.ErrNotYetValid, "nbf"},
		{"nbf within leeway", sign(t, jose.RS256, "rsa", k.rsa, with(good, "nbf", testNow.Add(30*time.Second).Unix())), nil, ""},
		{"iat in the future", sign(t, jose.RS256, "rsa", k.rsa, with(good, "iat", testNow.Add(2*time.Minute).Unix())), idtoken.ErrIssuedInFuture, "iat"},
		{"alg none", rawToken(map[string]any{"alg": "none", "kid": "rsa"}, good, func(string) []byte { return []byte{0} }), idtoken.ErrAlgorithm, "alg"},
		{"alg none, empty signature", rawToken(map[string]any{"alg": "none"}, good, func(string) []byte { return nil }), idtoken.ErrMalformed, "token"},
		{"HS256 with the RSA public key as secret", rawToken(map[string]any{"alg": "HS256", "kid": "rsa"}, good, hs256(rsaPEM)), idtoken.ErrAlgorithm, "alg"},
		{"HS256 with the JWK modulus as secret", rawToken(map[string]any{"alg": "HS256", "kid": "rsa"}, good, hs256(k.rsa.N.Bytes())), idtoken.ErrAlgorithm, "alg"},
		{"wrong key, same kid", sign(t, jose.RS256, "rsa", k.rsa2, good), idtoken.ErrSignature, "signature"},
		{"unknown kid", sign(t, jose.RS256, "nope", k.rsa, good), idtoken.ErrUnknownKey, "kid"},
		{"RS256 naming the EC key", rawToken(map[string]any{"alg": "RS256", "kid": "ec"}, good, rs256(t, k.rsa)), idtoken.ErrUnknownKey, "kid"},
		{"ES256 naming the RSA key", sign(t, jose.ES256, "rsa", k.ec, good), idtoken.ErrUnknownKey, "kid"},
		{"no kid: tries keys of the right type", sign(t, jose.RS256, "", k.rsa, good), nil, ""},
		{"no kid, wrong key", sign(t, jose.RS256, "", k.rsa2, good), idtoken.ErrSignature, "signature"},
		{"missing sub", sign(t, jose.RS256, "rsa", k.rsa, with(good, "sub", nil)), idtoken.ErrMissingClaim, "sub"},
		{"empty sub", sign(t, jose.RS256, "rsa", k.rsa, with(good, "sub", "")), idtoken.ErrMissingClaim, "sub"},
		{"numeric sub", sign(t, jose.RS256, "rsa", k.rsa, with(good, "sub", 42)), idtoken.ErrMissingClaim, "sub"},
		{"tampered payload", tamper(sign(t, jose.RS256, "rsa", k.rsa, good)), idtoken.ErrSignature, "signature"},
		{"garbage", "not a token", idtoken.ErrMalformed, "token"},
		{"two parts", "a.b", idtoken.ErrMalformed, "token"},
		{"four parts", "a.b.c.d", idtoken.ErrMalformed, "token"},
		{"header not base64", "!!.e30.AA", idtoken.ErrMalformed, "header"},
		{"header not JSON", "bm90anNvbg.e30.AA", idtoken.ErrMalformed, "header"},
		{"payload not JSON", rawToken(map[string]any{"alg": "RS256", "kid": "rsa"}, nil, rs256(t, k.rsa)), idtoken.ErrMalformed, "payload"},
		{"too long", strings.Repeat("a", idtoken.MaxTokenBytes+1), idtoken.ErrMalformed, "token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := v.Verify(context.Background(), tc.token)
			if tc.err == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if id.Verifier != "custom" || id.VerifierID != "user-1" || id.Email != "Alice@Example.COM" || id.Name != "Alice" || id.Picture != "https://pic.test/a.png" {
					t.Fatalf("identity %+v", id)
				}
				return
			}
			var te *idtoken.TokenError
			if !errors.As(err, &te) || !errors.Is(err, tc.err) || te.Field != tc.field {
				t.Fatalf("err = %v, want %v on field %q", err, tc.err, tc.field)
			}
			if id != nil {
				t.Fatal("identity returned with an error")
			}
			if strings.Contains(err.Error(), tc.token) && len(tc.token) > 8 {
				t.Fatal("the error message contains the token")
			}
		})
	}
}

// tamper changes the sub in a signed token's payload, keeping the signature.
func tamper(tok string) string {
	p := strings.Split(tok, ".")
	c := goodClaims()
	c["sub"] = "admin"
	b, _ := json.Marshal(c)
	p[1] = b64(b)
	return strings.Join(p, ".")
}

func TestJWTPayloadNotJSONIsMalformed(t *testing.T) {
	// A signature over a payload that is not a JSON object: the signature
	// is good, the claims are not.
	k := newKeyring(t)
	v, err := idtoken.NewJWT(idtoken.Config{Verifier: "v", PEM: string(pemOf(t, &k.rsa.PublicKey)),
		Issuer: "https://issuer.test", Audience: []string{"portico-app"}}, opts())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k.rsa}, nil)
	obj, _ := s.Sign([]byte("[1,2]"))
	tok, _ := obj.CompactSerialize()
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, idtoken.ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
}

func TestVerifierIDField(t *testing.T) {
	k := newKeyring(t)
	no := false
	base := idtoken.Config{Verifier: "v", Issuer: "https://issuer.test", Audience: []string{"portico-app"},
		PEM: string(pemOf(t, &k.rsa.PublicKey))}
	tests := []struct {
		name      string
		field     string
		sensitive *bool
		claims    map[string]any
		want      string
		err       error
	}{
		{"default sub", "", nil, goodClaims(), "user-1", nil},
		{"email, case sensitive by default", "email", nil, goodClaims(), "Alice@Example.COM", nil},
		{"email, case insensitive", "email", &no, goodClaims(), "alice@example.com", nil},
		{"missing email", "email", &no, with(goodClaims(), "email", nil), "", idtoken.ErrMissingClaim},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.VerifierIDField, cfg.IsVerifierIDCaseSensitive = tc.field, tc.sensitive
			v, err := idtoken.NewJWT(cfg, opts())
			if err != nil {
				t.Fatal(err)
			}
			// PEM keys have no kid: the token's kid falls back to them.
			id, err := v.Verify(context.Background(), sign(t, jose.RS256, "some-kid", k.rsa, tc.claims))
			if tc.err != nil {
				var te *idtoken.TokenError
				if !errors.Is(err, tc.err) || !errors.As(err, &te) || te.Field != tc.field {
					t.Fatalf("err = %v, want %v on %q", err, tc.err, tc.field)
				}
				return
			}
			if err != nil || id.VerifierID != tc.want {
				t.Fatalf("got %v, %v; want %q", id, err, tc.want)
			}
		})
	}
}

func TestInlineKeys(t *testing.T) {
	k := newKeyring(t)
	set, _ := json.Marshal(k.jwks())
	for name, cfg := range map[string]idtoken.Config{
		"jwks": {JWKS: set},
		"pem":  {PEM: string(pemOf(t, &k.rsa.PublicKey)) + string(pemOf(t, &k.ec.PublicKey)) + string(pemOf(t, k.ed.Public()))},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Verifier, cfg.Issuer, cfg.Audience = "v", "https://issuer.test", []string{"portico-app"}
			v, err := idtoken.NewJWT(cfg, opts())
			if err != nil {
				t.Fatal(err)
			}
			for _, tok := range []string{
				sign(t, jose.RS256, "rsa", k.rsa, goodClaims()),
				sign(t, jose.ES256, "ec", k.ec, goodClaims()),
				sign(t, jose.EdDSA, "ed", k.ed, goodClaims()),
			} {
				if _, err := v.Verify(context.Background(), tok); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := v.Verify(context.Background(), sign(t, jose.RS256, "rsa", k.rsa2, goodClaims())); !errors.Is(err, idtoken.ErrSignature) {
				t.Fatalf("other key: err = %v, want ErrSignature", err)
			}
		})
	}
}

func TestJWKSRefresh(t *testing.T) {
	k := newKeyring(t)
	srv := newJWKSServer(t, k.jwks())
	now := testNow
	o := idtoken.Options{Now: func() time.Time { return now }, MinRefresh: 30 * time.Second, MaxKeyAge: time.Hour}
	v, err := idtoken.NewJWT(idtoken.Config{Verifier: "v", JWKSURL: srv.URL, Issuer: "https://issuer.test", Audience: []string{"portico-app"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if srv.fetches.Load() != 0 {
		t.Fatal("NewJWT fetched the keys")
	}
	if _, err := v.Verify(ctx, sign(t, jose.RS256, "rsa", k.rsa, goodClaims())); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, sign(t, jose.ES256, "ec", k.ec, goodClaims())); err != nil {
		t.Fatal(err)
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for known kids, want 1 (cached)", n)
	}
	// Rotation: the issuer adds a key; a token naming it makes us refetch.
	// The clock has not moved past MinRefresh since the first fetch, so
	// the first unknown-kid refresh waits for it.
	set := k.jwks()
	set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.rsa2.PublicKey, KeyID: "rsa-2", Use: "sig"})
	srv.replace(set)
	rotated := sign(t, jose.RS256, "rsa-2", k.rsa2, goodClaims())
	if _, err := v.Verify(ctx, rotated); !errors.Is(err, idtoken.ErrUnknownKey) {
		t.Fatalf("within MinRefresh: err = %v, want ErrUnknownKey", err)
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want no refetch within MinRefresh", n)
	}
	now = now.Add(31 * time.Second)
	if _, err := v.Verify(ctx, rotated); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// Unknown kids cannot make us fetch more than once per MinRefresh.
	for range 5 {
		_, _ = v.Verify(ctx, sign(t, jose.RS256, "forged", k.rsa, goodClaims()))
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after forged kids, want 2", n)
	}
	now = now.Add(31 * time.Second)
	_, _ = v.Verify(ctx, sign(t, jose.RS256, "forged", k.rsa, goodClaims()))
	if n := srv.fetches.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}
	// Keys older than MaxKeyAge are fetched again.
	now = now.Add(2 * time.Hour)
	if _, err := v.Verify(ctx, sign(t, jose.RS256, "rsa", k.rsa, with(goodClaims(), "exp", now.Add(time.Hour).Unix()))); err != nil {
		t.Fatal(err)
	}
	if n := srv.fetches.Load(); n != 4 {
		t.Fatalf("%d fetches, want 4 after MaxKeyAge", n)
	}
	// The server goes away: keys already fetched keep working.
	srv.Close()
	now = now.Add(2 * time.Hour)
	if _, err := v.Verify(ctx, sign(t, jose.RS256, "rsa", k.rsa, with(goodClaims(), "exp", now.Add(time.Hour).Unix()))); err != nil {
		t.Fatalf("with stale keys and the server down: %v", err)
	}
}

func TestJWKSUnavailable(t *testing.T) {
	k := newKeyring(t)
	srv := newJWKSServer(t, k.jwks())
	url := srv.URL
	srv.Close()
	v, err := idtoken.NewJWT(idtoken.Config{Verifier: "v", JWKSURL: url, Issuer: "https://issuer.test", Audience: []string{"portico-app"}}, opts())
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), sign(t, jose.RS256, "rsa", k.rsa, goodClaims()))
	var te *idtoken.TokenError
	if !errors.Is(err, idtoken.ErrKeysUnavailable) || !errors.As(err, &te) || te.Field != "jwksUrl" {
		t.Fatalf("err = %v, want ErrKeysUnavailable on jwksUrl", err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := idtoken.Config{Verifier: "v", JWKSURL: "https://issuer.test/jwks", Issuer: "https://issuer.test", Audience: []string{"a"}}
	tests := []struct {
		name  string
		edit  func(c *idtoken.Config)
		field string
	}{
		{"ok", func(*idtoken.Config) {}, ""},
		{"no name", func(c *idtoken.Config) { c.Verifier = "" }, "verifier"},
		{"no keys", func(c *idtoken.Config) { c.JWKSURL = "" }, "jwksUrl"},
		{"bad url", func(c *idtoken.Config) { c.JWKSURL = "ftp://x" }, "jwksUrl"},
		{"no issuer", func(c *idtoken.Config) { c.Issuer = "" }, "issuer"},
		{"no audience", func(c *idtoken.Config) { c.Audience = nil }, "audience"},
		{"negative leeway", func(c *idtoken.Config) { c.Leeway = -1 }, "leeway"},
		{"huge leeway", func(c *idtoken.Config) { c.Leeway = 86400 }, "leeway"},
		{"HS256 allowed", func(c *idtoken.Config) { c.Algorithms = []string{"RS256", "HS256"} }, "algorithms"},
		{"none allowed", func(c *idtoken.Config) { c.Algorithms = []string{"none"} }, "algorithms"},
		{"oidc and keys", func(c *idtoken.Config) { c.DiscoveryURL = "https://accounts.test" }, "discoveryUrl"},
		{"oidc without client id", func(c *idtoken.Config) { *c = idtoken.Config{Verifier: "g", DiscoveryURL: "https://accounts.test"} }, "clientId"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *idtoken.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("err = %v, want ConfigError on %q", err, tc.field)
			}
		})
	}
	if _, err := idtoken.NewJWT(idtoken.Config{Verifier: "v", PEM: "junk", Issuer: "i", Audience: []string{"a"}}, opts()); err == nil {
		t.Fatal("junk PEM accepted")
	}
	if _, err := idtoken.NewRegistry([]idtoken.Config{ok, ok}, opts()); err == nil {
		t.Fatal("duplicate verifier accepted")
	}
}

func TestRegistry(t *testing.T) {
	k := newKeyring(t)
	r, err := idtoken.NewRegistry([]idtoken.Config{
		{Verifier: "a", PEM: string(pemOf(t, &k.rsa.PublicKey)), Issuer: "https://issuer.test", Audience: []string{"portico-app"}},
		{Verifier: "b", PEM: string(pemOf(t, &k.rsa2.PublicKey)), Issuer: "https://issuer.test", Audience: []string{"portico-app"}},
	}, opts())
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, jose.RS256, "", k.rsa, goodClaims())
	if id, err := r.Verify(context.Background(), "a", tok); err != nil || id.Verifier != "a" {
		t.Fatalf("a: %v %v", id, err)
	}
	if _, err := r.Verify(context.Background(), "b", tok); !errors.Is(err, idtoken.ErrSignature) {
		t.Fatalf("b: err = %v, want ErrSignature (a's token under b's key)", err)
	}
	if _, err := r.Verify(context.Background(), "c", tok); !errors.Is(err, idtoken.ErrUnknownVerifier) {
		t.Fatalf("c: err = %v", err)
	}
	if got := strings.Join(r.Names(), ","); got != "a,b" {
		t.Fatalf("names %s", got)
	}
}
