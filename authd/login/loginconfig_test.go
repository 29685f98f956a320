package login

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/authd/idtoken"
)

// With several JWT and OIDC verifiers configured, the one the app's
// loginConfig names is used (the state says which), and an unknown one is
// refused: a server that ignored loginConfig and took the only (or the
// first) verifier would fail here.
func TestLoginConfigChoosesVerifier(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Verifiers = append(c.Verifiers, idtoken.Config{Verifier: "test-jwt-2", TypeOfLogin: "jwt", JWKS: c.Verifiers[0].JWKS,
			Issuer: c.Verifiers[0].Issuer, Audience: []string{"app-2"}})
		c.OIDC = append(c.OIDC, OIDCProvider{Name: "google", Verifier: "test-google-2", DiscoveryURL: c.OIDC[0].DiscoveryURL,
			ClientID: c.OIDC[0].ClientID, ClientSecret: c.OIDC[0].ClientSecret})
	})
	token := func(aud string) string {
		return e.Issuer.sign(t, map[string]any{"iss": e.Issuer.srv.URL, "aud": aud, "sub": "carol", "exp": time.Now().Add(time.Hour).Unix(),
			"jti": randomHex(8)}, "RS256")
	}
	lc := func(key, verifier string, typ auth.TypeOfLogin) map[string]auth.LoginConfig {
		return map[string]auth.LoginConfig{key: {Verifier: verifier, TypeOfLogin: typ, ClientID: "c"}}
	}
	oidc := func(sdk *auth.SDK) (string, *browser) {
		p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.Google, RedirectURL: appCallback, MfaLevel: auth.MFANone})
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, appCallback)
		cb, _ := b.open(p.URL)
		return cb, b
	}

	keys := map[string]string{}
	cases := []struct {
		name, verifier string
		login          func(*auth.SDK) (string, *browser)
		lc             map[string]auth.LoginConfig
	}{
		{"jwt, first verifier", jwtVerifier, nil, lc("jwt", jwtVerifier, auth.TypeJWT)},
		{"jwt, second verifier", "test-jwt-2", nil, lc("jwt", "test-jwt-2", auth.TypeJWT)},
		{"oidc, default", "test-google", oidc, nil},
		{"oidc, second verifier", "test-google-2", oidc, lc("google", "test-google-2", auth.TypeGoogle)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sdk := e.sdk(t, auth.InitParams{LoginConfig: c.lc})
			var cb string
			if c.login != nil {
				cb, _ = c.login(sdk)
			} else {
				aud := "my-app"
				if c.verifier == "test-jwt-2" {
					aud = "app-2"
				}
				cb = e.jwtLogin(t, sdk, token(aud))
			}
			st := complete(t, sdk, cb)
			if st.UserInfo.Verifier != c.verifier {
				t.Fatalf("verifier %q, want %q", st.UserInfo.Verifier, c.verifier)
			}
			keys[c.verifier] = st.CoreKitKey
		})
	}
	if len(keys) == 4 && (keys[jwtVerifier] == keys["test-jwt-2"] || keys["test-google"] == keys["test-google-2"]) {
		t.Error("two verifiers gave the same user the same key")
	}

	refused := []struct {
		name  string
		lc    map[string]auth.LoginConfig
		login func(*auth.SDK) (string, *browser)
	}{
		{"jwt, unknown verifier", lc("jwt", "nope", auth.TypeJWT), nil},
		{"jwt, several verifiers and no loginConfig", nil, nil},
		{"jwt, an OIDC verifier named", lc("jwt", "test-google", auth.TypeJWT), nil},
		{"oidc, unknown verifier", lc("google", "nope", auth.TypeGoogle), oidc},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			sdk := e.sdk(t, auth.InitParams{LoginConfig: c.lc})
			var cb string
			if c.login != nil {
				cb, _ = c.login(sdk)
			} else {
				cb = e.jwtLogin(t, sdk, token("my-app"))
			}
			if !strings.Contains(cb, "#error=provider_unavailable") {
				t.Fatalf("callback %q, want provider_unavailable", cb)
			}
		})
	}
}
