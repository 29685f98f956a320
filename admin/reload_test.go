package admin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/store"
)

// TestReload: POST /admin/v1/reload runs Config.Reload behind the token
// and answers its refusal with 422; without Config.Reload there is no
// such route.
func TestReload(t *testing.T) {
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var refusal error
	calls := 0
	reload := func(context.Context) error { calls++; return refusal }
	tests := []struct {
		name     string
		reload   func(context.Context) error
		refusal  error
		tok      string
		status   int
		body     string
		reloaded bool
	}{
		{"taken", reload, nil, token, http.StatusOK, `{"reloaded":true}`, true},
		{"refused", reload, errors.New("config: networks[0].upstreams[0].url: host is missing"), token, http.StatusUnprocessableEntity, `"config: networks[0].upstreams[0].url: host is missing"`, true},
		{"no token", reload, nil, "", http.StatusUnauthorized, "admin token missing or wrong", false},
		{"no reload configured", nil, nil, token, http.StatusNotFound, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, err := admin.New(admin.Config{Token: token, Store: st, Reload: tc.reload})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(api)
			defer srv.Close()
			refusal, calls = tc.refusal, 0
			code, body := do(t, srv, http.MethodPost, "/admin/v1/reload", "", tc.tok)
			if code != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("got %d %s, want %d with %s", code, body, tc.status, tc.body)
			}
			if (calls == 1) != tc.reloaded {
				t.Fatalf("Reload called %d times", calls)
			}
		})
	}
}
