package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

const token = "admin-token-for-tests-0123456789"

func setup(t *testing.T) (*httptest.Server, *store.Store, *metering.Ledger) {
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
	api, err := admin.New(admin.Config{Token: token, Store: st, Meter: m, DefaultDailyCredits: 3000})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv, st, m
}

func do(t *testing.T, srv *httptest.Server, method, path, body, tok string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminAPI(t *testing.T) {
	srv, st, m := setup(t)
	ctx := context.Background()

	for _, tok := range []string{"", "wrong-token-wrong-token-wrong"} {
		if code, _ := do(t, srv, "GET", "/admin/v1/keys", "", tok); code != 401 {
			t.Fatalf("token %q: status %d, want 401", tok, code)
		}
	}
	code, body := do(t, srv, "POST", "/admin/v1/keys", `{"name":"bob","rate_per_second":100,"allow_networks":["evm-devnet"]}`, token)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created admin.KeyJSON
	if err := json.Unmarshal([]byte(body), &created); err != nil {
		t.Fatal(err)
	}
	if apikey.Check(created.Key) != nil || created.DailyCredits != 3000 || created.RatePerSecond != 100 {
		t.Fatalf("created %+v", created)
	}
	k, err := st.ByHash(ctx, apikey.Sum(created.Key))
	if err != nil || k.Name != "bob" {
		t.Fatalf("stored key: %+v %v", k, err)
	}
	if _, err := m.Charge(ctx, store.Identity(k), []metering.Item{{Method: "getBlock", Cost: 160}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		method, path, body string
		code               int
		has                string
	}{
		{"POST", "/admin/v1/keys", `{"name":"bob"}`, 409, "already has that name"},
		{"POST", "/admin/v1/keys", `{"name":"has space"}`, 400, "name"},
		{"POST", "/admin/v1/keys", `{"name":"x","daily_credits":-1}`, 400, "daily_credits"},
		{"POST", "/admin/v1/keys", `{"name":"x","colour":"red"}`, 400, "unknown field"},
		{"GET", "/admin/v1/keys/bob", "", 200, `"remaining":2840`},
		{"GET", "/admin/v1/keys/nobody", "", 404, "not found"},
		{"PATCH", "/admin/v1/keys/bob", `{"daily_credits":5000,"allow_networks":[]}`, 200, `"daily_credits":5000`},
		{"GET", "/admin/v1/usage?key=bob", "", 200, `"method":"getBlock","calls":1,"credits":160`},
		{"GET", "/admin/v1/usage?from=yesterday", "", 400, "from: want a date"},
		{"GET", "/admin/v1/keys", "", 200, `"name":"bob"`},
		{"DELETE", "/admin/v1/keys/bob", "", 200, `"revoked_at"`},
		{"DELETE", "/admin/v1/keys/bob", "", 404, "not found"},
		{"GET", "/admin/v1/keys", "", 200, `[]`},
		{"GET", "/admin/v1/keys?revoked=true", "", 200, `"name":"bob"`},
	}
	for _, c := range cases {
		code, body := do(t, srv, c.method, c.path, c.body, token)
		if code != c.code || !strings.Contains(body, c.has) {
			t.Errorf("%s %s %s: %d %s; want %d and %q", c.method, c.path, c.body, code, body, c.code, c.has)
		}
		if strings.Contains(body, created.Key) && c.method != "POST" {
			t.Errorf("%s %s shows the key itself", c.method, c.path)
		}
	}
}
