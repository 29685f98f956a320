package login

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/porticohq/portico/auth/eccrypto"
)

// demoFront serves the front page with a demo login for clientID, as the
// auth server mounts it, on a server of its own (on 127.0.0.1, where the
// test clients' loopback redirects allow its /callback/demo).
func demoFront(t *testing.T, e *env, clientID string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	d := Demo{ClientID: clientID, RedirectURL: front.URL + DemoDonePath}
	demo := e.Handler.DemoHandler(d)
	mux.Handle("POST "+DemoPath, demo)
	mux.Handle("GET "+DemoDonePath, demo)
	mux.Handle("GET /{$}", e.Handler.IndexHandler(Index{SessionServer: "/", Health: "/healthz", Demo: &d}))
	return front
}

// TestDemoLogin: the front page's button starts a real email login for
// the demo's client; it goes through the pages (email, code) and returns
// to the demo's own page with a session id, whose session the session
// server holds.
func TestDemoLogin(t *testing.T) {
	e := newEnv(t)
	front := demoFront(t, e, testClientID)
	page := fetch(t, front.URL+"/?lang=de")
	if !strings.Contains(page, `<form id="demo" method="post" action="/demo?lang=de">`) || !strings.Contains(page, "Demo-Anmeldung starten") ||
		!strings.Contains(page, "<h2>Ausprobieren</h2>") {
		t.Fatalf("no demo login on the front page:\n%s", page)
	}

	// The button: a POST that answers with the start page's URL and the
	// login in its fragment, as an SDK's LoginURL gives.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(front.URL+DemoPath+"?lang=en", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, e.URL+"/start#b64Params=") {
		t.Fatalf("POST %s: %s, Location %q", DemoPath, resp.Status, loc)
	}

	done := front.URL + DemoDonePath
	b := newBrowser(t, done)
	if cb, st := b.open(loc); cb != "" || st != 200 || !strings.Contains(b.Page, `id="email"`) || !strings.Contains(b.Page, "Portico demo") {
		t.Fatalf("email page: %d %s", st, b.Page)
	}
	if cb, _ := b.submit("email", url.Values{"email": {"demo@example.com"}}); cb != "" || !strings.Contains(b.Page, `id="code"`) {
		t.Fatalf("code page: %s", b.Page)
	}
	cb, _ := b.submit("code", url.Values{"code": {e.Log.lastCode(t, "demo@example.com")}})
	u, err := url.Parse(cb)
	if err != nil || !strings.HasPrefix(cb, done+"#") {
		t.Fatalf("the login returned to %q, want %s#…", cb, done)
	}
	frag, _ := url.ParseQuery(u.Fragment)
	key, err := eccrypto.ParsePrivateKeyHex(frag.Get("sessionId"))
	if err != nil {
		t.Fatalf("session id in %q: %v", cb, err)
	}
	if _, err := e.Sessions.Get(t.Context(), key); err != nil {
		t.Fatalf("the session the demo login wrote: %v", err)
	}
	// The page the login returns to.
	if done := fetch(t, done); !strings.Contains(done, `id="done"`) || !strings.Contains(done, "Signed in") {
		t.Fatalf("demo page:\n%s", done)
	}
	// A payload starts one login: the start page's URL does not start a
	// second.
	b2 := newBrowser(t, done)
	if _, st := b2.open(loc); st == 200 && strings.Contains(b2.Page, `id="email"`) {
		t.Fatal("the demo's login started twice")
	}
}

// TestDemoUnavailable: no button, and no login started, when the demo's
// client is not registered, may not return to the demo's page, or email
// login is off.
func TestDemoUnavailable(t *testing.T) {
	cases := []struct {
		name   string
		client string
		mod    func(*Config)
	}{
		{"unregistered client", "no-such-client", nil},
		{"email login off", testClientID, func(c *Config) { c.Passwordless = nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mods []func(*Config)
			if c.mod != nil {
				mods = append(mods, c.mod)
			}
			e := newEnv(t, mods...)
			front := demoFront(t, e, c.client)
			if page := fetch(t, front.URL+"/"); strings.Contains(page, `id="demo"`) {
				t.Fatalf("the front page offers the demo:\n%s", page)
			}
			resp, err := http.PostForm(front.URL+DemoPath, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("POST %s: %s", DemoPath, resp.Status)
			}
		})
	}
	// A client whose redirects do not include the demo's page.
	e := newEnv(t)
	d := Demo{ClientID: testClientID, RedirectURL: "https://elsewhere.example" + DemoDonePath}
	if e.Handler.demoAvailable(t.Context(), &d) {
		t.Fatal("a demo whose client may not return to its page is offered")
	}
}

// fetch GETs u and returns its body; it fails the test unless it is 200.
func fetch(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", u, resp.Status, b)
	}
	return string(b)
}

// TestBrowserDemoLogin drives the front page's demo login in headless
// Chromium, as a newcomer would: the button, the email, the code from
// the log, and the demo's page saying the session came back. A start page
// opened without a login says so instead of spinning.
func TestBrowserDemoLogin(t *testing.T) {
	cctx := newChromium(t)
	dir := artifactsDir(t)
	e := newEnv(t)
	front := demoFront(t, e, testClientID)
	ctx, cancel := context.WithTimeout(cctx, 2*time.Minute)
	defer cancel()
	const email = "newcomer@example.com"
	var hash string
	if err := chromedp.Run(ctx, chromedp.Navigate(front.URL+"/"), chromedp.WaitVisible("#demo-login", chromedp.ByID),
		screenshot(ctx, dir, "demo-front.png"),
		chromedp.Click("#demo-login", chromedp.ByID), chromedp.WaitVisible("#email", chromedp.ByID),
		chromedp.Evaluate(`location.hash`, &hash)); err != nil {
		t.Fatalf("the demo button: %v", err)
	}
	if hash != "" {
		t.Errorf("the start page kept the login in its address: %q", hash)
	}
	if err := e.emailSteps(t, email)(ctx); err != nil {
		t.Fatal(err)
	}
	var done bool
	if err := chromedp.Run(ctx, chromedp.WaitVisible("#done", chromedp.ByID), screenshot(ctx, dir, "demo-done.png"),
		chromedp.Evaluate(`location.href === `+strconv.Quote(front.URL+DemoDonePath)+` && document.getElementById('failed').hidden`, &done)); err != nil {
		t.Fatalf("the demo's page: %v", err)
	}
	if !done {
		t.Error("the demo's page kept the session id in its address, or shows a failure")
	}

	// The start page alone: a notice, no spinner.
	var spinning bool
	if err := chromedp.Run(ctx, chromedp.Navigate(e.URL+"/start"), chromedp.WaitVisible("#nologin", chromedp.ByID),
		chromedp.Evaluate(`!document.getElementById('loading').hidden`, &spinning)); err != nil {
		t.Fatalf("a start page without a login: %v", err)
	}
	if spinning {
		t.Error("a start page without a login still shows its spinner")
	}
}
