package login

import (
	"context"
	"fmt"
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
// address (and client IP) across codes and logins, and past the limit the
// address is locked (backoff): even the right code is refused until the
// lock ends.
func TestWrongCodeLimitCannotBeBypassed(t *testing.T) {
	e := newEnv(t)
	// Only the limits run on the test clock: the tokens the pages mint
	// are checked by the key nodes on the real one.
	e.Handler.lim = newLimiters(DefaultLimits(), e.Clock.Now, nil)
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
	e.Handler.lim = newLimiters(DefaultLimits(), e.Clock.Now, nil)
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

// codePageFrom is codePage from the client address ip.
func (e *env) codePageFrom(t *testing.T, sdk *auth.SDK, email, ip string) *browser {
	t.Helper()
	p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: appCallback, MfaLevel: auth.MFANone,
		ExtraLoginOptions: &auth.ExtraLoginOptions{LoginHint: email}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, appCallback)
	b.IP = ip
	if cb, _ := b.open(p.URL); cb != "" {
		t.Fatalf("callback before a code: %s", cb)
	}
	return b
}

// Issue 23: anyone who knew an email address could lock its email login
// for up to an hour with wrong codes from anywhere. Wrong codes now lock
// an address per client IP: a stranger locks only themselves out, and
// the owner logs in from their own address. A ceiling over all client
// IPs still holds: three IPs' worth of wrong codes lock the address for
// everyone, for a while.
func TestEmailLockPerClient(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ClientIPHeader = testIPHeader })
	e.Handler.lim = newLimiters(DefaultLimits(), e.Clock.Now, nil)
	sdk := e.sdk(t, auth.InitParams{})
	const owner, home = "owner@example.com", "198.51.100.10"
	// strangerLocks posts wrong codes for owner from ip until the login
	// ends; the address is then locked for ip.
	strangerLocks := func(ip string) {
		t.Helper()
		b := e.codePageFrom(t, sdk, owner, ip)
		for i := 1; i <= DefaultMaxAttempts; i++ {
			cb, _ := b.submit("code", url.Values{"code": {wrongCode(e.Log.lastCode(t, owner))}})
			if cb != "" {
				if !strings.Contains(cb, "#error=too_many_attempts") || i != DefaultMaxAttempts {
					t.Fatalf("wrong code %d from %s: %s", i, ip, cb)
				}
				break
			}
		}
		if b := e.codePageFrom(t, sdk, owner, ip); !strings.Contains(b.Page, `id="notice"`) {
			t.Fatalf("%s is not locked after %d wrong codes:\n%s", ip, DefaultMaxAttempts, b.Page)
		}
	}
	ownerLogsIn := func() bool {
		t.Helper()
		b := e.codePageFrom(t, sdk, owner, home)
		if strings.Contains(b.Page, `id="notice"`) {
			return false
		}
		cb, _ := b.submit("code", url.Values{"code": {e.Log.lastCode(t, owner)}})
		return strings.Contains(cb, "#sessionId=")
	}

	strangerLocks("203.0.113.66")
	if !ownerLogsIn() {
		t.Fatal("a stranger's wrong codes from elsewhere locked the owner out")
	}
	strangerLocks("203.0.113.67")
	if !ownerLogsIn() {
		t.Fatal("two strangers' wrong codes locked the owner out")
	}
	// A third address reaches the ceiling: everyone is locked, for the
	// backoff's first minute.
	strangerLocks("203.0.113.68")
	if ownerLogsIn() {
		t.Fatal("the ceiling over all client IPs does not hold")
	}
	e.Clock.Advance(DefaultBackoffBase)
	if !ownerLogsIn() {
		t.Fatal("the owner is still locked out after the ceiling's lock")
	}
}

// Codes sent to an address count per client IP too: a stranger who asks
// for codes to someone's address from elsewhere uses up only their own
// share, and a ceiling over all client IPs bounds the codes the address
// gets in an hour.
func TestCodesPerEmailPerClient(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ClientIPHeader = testIPHeader })
	e.Handler.lim = newLimiters(DefaultLimits(), e.Clock.Now, nil)
	sdk := e.sdk(t, auth.InitParams{})
	const owner = "inbox@example.com"
	count := func() int { return len(codeRE.FindAllStringSubmatch(e.Log.String(), -1)) }
	for range DefaultCodesPerEmail + 2 {
		e.codePageFrom(t, sdk, owner, "203.0.113.1")
	}
	if n := count(); n != DefaultCodesPerEmail {
		t.Fatalf("one client IP sent %d codes to one address, want %d", n, DefaultCodesPerEmail)
	}
	if b := e.codePageFrom(t, sdk, owner, "198.51.100.10"); strings.Contains(b.Page, `id="notice"`) || count() != DefaultCodesPerEmail+1 {
		t.Fatalf("the owner got no code after a stranger's %d:\n%s", DefaultCodesPerEmail, b.Page)
	}
	for i := 0; count() < DefaultCodesCeiling; i++ {
		e.codePageFrom(t, sdk, owner, fmt.Sprintf("203.0.113.%d", 10+i/DefaultCodesPerEmail))
	}
	if e.codePageFrom(t, sdk, owner, "198.51.100.10"); count() != DefaultCodesCeiling {
		t.Fatalf("%d codes to one address in an hour, want the ceiling of %d", count(), DefaultCodesCeiling)
	}
}
