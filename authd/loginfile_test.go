package authd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth/authwire"
)

func TestLoadLoginFile(t *testing.T) {
	t.Setenv("TEST_OIDC_SECRET", "hunter2")
	cases := []struct {
		name  string
		file  string
		check func(LoginFile) bool
		err   string
	}{
		{"no file", "", func(f LoginFile) bool {
			dev, _ := f.passwordless(true)
			prod, _ := f.passwordless(false)
			return dev && !prod && f.OIDC == nil
		}, ""},
		{"passwordless asked for without smtp", `{"passwordless": true}`, func(f LoginFile) bool {
			_, err := f.passwordless(false)
			return err != nil && strings.Contains(err.Error(), "needs smtp")
		}, ""},
		{"smtp", `{"smtp": {"host": "mail.example", "from": "login@auth.example", "password": "${TEST_OIDC_SECRET}"}}`, func(f LoginFile) bool {
			on, err := f.passwordless(false)
			return on && err == nil && f.SMTP.Password == "hunter2"
		}, ""},
		{"unknown field", `{"passwordles": true}`, nil, "passwordles"},
		{"not json", `{`, nil, "login config"},
		{"providers and env", `{"passwordless": false, "baseUrls": {"staging": "https://staging.auth.example"},
			"oidc": [{"name": "google", "discoveryUrl": "https://accounts.google.com", "clientId": "id", "clientSecret": "${TEST_OIDC_SECRET}"}]}`,
			func(f LoginFile) bool {
				on, _ := f.passwordless(true)
				return f.OIDC[0].ClientSecret == "hunter2" && !on && f.BaseURLs[authwire.Staging] == "https://staging.auth.example"
			}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := ""
			if c.file != "" {
				path = filepath.Join(t.TempDir(), "login.json")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			f, err := LoadLoginFile(path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !c.check(f) {
				t.Fatalf("%+v, %v", f, err)
			}
		})
	}
}

// The login config file docs/auth.md shows loads and makes a server (OIDC
// discovery and JWKS fetches wait for the first login).
func TestDocumentedLoginFile(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "auth.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### The login config file")
	_, block, ok2 := strings.Cut(section, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/auth.md: no JSON block under \"The login config file\"")
	}
	path := filepath.Join(t.TempDir(), "login.json")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_CLIENT_SECRET", "s3cret")
	t.Setenv("SMTP_PASSWORD", "s3cret")
	f, err := LoadLoginFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), Config{PublicURL: "https://auth.example.com", Login: f, Networks: []string{"sapphire_devnet"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
