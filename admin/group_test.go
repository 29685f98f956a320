package admin_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/store"
)

// The dashboard's reads: keys with today's balances, usage summed per
// key or per method, and the nodes.
func TestAdminDashboardReads(t *testing.T) {
	srv, st, m := setup(t)
	ctx := context.Background()
	charge := map[string][]metering.Item{
		"ann": {{Method: "getBlock", Cost: 160}, {Method: "getBlock", Cost: 160}, {Method: "eth_call", Cost: 80}},
		"ben": {{Method: "getBlock", Cost: 160}},
	}
	for _, name := range []string{"ann", "ben", "cat"} {
		if code, body := do(t, srv, "POST", "/admin/v1/keys", `{"name":"`+name+`","daily_credits":1000}`, token); code != 201 {
			t.Fatalf("create %s: %d %s", name, code, body)
		}
		k, err := st.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if items := charge[name]; items != nil {
			if _, err := m.Charge(ctx, store.Identity(k), items); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := do(t, srv, "DELETE", "/admin/v1/keys/cat", "", token); code != 200 {
		t.Fatalf("revoke: %d %s", code, body)
	}

	var keys []admin.KeyJSON
	get(t, srv, "/admin/v1/keys?revoked=true&today=true", &keys)
	remaining, day := map[string]int64{}, ""
	for _, k := range keys {
		switch {
		case k.Name == "cat" && k.Today != nil:
			t.Errorf("revoked key cat has a balance today: %+v", k.Today)
		case k.Name != "cat" && k.Today == nil:
			t.Errorf("key %s has no balance today", k.Name)
		case k.Today != nil:
			remaining[k.Name], day = k.Today.Remaining, k.Today.Day
		}
	}
	if remaining["ann"] != 600 || remaining["ben"] != 840 {
		t.Errorf("remaining %v, want ann 600 and ben 840", remaining)
	}
	var plain []admin.KeyJSON
	get(t, srv, "/admin/v1/keys", &plain)
	for _, k := range plain {
		if k.Today != nil {
			t.Errorf("list without today=true shows %s's balance", k.Name)
		}
	}

	cases := []struct {
		name, query string
		want        []admin.UsageJSON
	}{
		{"by key", "group=key", []admin.UsageJSON{
			{Day: day, Key: "ann", Calls: 3, Credits: 400},
			{Day: day, Key: "ben", Calls: 1, Credits: 160}}},
		{"by method", "group=method", []admin.UsageJSON{
			{Day: day, Method: "eth_call", Calls: 1, Credits: 80},
			{Day: day, Method: "getBlock", Calls: 3, Credits: 480}}},
		{"by method for one key", "group=method&key=ben", []admin.UsageJSON{
			{Day: day, Method: "getBlock", Calls: 1, Credits: 160}}},
		{"by key before today", "group=key&to=2000-01-01", []admin.UsageJSON{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []admin.UsageJSON
			get(t, srv, "/admin/v1/usage?"+c.query, &got)
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("row %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
	if code, body := do(t, srv, "GET", "/admin/v1/usage?group=day", "", token); code != 400 || !strings.Contains(body, "group: want key or method") {
		t.Errorf("group=day: %d %s", code, body)
	}
	if code, _ := do(t, srv, "GET", "/admin/v1/nodes", "", token); code != 404 {
		t.Errorf("nodes without Config.Nodes: %d, want 404", code)
	}
}

func TestAdminNodes(t *testing.T) {
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	api, err := admin.New(admin.Config{Token: token, Store: st,
		Nodes: func() any { return []map[string]any{{"name": "evm-devnet", "nodes": []string{"a"}}} }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	var got []struct {
		Name  string   `json:"name"`
		Nodes []string `json:"nodes"`
	}
	get(t, srv, "/admin/v1/nodes", &got)
	if len(got) != 1 || got[0].Name != "evm-devnet" || len(got[0].Nodes) != 1 {
		t.Errorf("nodes: %+v", got)
	}
	if code, _ := do(t, srv, "GET", "/admin/v1/nodes", "", ""); code != 401 {
		t.Errorf("nodes without the token: %d, want 401", code)
	}
}

// get fetches path with the token and decodes its JSON into v.
func get(t *testing.T, srv *httptest.Server, path string, v any) {
	t.Helper()
	code, body := do(t, srv, "GET", path, "", token)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}
