package dashboard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/porticohq/portico/admin/dashboard"
)

// Changes through the API need the session, the page's origin and the
// session's CSRF token; reads need the session.
func TestAPICSRF(t *testing.T) {
	e := newEnv(t, nil)
	cookie, csrf := e.signIn(t)
	other, _ := e.signIn(t)
	_, otherCSRF := e.signIn(t)
	create := `{"name":"alice","daily_credits":500}`
	cases := []struct {
		name string
		q    req
		code int
	}{
		{"no session", req{method: "GET", path: "/dashboard/api/v1/keys"}, 401},
		{"a made-up session", req{method: "GET", path: "/dashboard/api/v1/keys", cookie: "made-up-session-id-0123456"}, 401},
		{"no CSRF token", req{method: "POST", json: create, cookie: cookie, origin: self}, 403},
		{"a wrong CSRF token", req{method: "POST", json: create, cookie: cookie, csrf: "wrong", origin: self}, 403},
		{"another session's CSRF token", req{method: "POST", json: create, cookie: cookie, csrf: otherCSRF, origin: self}, 403},
		{"no Origin", req{method: "POST", json: create, cookie: cookie, csrf: csrf}, 403},
		{"another site", req{method: "POST", json: create, cookie: cookie, csrf: csrf, origin: "https://evil.example"}, 403},
		{"a session without the token", req{method: "POST", json: create, cookie: other, origin: self}, 403},
		{"create", req{method: "POST", json: create, cookie: cookie, csrf: csrf, origin: self}, 201},
		{"read without a CSRF token", req{method: "GET", path: "/dashboard/api/v1/keys/alice", cookie: cookie}, 200},
		{"change balance without a CSRF token", req{method: "PATCH", path: "/dashboard/api/v1/keys/alice", json: `{"daily_credits":9}`, cookie: cookie, origin: self}, 403},
		{"change balance", req{method: "PATCH", path: "/dashboard/api/v1/keys/alice", json: `{"daily_credits":9}`, cookie: cookie, csrf: csrf, origin: self}, 200},
		{"revoke without a CSRF token", req{method: "DELETE", path: "/dashboard/api/v1/keys/alice", cookie: cookie, origin: self}, 403},
		{"revoke", req{method: "DELETE", path: "/dashboard/api/v1/keys/alice", cookie: cookie, csrf: csrf, origin: self}, 200},
	}
	for _, c := range cases {
		if c.q.path == "" {
			c.q.path = "/dashboard/api/v1/keys"
		}
		resp := e.send(t, c.q)
		body := readBody(resp)
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.code)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", c.name, ct)
		}
		if c.code == 201 {
			var k struct{ Key string }
			if err := json.Unmarshal([]byte(body), &k); err != nil || k.Key == "" {
				t.Errorf("create: %s", body)
			}
		}
	}
}

// The API is the admin API: the path under /admin/v1/, the query, the
// body and its type go along with the admin token; cookies and the
// browser's other headers do not.
func TestAPIProxy(t *testing.T) {
	var got *http.Request
	var gotBody string
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	})
	e := newEnv(t, func(c *dashboard.Config) { c.Admin = fake })
	cookie, csrf := e.signIn(t)
	cases := []struct {
		name     string
		q        req
		path     string // what the admin API sees, escaped
		rawQuery string
		body     string
	}{
		{"list", req{method: "GET", path: "/dashboard/api/v1/keys?today=true"}, "/admin/v1/keys", "today=true", ""},
		{"usage", req{method: "GET", path: "/dashboard/api/v1/usage?group=key&from=2026-10-25&to=2026-11-23"}, "/admin/v1/usage", "group=key&from=2026-10-25&to=2026-11-23", ""},
		{"a name with a slash", req{method: "PATCH", path: "/dashboard/api/v1/keys/a%2Fb", json: `{"daily_credits":1}`, csrf: csrf, origin: self}, "/admin/v1/keys/a%2Fb", "", `{"daily_credits":1}`},
		{"nodes", req{method: "GET", path: "/dashboard/api/v1/nodes", header: http.Header{"Authorization": {"Bearer guess"}, "X-Other": {"x"}}}, "/admin/v1/nodes", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got = nil
			c.q.cookie = cookie
			resp := e.send(t, c.q)
			if resp.StatusCode != 200 || got == nil {
				t.Fatalf("%d %s", resp.StatusCode, readBody(resp))
			}
			if got.URL.EscapedPath() != c.path || got.URL.RawQuery != c.rawQuery || gotBody != c.body {
				t.Errorf("admin saw %s ? %s body %q; want %s ? %s body %q", got.URL.EscapedPath(), got.URL.RawQuery, gotBody, c.path, c.rawQuery, c.body)
			}
			want := http.Header{"Authorization": {"Bearer " + token}}
			if c.body != "" {
				want.Set("Content-Type", "application/json")
			}
			if len(got.Header) != len(want) || got.Header.Get("Authorization") != want.Get("Authorization") || got.Header.Get("Content-Type") != want.Get("Content-Type") {
				t.Errorf("admin saw headers %v, want %v", got.Header, want)
			}
		})
	}
	for _, p := range []string{"/dashboard/api/v1/keys/..", "/dashboard/api/v1/../../admin/v1/keys", "/dashboard/api/v1/keys/%2e%2e"} {
		got = nil
		resp := e.send(t, req{method: "GET", path: p, cookie: cookie})
		if resp.StatusCode == 200 || got != nil {
			t.Errorf("GET %s: %d, admin API reached: %v", p, resp.StatusCode, got != nil)
		}
	}
}

// The admin API's errors reach the browser as they are.
func TestAPIErrorsPassThrough(t *testing.T) {
	e := newEnv(t, nil)
	cookie, csrf := e.signIn(t)
	for _, c := range []struct {
		q    req
		code int
		has  string
	}{
		{req{method: "POST", path: "/dashboard/api/v1/keys", json: `{"name":"has space"}`}, 400, "name"},
		{req{method: "GET", path: "/dashboard/api/v1/keys/nobody"}, 404, "not found"},
		{req{method: "GET", path: "/dashboard/api/v1/usage?group=day"}, 400, "group"},
	} {
		c.q.cookie, c.q.csrf, c.q.origin = cookie, csrf, self
		resp := e.send(t, c.q)
		if body := readBody(resp); resp.StatusCode != c.code || !strings.Contains(body, c.has) {
			t.Errorf("%s %s: %d %s", c.q.method, c.q.path, resp.StatusCode, body)
		}
	}
}
