package login

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/authd/tkey"
)

// testKDF is a cheap Argon2id for tests that are not about its cost.
var testKDF = tkey.KDF{Time: 1, Memory: 64, Threads: 1}

// mfaPasswordUser sets up MFA with a password for email and returns a
// browser on the recovery page of a login without the device share.
func mfaPasswordUser(t *testing.T, e *env, email, password string) (*auth.SDK, func() *browser) {
	t.Helper()
	yes, no := true, false
	settings := &auth.MfaSettings{PasswordFactor: &auth.MfaSetting{Enable: true, Mandatory: &yes},
		DeviceShareFactor: &auth.MfaSetting{Enable: true}, BackUpShareFactor: &auth.MfaSetting{Enable: false, Mandatory: &no},
		SocialBackupFactor: &auth.MfaSetting{Enable: false}}
	sdk := e.sdk(t, auth.InitParams{MfaSettings: settings})
	cb, b := e.startEmail(t, sdk, email, auth.LoginParams{MfaLevel: auth.MFAMandatory})
	if cb != "" {
		t.Fatal("no MFA setup")
	}
	cb, _ = b.submit("mfa/setup", url.Values{"password": {password}, "password2": {password}})
	complete(t, sdk, cb)
	return sdk, func() *browser {
		cb, b := e.startEmail(t, e.sdk(t, auth.InitParams{MfaSettings: settings}), email, auth.LoginParams{})
		if cb != "" || !strings.Contains(b.Page, `id="recover-password"`) {
			t.Fatalf("recovery page: %q", cb)
		}
		return b
	}
}

// The attack of issue 19 (4): unlimited MFA password guesses, each costing
// the server an Argon2id run. Guesses are now limited per user with
// backoff (the right password is refused while locked) and the Argon2id
// runs at once are bounded.
func TestMFAPasswordGuessesLimited(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PasswordKDF = testKDF })
	e.Handler.lim = newLimiters(DefaultLimits(), e.Clock.Now, nil)
	const pw = "correct horse battery"
	_, recovery := mfaPasswordUser(t, e, "guess-target@example.com", pw)
	b := recovery()
	for i := 1; i <= DefaultPasswordFailures+2; i++ {
		if cb, _ := b.submit("mfa/recover", url.Values{"factor": {tkey.KindPassword}, "password": {"guess " + string(rune('a'+i))}}); cb != "" {
			t.Fatalf("guess %d went through", i)
		}
	}
	if !strings.Contains(b.Page, e.Handler.catalogs[auth.English]["password_locked"]) {
		t.Fatalf("no lock after %d wrong passwords", DefaultPasswordFailures+2)
	}
	// Another login of the same user is locked too, even with the right
	// password.
	b = recovery()
	if cb, _ := b.submit("mfa/recover", url.Values{"factor": {tkey.KindPassword}, "password": {pw}}); cb != "" {
		t.Fatal("the right password went through while the user is locked")
	}
	e.Clock.Advance(DefaultBackoffMax)
	if cb, _ := b.submit("mfa/recover", url.Values{"factor": {tkey.KindPassword}, "password": {pw}}); !strings.Contains(cb, "#sessionId=") {
		t.Fatalf("after the lock: %q\n%s", cb, b.Page)
	}

	// With every Argon2id slot taken, a guess waits; one whose request
	// ends first runs no Argon2id and is asked to retry.
	b = recovery()
	for range DefaultKDFConcurrency {
		e.Handler.lim.kdf <- struct{}{}
	}
	m, a := csrfRE.FindStringSubmatch(b.Page), actionRE.FindStringSubmatch(b.Page)
	form := url.Values{"csrf": {m[1]}, "factor": {tkey.KindPassword}, "password": {pw}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodPost, a[1]+"/mfa/recover", strings.NewReader(form.Encode())).WithContext(ctx)
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(b.URL)
	for _, c := range b.hc.Jar.Cookies(u) {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	e.Handler.ServeHTTP(w, r)
	if !strings.Contains(w.Body.String(), e.Handler.catalogs[auth.English]["busy"]) {
		t.Fatalf("with no Argon2id slot free: %d %s", w.Code, w.Body)
	}
	for range DefaultKDFConcurrency {
		<-e.Handler.lim.kdf
	}
}
