package clients

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/internal/testsvc"
)

func TestAllowsRedirect(t *testing.T) {
	c := &Client{ID: "app", RedirectURLs: []string{
		"https://app.example/auth/callback",
		"com.example.app://auth",
		"http://127.0.0.1/callback/",
		"http://localhost/done",
	}}
	cases := []struct {
		url string
		ok  bool
	}{
		{"https://app.example/auth/callback", true},
		{"com.example.app://auth", true},
		{"https://app.example/auth/callback/", false},
		{"https://app.example/auth/callback?x=1", false},
		{"https://app.example:444/auth/callback", false},
		{"https://evil.example/auth/callback", false},
		{"https://app.example.evil.example/auth/callback", false},
		{"http://app.example/auth/callback", false},
		{"http://127.0.0.1:53123/callback/0a1b2c", true},
		{"http://127.0.0.1/callback/x", true},
		{"http://127.0.0.1:1/callback/", true},
		{"http://127.0.0.1:1/callback", false},
		{"http://127.0.0.1:1/callback/../admin", false},
		{"http://127.0.0.1:1/callback/%2e%2e/admin", false},
		{"http://127.0.0.1:1/other/", false},
		{"http://[::1]:1/callback/x", false},
		{"http://localhost:8080/done", true},
		{"http://localhost:8080/done/x", false},
		{"https://127.0.0.1:1/callback/x", false},
		{"http://user@127.0.0.1:1/callback/x", false},
		{"javascript:alert(1)", false},
		{"https://app.example/auth/callback#x", false},
	}
	for _, tc := range cases {
		if got := c.AllowsRedirect(tc.url); got != tc.ok {
			t.Errorf("%s: %v, want %v", tc.url, got, tc.ok)
		}
	}
	any := &Client{ID: "x", Any: true}
	if !any.AllowsRedirect("https://anything.example/") || any.AllowsRedirect("javascript:x") {
		t.Error("AnyClient redirects")
	}
}

func TestAllowsOrigin(t *testing.T) {
	c := &Client{Origins: []string{"https://app.example", "http://localhost:3000/"}}
	for u, want := range map[string]bool{
		"https://app.example/about": true, "https://APP.example": true, "http://localhost:3000/x": true,
		"https://evil.example/": false, "http://app.example/": false, "not a url": false,
	} {
		if c.AllowsOrigin(u) != want {
			t.Errorf("%s: want %v", u, want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		c    Client
		err  string
	}{
		{"ok", Client{ID: "a", RedirectURLs: []string{"https://a.example/cb"}, Origins: []string{"https://a.example"}}, ""},
		{"no id", Client{RedirectURLs: []string{"https://a.example/cb"}}, "clientId"},
		{"no redirect", Client{ID: "a"}, "redirectUrls"},
		{"script redirect", Client{ID: "a", RedirectURLs: []string{"javascript:x"}}, "redirectUrls[0]"},
		{"relative redirect", Client{ID: "a", RedirectURLs: []string{"/cb"}}, "redirectUrls[0]"},
		{"fragment", Client{ID: "a", RedirectURLs: []string{"https://a.example/#x"}}, "redirectUrls[0]"},
		{"origin with path", Client{ID: "a", RedirectURLs: []string{"https://a.example/cb"}, Origins: []string{"https://a.example/x"}}, "origins[0]"},
	}
	for _, c := range cases {
		err := c.c.Validate()
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

// The same contract on every backend.
func TestDBContract(t *testing.T) {
	ctx := context.Background()
	backends := map[string]func(t *testing.T) (*DB, error){
		"sqlite-memory": func(t *testing.T) (*DB, error) { return OpenSQLite(ctx, "") },
		"sqlite-file":   func(t *testing.T) (*DB, error) { return OpenSQLite(ctx, filepath.Join(t.TempDir(), "a.db")) },
		"postgres":      func(t *testing.T) (*DB, error) { return OpenPostgres(ctx, testsvc.Postgres(t)) },
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			d, err := open(t)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, err := d.Client(ctx, "app"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("unknown: %v", err)
			}
			c := Client{ID: "app", Name: "App", RedirectURLs: []string{"https://a.example/cb"}, Origins: []string{"https://a.example"}}
			if err := d.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
			c.RedirectURLs = append(c.RedirectURLs, "http://127.0.0.1/cb/")
			if err := d.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
			got, err := d.Client(ctx, "app")
			if err != nil || len(got.RedirectURLs) != 2 || got.Name != "App" || got.Origins[0] != "https://a.example" || got.CreatedAt.IsZero() {
				t.Fatalf("%+v %v", got, err)
			}
			if err := d.Put(ctx, Client{ID: "bad"}); err == nil {
				t.Fatal("an invalid client was stored")
			}
			if err := d.Put(ctx, Client{ID: "b", RedirectURLs: []string{"x://y"}}); err != nil {
				t.Fatal(err)
			}
			if all, err := d.List(ctx); err != nil || len(all) != 2 || all[0].ID != "app" || all[1].Origins == nil {
				t.Fatalf("list %+v %v", all, err)
			}
			if err := d.Delete(ctx, "app"); err != nil {
				t.Fatal(err)
			}
			if err := d.Delete(ctx, "app"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second delete: %v", err)
			}
		})
	}
}
