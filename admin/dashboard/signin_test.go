package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/admin/dashboard"
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

// Wrong tokens are slowed per client address, through the sign-in form
// and the admin API together; the right token is held like them and let
// in, never refused (the issue 23 attack: 5 failed sign-ins locked the
// real admin on that address out too).
func TestSignInWrongTokensSlowed(t *testing.T) {
	e := newEnv(t, nil)
	bad, good := url.Values{"token": {"wrong-token-wrong-token"}}, url.Values{"token": {token}}
	api := func(tok, client string) int {
		r := httptest.NewRequest("GET", "/admin/v1/keys", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		r.RemoteAddr = client
		w := httptest.NewRecorder()
		e.api.ServeHTTP(w, r)
		return w.Code
	}
	const here, there = "192.0.2.1:40000", "198.51.100.7:5000"
	sec := time.Second
	steps := []struct {
		name   string
		signIn bool // else the admin API
		tok    string
		client string
		code   int
		held   time.Duration
	}{
		{"API, wrong 1", false, "wrong-token-wrong-token", here, 401, 0},
		{"API, wrong 2", false, "wrong-token-wrong-token", here, 401, 0},
		{"form, wrong 3", true, "", here, 401, 0},
		{"form, wrong 4", true, "", here, 401, 0},
		{"API, wrong 5", false, "wrong-token-wrong-token", here, 401, 0},
		{"form, wrong 6: held", true, "", here, 401, sec},
		{"API, wrong 7: held longer", false, "wrong-token-wrong-token", here, 401, 2 * sec},
		{"form, right token: held, let in", true, token, here, 303, 4 * sec},
		{"API, right token: held, let in", false, token, here, 200, 0},
		{"form, wrong 8", true, "", here, 401, 0},
		{"form, right token from elsewhere: at once", true, token, there, 303, 0},
		{"an IPv6 client", true, "", "[2001:db8::1]:5000", 401, 0},
	}
	for _, s := range steps {
		before := e.clock.Now()
		var code int
		if s.signIn {
			form := bad
			if s.tok == token {
				form = good
			}
			resp := e.send(t, req{method: "POST", path: "/dashboard/signin", form: form, origin: self, client: s.client})
			code = resp.StatusCode
			readBody(resp)
		} else {
			code = api(s.tok, s.client)
		}
		if held := e.clock.Now().Sub(before); code != s.code || held != s.held {
			t.Errorf("%s: %d after %v, want %d after %v", s.name, code, held, s.code, s.held)
		}
	}
	// Many more wrong tokens from the address: the right one is still let
	// in, held at most 30 seconds.
	for range 50 {
		e.send(t, req{method: "POST", path: "/dashboard/signin", form: bad, origin: self, client: here})
	}
	before := e.clock.Now()
	if resp := e.send(t, req{method: "POST", path: "/dashboard/signin", form: good, origin: self, client: here}); resp.StatusCode != 303 {
		t.Errorf("right token after 58 wrong ones: %d", resp.StatusCode)
	}
	if held := e.clock.Now().Sub(before); held != 30*sec {
		t.Errorf("right token after 58 wrong ones held %v, want 30s", held)
	}
}

// Sign-ins do not spend the page budget: whoever floods the form's
// address with page requests cannot keep the admin from signing in.
func TestSignInNotPageLimited(t *testing.T) {
	e := newEnv(t, func(c *dashboard.Config) { c.PageLimit = dashboard.Limit{Burst: 2, Every: time.Hour} })
	for range 3 {
		e.send(t, req{method: "GET", path: "/dashboard/"})
	}
	if resp := e.send(t, req{method: "GET", path: "/dashboard/"}); resp.StatusCode != 429 {
		t.Fatalf("page limit not reached: %d", resp.StatusCode)
	}
	e.signIn(t)
}

// Without a session a client gets PageLimit requests; a signed-in one is
// not counted.
func TestPageLimit(t *testing.T) {
	e := newEnv(t, func(c *dashboard.Config) { c.PageLimit = dashboard.Limit{Burst: 4, Every: time.Second} })
	cookie, _ := e.signIn(t) // not counted: sign-ins have their own bound
	for i, want := range []int{200, 200, 200, 200, 429} {
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
