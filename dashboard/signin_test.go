package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/dashboard"
)

func TestSignIn(t *testing.T) {
	e := newEnv(t, nil)
	good := url.Values{"token": {token}}

	page := e.send(t, req{method: "GET", path: "/dashboard/"})
	if body := readBody(page); page.StatusCode != 200 || !strings.Contains(body, `action="signin"`) || strings.Contains(body, "csrf") {
		t.Fatalf("signed out, GET /dashboard/: %d\n%s", page.StatusCode, body)
	}
	for h, want := range map[string]string{"Content-Security-Policy": "script-src 'self'", "X-Frame-Options": "DENY",
		"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"} {
		if got := page.Header.Get(h); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q in it", h, got, want)
		}
	}

	refused := []struct {
		name string
		q    req
		code int
		has  string
	}{
		{"wrong token", req{form: url.Values{"token": {"not-the-admin-token-at-all"}}, origin: self}, 401, "not the admin token"},
		{"no token", req{form: url.Values{}, origin: self}, 401, "not the admin token"},
		{"no Origin or Referer", req{form: good}, 403, "own page"},
		{"another site", req{form: good, origin: "https://evil.example"}, 403, "own page"},
		{"Origin null", req{form: good, origin: "null"}, 403, "own page"},
		{"cross-site fetch", req{form: good, origin: self, header: http.Header{"Sec-Fetch-Site": {"cross-site"}}}, 403, "own page"},
		{"referer of another site", req{form: good, header: http.Header{"Referer": {"https://evil.example/dashboard/"}}}, 403, "own page"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			c.q.method, c.q.path = "POST", "/dashboard/signin"
			resp := e.send(t, c.q)
			if body := readBody(resp); resp.StatusCode != c.code || !strings.Contains(body, c.has) {
				t.Errorf("%d %s; want %d and %q", resp.StatusCode, body, c.code, c.has)
			}
			if sessionCookie(resp) != nil {
				t.Error("refused sign-in set a cookie")
			}
		})
	}

	cases := []struct {
		name   string
		q      req
		secure bool
	}{
		{"plain HTTP, Origin", req{form: good, origin: self}, false},
		{"Referer only", req{form: good, header: http.Header{"Referer": {self + "/dashboard/"}}}, false},
		{"behind a TLS proxy", req{form: good, origin: "https://example.com", header: http.Header{"X-Forwarded-Proto": {"https"}}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.q.method, c.q.path = "POST", "/dashboard/signin"
			resp := e.send(t, c.q)
			ck := sessionCookie(resp)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/" || ck == nil {
				t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, readBody(resp))
			}
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/dashboard/" || ck.MaxAge != 12*3600 || ck.Secure != c.secure {
				t.Errorf("cookie %+v", ck)
			}
			if len(ck.Value) < 26 || strings.Contains(ck.Value, token) {
				t.Errorf("cookie value %q", ck.Value)
			}
			page := readBody(e.send(t, req{method: "GET", path: "/dashboard/", cookie: ck.Value}))
			if !strings.Contains(page, `id="config"`) || !strings.Contains(page, `"http":"http://127.0.0.1:8702"`) || strings.Contains(page, token) {
				t.Errorf("dashboard page:\n%s", page)
			}
		})
	}
}

func TestSignOut(t *testing.T) {
	e := newEnv(t, nil)
	cookie, csrf := e.signIn(t)
	for _, q := range []req{
		{form: url.Values{}, origin: self},
		{form: url.Values{"csrf": {"wrong"}}, origin: self},
		{form: url.Values{"csrf": {csrf}}, origin: "https://evil.example"},
	} {
		q.method, q.path, q.cookie = "POST", "/dashboard/signout", cookie
		if resp := e.send(t, q); resp.StatusCode != 403 {
			t.Errorf("sign-out %v from %q: %d, want 403", q.form, q.origin, resp.StatusCode)
		}
	}
	if resp := e.send(t, req{method: "GET", path: "/dashboard/api/v1/keys", cookie: cookie}); resp.StatusCode != 200 {
		t.Fatalf("refused sign-outs ended the session: %d", resp.StatusCode)
	}
	resp := e.send(t, req{method: "POST", path: "/dashboard/signout", cookie: cookie, form: url.Values{"csrf": {csrf}}, origin: self})
	ck := sessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || ck == nil || ck.MaxAge >= 0 || ck.Value != "" {
		t.Fatalf("sign-out: %d, cookie %+v", resp.StatusCode, ck)
	}
	if resp := e.send(t, req{method: "GET", path: "/dashboard/api/v1/keys", cookie: cookie}); resp.StatusCode != 401 {
		t.Errorf("the cookie still works after sign-out: %d", resp.StatusCode)
	}
	if !strings.Contains(e.logs.String(), "dashboard: signed out") {
		t.Errorf("sign-out not logged:\n%s", e.logs)
	}
}

func TestSessionExpiry(t *testing.T) {
	e := newEnv(t, nil)
	cookie, _ := e.signIn(t)
	steps := []struct {
		after  time.Duration
		signed bool
	}{
		{11 * time.Hour, true},
		{time.Hour - time.Second, true},
		{time.Second, false}, // 12 hours after signing in
	}
	for _, s := range steps {
		e.clock.Add(s.after)
		page := readBody(e.send(t, req{method: "GET", path: "/dashboard/", cookie: cookie}))
		api := e.send(t, req{method: "GET", path: "/dashboard/api/v1/keys", cookie: cookie})
		if got := strings.Contains(page, `id="config"`); got != s.signed || (api.StatusCode == 200) != s.signed {
			t.Errorf("at %v: dashboard shown %v, API %d; want signed in %v", e.clock.Now(), got, api.StatusCode, s.signed)
		}
	}
}

