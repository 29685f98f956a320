package login

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/auth"
)

// codePage starts an email login with login_hint (straight to the code
// page, if a code may be sent).
func (e *env) codePage(t *testing.T, sdk *auth.SDK, email string) *browser {
	t.Helper()
	p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: appCallback, MfaLevel: auth.MFANone,
		ExtraLoginOptions: &auth.ExtraLoginOptions{LoginHint: email}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, appCallback)
	if cb, _ := b.open(p.URL); cb != "" {
		t.Fatalf("callback before a code: %s", cb)
	}
	return b
}

func wrongCode(right string) string {
	if right == "000000" {
		return "111111"
	}
	return "000000"
}

// The attack of issue 19 (3): posting the email again on the code step
// made a new code and reset the attempt count, and nothing counted per
// email, so 12 wrong codes left the login open. Wrong codes now count per
// address across codes and logins, and past the limit the address is
// locked (backoff): even the right code is refused until the lock ends.
func TestWrongCodeLimitCannotBeBypassed(t *testing.T) {
	e := newEnv(t)
	// Only the limits run on the test clock: the tokens the pages mint
	// are checked by the key nodes on the real one.
	e.Handler.lim = newLimiters(DefaultLimits(), e.Clock.Now)
	sdk := e.sdk(t, auth.InitParams{})
	const victim = "mallory-target@example.com"

	t.Run("email posted again on the code step", func(t *testing.T) {
		b := e.codePage(t, sdk, victim)
		for i := 1; i <= 12; i++ {
			if i%4 == 0 { // ask for a new code: the count must not reset
				b.submit("email", url.Values{"email": {victim}})
			}
			cb, _ := b.submit("code", url.Values{"code": {wrongCode(e.Log.lastCode(t, victim))}})
			if cb != "" {
				if !strings.Contains(cb, "#error=too_many_attempts") {
					t.Fatalf("wrong code %d: %s", i, cb)
				}
				return // the login ended
			}
		}
		t.Fatal("12 wrong codes and the login is still open")
	})
	t.Run("across logins", func(t *testing.T) {
		// The address is locked now: a new login cannot even get a code,
		// and a code sent before the lock is not accepted.
		b := e.codePage(t, sdk, victim)
		if !strings.Contains(b.Page, `id="notice"`) {
			t.Fatalf("a locked address got a new code:\n%s", b.Page)
		}
		e.Clock.Advance(DefaultBackoffBase)
		b = e.codePage(t, sdk, victim)
		cb, _ := b.submit("code", url.Values{"code": {wrongCode(e.Log.lastCode(t, victim))}})
		if cb != "" || !strings.Contains(b.Page, `id="notice"`) {
			t.Fatalf("after the lock: %q", cb)
		}
		// The next wrong code locks for twice as long; the right one is
		// refused while locked.
		right := e.Log.lastCode(t, victim)
		if cb, _ := b.submit("code", url.Values{"code": {right}}); cb != "" {
			t.Fatalf("the right code went through a locked address: %s", cb)
		}
		e.Clock.Advance(2 * DefaultBackoffBase)
		if cb, _ := b.submit("code", url.Values{"code": {right}}); !strings.Contains(cb, "#sessionId=") {
			t.Fatalf("the right code after the lock: %q\n%s", cb, b.Page)
		}
	})
}

// Codes sent to one address are limited per hour.
func TestCodesPerEmailPerHour(t *testing.T) {
	e := newEnv(t)
	e.Handler.lim = newLimiters(DefaultLimits(), e.Clock.Now)
	sdk := e.sdk(t, auth.InitParams{})
	const addr = "flooded@example.com"
	count := func() int { return len(codeRE.FindAllStringSubmatch(e.Log.String(), -1)) }
	for range DefaultCodesPerEmail + 3 {
		e.codePage(t, sdk, addr)
	}
	if n := count(); n != DefaultCodesPerEmail {
		t.Fatalf("%d codes sent to one address in an hour, want %d", n, DefaultCodesPerEmail)
	}
	e.Clock.Advance(time.Hour)
	e.codePage(t, sdk, addr)
	if n := count(); n != DefaultCodesPerEmail+1 {
		t.Fatalf("no code an hour later (%d)", n)
	}
}
