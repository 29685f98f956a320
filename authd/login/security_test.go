package login

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth"
)

// The attack of issue 19 (1): a page starts a login with a victim app's
// client id and its own redirect URL, and reads the victim app's privKey
// from the session the redirect points at. Logins for unknown client ids
// and to unregistered redirect URLs are refused with a page; the browser
// is never sent to them.
func TestKeyPhishingThroughRedirectURL(t *testing.T) {
	e := newEnv(t)
	victim := e.sdk(t, auth.InitParams{}) // the registered test client
	cases := []struct {
		name     string
		sdk      *auth.SDK
		redirect string
		code     string
	}{
		{"victim's client id, attacker's redirect", victim, "https://evil.example/steal", CodeBadRedirect},
		{"victim's client id, registered host, other path", victim, "http://127.0.0.1:1/app/other", CodeBadRedirect},
		{"unregistered client id", e.sdk(t, auth.InitParams{ClientID: "bm90LXJlZ2lzdGVyZWQ"}), appCallback, CodeUnknownClient},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: c.redirect,
				ExtraLoginOptions: &auth.ExtraLoginOptions{LoginHint: "victim@example.com"}})
			if err != nil {
				t.Fatal(err)
			}
			b := newBrowser(t, c.redirect)
			cb, st := b.open(p.URL)
			if cb != "" {
				t.Fatalf("the pages sent the browser to %s", cb)
			}
			if strings.Contains(b.Page, `id="code"`) {
				t.Fatal("the login went on to the code step")
			}
			if st != 400 || !strings.Contains(b.Page, c.code) {
				t.Fatalf("%d, want 400 with %s:\n%s", st, c.code, b.Page)
			}
		})
	}
	// The registered redirect still works.
	cb, _ := e.passwordless(t, victim, "victim@example.com", auth.LoginParams{MfaLevel: auth.MFANone})
	if u, _ := url.Parse(cb); cb == "" || !strings.HasPrefix(cb, appCallback+"#sessionId=") || u == nil {
		t.Fatalf("registered redirect: %q", cb)
	}
}