// Signing in when MaxSessions are held ends the oldest session.
func TestMaxSessions(t *testing.T) {
	e := newEnv(t, func(c *dashboard.Config) { c.MaxSessions = 2 })
	var cookies []string
	for range 3 {
		c, _ := e.signIn(t)
		cookies = append(cookies, c)
		e.clock.Add(time.Minute)
	}
	for i, c := range cookies {
		resp := e.send(t, req{method: "GET", path: "/dashboard/api/v1/keys", cookie: c})
		if want := map[bool]int{true: 401, false: 200}[i == 0]; resp.StatusCode != want {
			t.Errorf("session %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
}

func TestSignInRateLimit(t *testing.T) {
	e := newEnv(t, func(c *dashboard.Config) { c.SignInLimit = dashboard.Limit{Burst: 3, Every: 10 * time.Second} })
	bad, good := url.Values{"token": {"wrong-token-wrong-token"}}, url.Values{"token": {token}}
	steps := []struct {
		name   string
		wait   time.Duration
		form   url.Values
		client string
		code   int
		retry  string // Retry-After of a 429
	}{
		{"good", 0, good, "", 303, ""}, // a good sign-in gives its attempt back
		{"bad 1", 0, bad, "", 401, ""},
		{"bad 2", 0, bad, "", 401, ""},
		{"bad 3", 0, bad, "", 401, ""},
		{"limited, bad", 0, bad, "", 429, "10"},
		{"limited, good", 0, good, "", 429, "10"},
		{"another address", 0, good, "198.51.100.7:5000", 303, ""},
		{"an IPv6 client", 0, bad, "[2001:db8::1]:5000", 401, ""},
		{"after 9s", 9 * time.Second, good, "", 429, "1"},
		{"after 10s: one more", time.Second, bad, "", 401, ""},
		{"and limited again", 0, good, "", 429, "10"},
		{"after 10s more", 10 * time.Second, good, "", 303, ""},
	}
	for _, s := range steps {
		e.clock.Add(s.wait)
		resp := e.send(t, req{method: "POST", path: "/dashboard/signin", form: s.form, origin: self, client: s.client})
		body := readBody(resp)
		if resp.StatusCode != s.code {
			t.Fatalf("%s: %d, want %d\n%s", s.name, resp.StatusCode, s.code, body)
		}
		if s.code == 429 && (resp.Header.Get("Retry-After") != s.retry || !strings.Contains(body, "Too many failed sign-ins")) {
			t.Errorf("%s: Retry-After %q, body %s", s.name, resp.Header.Get("Retry-After"), body)
		}
	}
}

// Without a session a client gets PageLimit requests; a signed-in one is
// not counted.
func TestPageLimit(t *testing.T) {
	e := newEnv(t, func(c *dashboard.Config) { c.PageLimit = dashboard.Limit{Burst: 4, Every: time.Second} })
	cookie, _ := e.signIn(t) // one request
	for i, want := range []int{200, 200, 200, 429} {
		if resp := e.send(t, req{method: "GET", path: "/dashboard/static/app.css"}); resp.StatusCode != want {
			t.Fatalf("request %d without a session: %d, want %d", i, resp.StatusCode, want)
		}
	}
	for range 10 {
		if resp := e.send(t, req{method: "GET", path: "/dashboard/static/app.css", cookie: cookie}); resp.StatusCode != 200 {
			t.Fatalf("signed in: %d", resp.StatusCode)
		}
	}
	e.clock.Add(time.Second)
	if resp := e.send(t, req{method: "GET", path: "/dashboard/"}); resp.StatusCode != 200 {
		t.Errorf("a second later: %d", resp.StatusCode)
	}
}

func TestRoutes(t *testing.T) {
	e := newEnv(t, nil)
	cookie, _ := e.signIn(t)
	cases := []struct {
		method, path string
		code         int
		header, want string
	}{
		{"GET", "/dashboard", 301, "Location", "/dashboard/"},
		{"GET", "/dashboard/nothing", 404, "", ""},
		{"GET", "/dashboard/signin", 405, "Allow", "POST"},
		{"DELETE", "/dashboard/", 405, "Allow", "GET, HEAD"},
		{"POST", "/dashboard/static/app.js", 405, "Allow", "GET, HEAD"},
		{"GET", "/dashboard/static/app.js", 200, "Content-Type", "text/javascript; charset=utf-8"},
		{"GET", "/dashboard/static/app.css", 200, "Content-Type", "text/css; charset=utf-8"},
		{"GET", "/dashboard/static/icon.svg", 200, "Content-Type", "image/svg+xml"},
		{"GET", "/dashboard/static/nothing.js", 404, "", ""},
		{"GET", "/elsewhere", 404, "", ""},
	}
	for _, c := range cases {
		resp := e.send(t, req{method: c.method, path: c.path, cookie: cookie})
		if resp.StatusCode != c.code || (c.header != "" && resp.Header.Get(c.header) != c.want) {
			t.Errorf("%s %s: %d %s=%q; want %d %q", c.method, c.path, resp.StatusCode, c.header, resp.Header.Get(c.header), c.code, c.want)
		}
	}
	first := e.send(t, req{method: "GET", path: "/dashboard/static/app.js"})
	again := e.send(t, req{method: "GET", path: "/dashboard/static/app.js", header: http.Header{"If-None-Match": {first.Header.Get("ETag")}}})
	if first.Header.Get("ETag") == "" || again.StatusCode != http.StatusNotModified {
		t.Errorf("ETag %q, revalidation %d", first.Header.Get("ETag"), again.StatusCode)
	}
}
