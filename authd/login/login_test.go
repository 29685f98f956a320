package login

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/authd/keynet"
)

const appCallback = "http://127.0.0.1:1/app/callback"

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// passwordless runs an email login through the pages and returns the
// callback URL.
func (e *env) passwordless(t *testing.T, sdk *auth.SDK, email string, params auth.LoginParams) (string, *browser) {
	t.Helper()
	params.LoginProvider = auth.EmailPasswordless
	params.RedirectURL = appCallback
	p, err := sdk.LoginURL(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, appCallback)
	if cb, st := b.open(p.URL); cb != "" || st != 200 || !strings.Contains(b.Page, `id="email"`) {
		t.Fatalf("email page: %d %s", st, b.Page)
	}
	if cb, _ := b.submit("email", url.Values{"email": {email}}); cb != "" || !strings.Contains(b.Page, `id="code"`) {
		t.Fatalf("code page: %s", b.Page)
	}
	cb, _ := b.submit("code", url.Values{"code": {e.Log.lastCode(t, strings.ToLower(email))}})
	return cb, b
}

func complete(t *testing.T, sdk *auth.SDK, cb string) *auth.State {
	t.Helper()
	if cb == "" {
		t.Fatal("the pages did not send the browser back to the app")
	}
	st, err := sdk.CompleteLogin(context.Background(), cb)
	if err != nil {
		t.Fatalf("complete %s: %v", cb, err)
	}
	for name, k := range map[string]string{"privKey": st.PrivKey, "coreKitKey": st.CoreKitKey} {
		if !hex64.MatchString(k) {
			t.Errorf("%s = %q, want 64 hex", name, k)
		}
	}
	if len(st.Ed25519PrivKey) != 128 || len(st.CoreKitEd25519PrivKey) != 128 {
		t.Errorf("ed25519 keys: %d %d hex chars", len(st.Ed25519PrivKey), len(st.CoreKitEd25519PrivKey))
	}
	return st
}

func TestPasswordlessLogin(t *testing.T) {
	e := newEnv(t)
	sdk := e.sdk(t, auth.InitParams{})
	none := auth.LoginParams{MfaLevel: auth.MFANone}
	cb, _ := e.passwordless(t, sdk, "Bob@Example.com", none)
	st := complete(t, sdk, cb)
	u := st.UserInfo
	if u.TypeOfLogin != "passwordless" || u.Verifier != PasswordlessVerifier || u.VerifierID != "bob@example.com" || u.Email != "bob@example.com" || u.IsMfaEnabled == nil || *u.IsMfaEnabled {
		t.Errorf("userInfo = %+v", u)
	}
	if !strings.Contains(e.Log.String(), "level=WARN") || !strings.Contains(e.Log.String(), "devOnly=true") {
		t.Errorf("the code is not logged at WARN with the dev-only marker:\n%s", e.Log)
	}
	if st.PrivKey == st.CoreKitKey {
		t.Error("privKey is the coreKitKey: no subkey")
	}
	// The v7 state fields the key network can give: the nodes used and
	// their signed commitments; no TSS fields.
	if len(st.NodeIndexes) != 3 || len(st.Signatures) != 3 || st.KeyMode != auth.KeyMode1of1 || st.TSSShare != "" || st.TSSShareIndex != nil || st.FactorKey != "" {
		t.Errorf("nodeIndexes %v, %d signatures, keyMode %q, tss %q", st.NodeIndexes, len(st.Signatures), st.KeyMode, st.TSSShare)
	}
	for i, sig := range st.Signatures {
		var a keynet.CommitmentAnswer
		if err := json.Unmarshal([]byte(sig), &a); err != nil || a.NodeIndex != st.NodeIndexes[i] {
			t.Errorf("signature %d: %s %v", i, sig, err)
		}
	}

	// Same user again (the case of the address does not matter): same keys.
	cb, _ = e.passwordless(t, sdk, "bob@example.com", none)
	if st2 := complete(t, sdk, cb); st2.CoreKitKey != st.CoreKitKey || st2.PrivKey != st.PrivKey {
		t.Error("a second login gave another key")
	}
	// Another client id: same coreKitKey, another privKey.
	other := e.sdk(t, auth.InitParams{ClientID: "b3RoZXItY2xpZW50"})
	cb, _ = e.passwordless(t, other, "bob@example.com", none)
	if st3 := complete(t, other, cb); st3.CoreKitKey != st.CoreKitKey || st3.PrivKey == st.PrivKey {
		t.Error("another client id: want the same coreKitKey and another privKey")
	}
	// Another network: another key.
	mainnet := e.sdk(t, auth.InitParams{Network: auth.SapphireMainnet})
	cb, _ = e.passwordless(t, mainnet, "bob@example.com", none)
	if st4 := complete(t, mainnet, cb); st4.CoreKitKey == st.CoreKitKey {
		t.Error("another network gave the same key")
	}
	if n := e.Handler.InFlight(); n != 0 {
		t.Errorf("%d logins still held after they ended", n)
	}
}

func TestPasswordlessWrongCodes(t *testing.T) {
	e := newEnv(t)
	sdk := e.sdk(t, auth.InitParams{})
	p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: appCallback,
		ExtraLoginOptions: &auth.ExtraLoginOptions{LoginHint: "eve@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, appCallback)
	// login_hint skips the email page.
	if cb, _ := b.open(p.URL); cb != "" || !strings.Contains(b.Page, `id="code"`) || !strings.Contains(b.Page, "eve@example.com") {
		t.Fatalf("code page: %s", b.Page)
	}
	right := e.Log.lastCode(t, "eve@example.com")
	wrong := "000000"
	if wrong == right {
		wrong = "111111"
	}
	for i := 1; i < DefaultMaxAttempts; i++ {
		if cb, _ := b.submit("code", url.Values{"code": {wrong}}); cb != "" || !strings.Contains(b.Page, `id="notice"`) {
			t.Fatalf("attempt %d: %s %s", i, cb, b.Page)
		}
	}
	cb, _ := b.submit("code", url.Values{"code": {wrong}})
	if !strings.Contains(cb, "error=too_many_attempts") {
		t.Fatalf("after %d wrong codes: callback %q", DefaultMaxAttempts, cb)
	}
	if _, err := sdk.CompleteLogin(context.Background(), cb); err == nil {
		t.Fatal("the SDK accepted an error callback")
	}
}

func TestExpiredCode(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Now = nil })
	sdk := e.sdk(t, auth.InitParams{})
	e.Handler.cfg.Now = e.Clock.Now
	p, _ := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: appCallback})
	b := newBrowser(t, appCallback)
	b.open(p.URL)
	b.submit("email", url.Values{"email": {"late@example.com"}})
	e.Clock.Advance(DefaultCodeTTL + 1)
	if cb, _ := b.submit("code", url.Values{"code": {e.Log.lastCode(t, "late@example.com")}}); cb != "" || !strings.Contains(b.Page, e.Handler.catalogs[auth.English]["code_expired"]) {
		t.Fatalf("expired code: %s %s", cb, b.Page)
	}
}
