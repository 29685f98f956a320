package login

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/porticohq/portico/auth"
)

func TestOIDCLogin(t *testing.T) {
	e := newEnv(t)
	sdk := e.sdk(t, auth.InitParams{})
	p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.Google, RedirectURL: appCallback, MfaLevel: auth.MFANone,
		ExtraLoginOptions: &auth.ExtraLoginOptions{Prompt: "consent", LoginHint: "alice@example.com", Display: "popup", UILocales: "de", Scope: "email",
			AdditionalParams: map[string]string{"hd": "example.com", "access_type": "offline", "state": "attacker", "redirect_uri": "https://evil.example/"}}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, appCallback)
	cb, _ := b.open(p.URL)
	a := e.Issuer.auth()
	want := map[string]string{"prompt": "consent", "login_hint": "alice@example.com", "display": "popup", "ui_locales": "de",
		"hd": "example.com", "access_type": "offline", "scope": "openid email", "code_challenge_method": "S256",
		"redirect_uri": e.URL + "/oidc/callback", "client_id": e.Issuer.clientID, "response_type": "code"}
	for k, v := range want {
		if a.Get(k) != v {
			t.Errorf("authorization request %s = %q, want %q", k, a.Get(k), v)
		}
	}
	if len(a.Get("state")) < 32 || a.Get("state") == "attacker" || len(a.Get("nonce")) < 32 || len(a.Get("code_challenge")) != 43 {
		t.Errorf("state/nonce/PKCE: %v", a)
	}
	st := complete(t, sdk, cb)
	if u := st.UserInfo; u.TypeOfLogin != "google" || u.Verifier != "test-google" || u.VerifierID != "alice" || u.Name != "Alice Example" || u.OAuthIDToken == "" || u.OAuthAccessToken == "" {
		t.Errorf("userInfo = %+v", u)
	}

	// The same user again has the same key; another verifier (the custom
	// JWT one, same subject) has another.
	p2, _ := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.Google, RedirectURL: appCallback, MfaLevel: auth.MFANone})
	cb, _ = newBrowser(t, appCallback).open(p2.URL)
	if st2 := complete(t, sdk, cb); st2.CoreKitKey != st.CoreKitKey {
		t.Error("the second OIDC login gave another key")
	}
	tok := e.Issuer.sign(t, map[string]any{"iss": e.Issuer.srv.URL, "aud": "my-app", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}, "RS256")
	cb = e.jwtLogin(t, sdk, tok)
	if st3 := complete(t, sdk, cb); st3.CoreKitKey == st.CoreKitKey {
		t.Error("another verifier gave the same key")
	}
}

func TestOIDCCallbackChecks(t *testing.T) {
	e := newEnv(t)
	sdk := e.sdk(t, auth.InitParams{})
	p, _ := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.Google, RedirectURL: appCallback})
	// A browser that does not follow the provider: it starts the login,
	// and a second browser (no cookie) brings the callback.
	b := newBrowser(t, appCallback)
	b.hc.CheckRedirect = func(_ *http.Request, _ []*http.Request) error { return http.ErrUseLastResponse }
	page, frag, _ := strings.Cut(p.URL, "#")
	q, _ := url.ParseQuery(frag)
	req, _ := http.NewRequest(http.MethodPost, page, strings.NewReader(url.Values{"b64Params": {q.Get("b64Params")}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	authURL, _ := url.Parse(resp.Header.Get("Location"))
	state := authURL.Query().Get("state")
	other := newBrowser(t, appCallback)
	if _, st := other.do(mustGet(e.URL + "/oidc/callback?code=x&state=" + state)); st != 403 {
		t.Errorf("callback without the login's cookie: %d, want 403", st)
	}
	// The state is single use.
	if _, st := b.do(mustGet(e.URL + "/oidc/callback?code=x&state=" + state)); st != 410 {
		t.Errorf("replayed state: %d, want 410", st)
	}
	if _, st := b.do(mustGet(e.URL + "/oidc/callback?code=x&state=forged")); st != 410 {
		t.Errorf("forged state: %d, want 410", st)
	}
}

func mustGet(u string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return req
}

// jwtLogin runs a custom JWT login with token and returns the callback.
func (e *env) jwtLogin(t *testing.T, sdk *auth.SDK, token string) string {
	t.Helper()
	p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.JWT, RedirectURL: appCallback, MfaLevel: auth.MFANone,
		ExtraLoginOptions: &auth.ExtraLoginOptions{IDToken: token}})
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := newBrowser(t, appCallback).open(p.URL)
	return cb
}

func hs256(t *testing.T, key []byte, claims map[string]any) string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT","kid":"k1"}`))
	b, _ := json.Marshal(claims)
	msg := h + "." + base64.RawURLEncoding.EncodeToString(b)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return msg + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestJWTLoginAttacks(t *testing.T) {
	e := newEnv(t)
	sdk := e.sdk(t, auth.InitParams{LoginConfig: map[string]auth.LoginConfig{"jwt": {Verifier: jwtVerifier, TypeOfLogin: auth.TypeJWT, ClientID: "my-app"}}})
	iss := e.Issuer.srv.URL
	now := time.Now()
	good := func() map[string]any {
		return map[string]any{"iss": iss, "aud": "my-app", "sub": "carol", "email": "carol@example.com", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	}
	with := func(k string, v any) map[string]any { c := good(); c[k] = v; return c }
	otherKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	signOther := func(c map[string]any) string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: otherKey, KeyID: "k1"}}, nil)
		b, _ := json.Marshal(c)
		jws, _ := s.Sign(b)
		out, _ := jws.CompactSerialize()
		return out
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&e.Issuer.key.PublicKey)
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + base64.RawURLEncoding.EncodeToString(mustJSON(good())) + "."
	cases := []struct {
		name  string
		token string
		want  string // "" means a session
	}{
		{"good", e.Issuer.sign(t, good(), "RS256"), ""},
		{"within leeway", e.Issuer.sign(t, with("exp", now.Add(-20*time.Second).Unix()), "RS256"), ""},
		{"wrong aud", e.Issuer.sign(t, with("aud", "other-app"), "RS256"), "token_refused"},
		{"wrong iss", e.Issuer.sign(t, with("iss", "https://evil.example"), "RS256"), "token_refused"},
		{"expired", e.Issuer.sign(t, with("exp", now.Add(-time.Hour).Unix()), "RS256"), "token_refused"},
		{"alg none", none, "token_refused"},
		{"wrong key", signOther(good()), "token_refused"},
		{"HS256 with the RSA public key", hs256(t, pubDER, good()), "token_refused"},
		{"not a JWT", "not.a.jwt", "token_refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cb := e.jwtLogin(t, sdk, c.token)
			if c.want == "" {
				st := complete(t, sdk, cb)
				if st.UserInfo.TypeOfLogin != "jwt" || st.UserInfo.VerifierID != "carol" {
					t.Errorf("userInfo = %+v", st.UserInfo)
				}
				return
			}
			if !strings.Contains(cb, "error="+c.want) {
				t.Fatalf("callback %q, want error %s", cb, c.want)
			}
		})
	}
	// A login may not ask for other token checks than the verifier's.
	leeway := 3600
	p, _ := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.JWT, RedirectURL: appCallback,
		ExtraLoginOptions: &auth.ExtraLoginOptions{IDToken: e.Issuer.sign(t, good(), "RS256"), VerifierIDField: "email", Leeway: &leeway}})
	if cb, _ := newBrowser(t, appCallback).open(p.URL); !strings.Contains(cb, "error=bad_request") {
		t.Errorf("verifierIdField override: %q", cb)
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
