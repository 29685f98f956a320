package dashboard_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/admin/admintoken"
	"github.com/porticohq/portico/admin/dashboard"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/store"
)

const (
	token = "dashboard-test-admin-token-0123"
	self  = "http://example.com" // the origin of httptest.NewRequest's requests
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Sleep moves the clock on by d at once: the waits of wrong tokens.
func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.Add(d)
	return nil
}

// env is a dashboard over a real admin API (SQLite store, memory meter),
// both checking the token with one Checker on the test clock.
type env struct {
	h     *dashboard.Handler
	api   *admin.API
	clock *clock
	logs  *lockedBuffer
}

func newEnv(t *testing.T, edit func(*dashboard.Config)) *env {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	m, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(st.Spent, nil), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	e := &env{clock: &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}, logs: &lockedBuffer{}}
	tokens, err := admintoken.New(admintoken.Config{Token: token, Now: e.clock.Now, Sleep: e.clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	api, err := admin.New(admin.Config{Tokens: tokens, Store: st, Meter: m, DefaultDailyCredits: 3000})
	if err != nil {
		t.Fatal(err)
	}
	e.api = api
	cfg := dashboard.Config{Admin: api, Token: token, Tokens: api.Tokens(), Now: e.clock.Now,
		Logger: slog.New(slog.NewTextHandler(e.logs, nil)),
		Networks: func() []dashboard.Network {
			return []dashboard.Network{{Name: "evm-devnet", Family: "evm", HTTP: "http://127.0.0.1:8702", WS: "ws://127.0.0.1:8702"}}
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	if e.h, err = dashboard.New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if strings.Contains(e.logs.String(), token) {
			t.Error("the admin token reached the log")
		}
	})
	return e
}

// req is a request to the dashboard.
type req struct {
	method, path string
	form         url.Values // sent as the body, form-encoded
	json         string     // sent as the body, as JSON
	cookie       string     // the session cookie's value
	csrf         string     // X-CSRF-Token
	origin       string     // Origin
	header       http.Header
	client       string // RemoteAddr; default 192.0.2.1:40000
}

func (e *env) send(t *testing.T, q req) *http.Response {
	t.Helper()
	var body string
	switch {
	case q.form != nil:
		body = q.form.Encode()
	case q.json != "":
		body = q.json
	}
	r := httptest.NewRequest(q.method, q.path, strings.NewReader(body))
	switch {
	case q.form != nil:
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	case q.json != "":
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range q.header {
		r.Header[k] = v
	}
	if q.cookie != "" {
		r.AddCookie(&http.Cookie{Name: "portico_dashboard", Value: q.cookie})
	}
	if q.csrf != "" {
		r.Header.Set("X-CSRF-Token", q.csrf)
	}
	if q.origin != "" {
		r.Header.Set("Origin", q.origin)
	}
	r.RemoteAddr = "192.0.2.1:40000"
	if q.client != "" {
		r.RemoteAddr = q.client
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w.Result()
}

// signIn signs in and returns the session cookie's value and its CSRF
// token, as the dashboard page shows it.
func (e *env) signIn(t *testing.T) (cookie, csrf string) {
	t.Helper()
	resp := e.send(t, req{method: "POST", path: "/dashboard/signin", form: url.Values{"token": {token}}, origin: self})
	c := sessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || c == nil {
		t.Fatalf("sign in: %d %s", resp.StatusCode, readBody(resp))
	}
	page := readBody(e.send(t, req{method: "GET", path: "/dashboard/", cookie: c.Value}))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the dashboard page:\n%s", page)
	}
	return c.Value, m[1]
}

func sessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == "portico_dashboard" {
			return c
		}
	}
	return nil
}

func readBody(resp *http.Response) string {
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	return b.String()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
