package login

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// postStart posts a login's b64Params to /start from client ip, straight
// to the handler, and returns the status.
func (e *env) postStart(t *testing.T, loginURL, ip string) int {
	t.Helper()
	page, frag, _ := strings.Cut(loginURL, "#")
	q, _ := url.ParseQuery(frag)
	u, _ := url.Parse(page)
	r := httptest.NewRequest(http.MethodPost, u.Path, strings.NewReader(url.Values{"b64Params": {q.Get("b64Params")}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.RemoteAddr = ip + ":50000"
	w := httptest.NewRecorder()
	e.Handler.ServeHTTP(w, r)
	return w.Code
}

func (e *env) loginURL(t *testing.T, sdk *auth.SDK) string {
	t.Helper()
	p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: appCallback})
	if err != nil {
		t.Fatal(err)
	}
	return p.URL
}

// The attack of issue 19 (2): one stored login payload posted to /start
// without limit filled the table of logins, and a real user got 503. A
// payload now starts one login, a client IP holds a bounded number, and
// a full table drops the logins of whoever holds the most.
func TestLoginTableCannotBeFilled(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxFlows = 30 })
	sdk := e.sdk(t, auth.InitParams{})

	t.Run("one payload, one login", func(t *testing.T) {
		u := e.loginURL(t, sdk)
		if st := e.postStart(t, u, "192.0.2.1"); st != http.StatusSeeOther {
			t.Fatalf("first post: %d", st)
		}
		for range 3 {
			if st := e.postStart(t, u, "192.0.2.1"); st != http.StatusNotFound {
				t.Fatalf("the same payload started another login: %d", st)
			}
		}
	})
	t.Run("logins in progress per client IP", func(t *testing.T) {
		held := 0
		for range DefaultFlowsPerClient + 5 {
			if e.postStart(t, e.loginURL(t, sdk), "192.0.2.2") != http.StatusSeeOther {
				break
			}
			held++
		}
		if held != DefaultFlowsPerClient {
			t.Fatalf("one client IP holds %d logins, want at most %d", held, DefaultFlowsPerClient)
		}
	})
	t.Run("a full table still lets other users in", func(t *testing.T) {
		for i := 0; e.Handler.InFlight() < 30; i++ {
			e.postStart(t, e.loginURL(t, sdk), fmt.Sprintf("198.51.100.%d", 10+i/DefaultFlowsPerClient))
		}
		if st := e.postStart(t, e.loginURL(t, sdk), "203.0.113.5"); st != http.StatusSeeOther {
			t.Fatalf("a new user with the table full: %d", st)
		}
	})
}
