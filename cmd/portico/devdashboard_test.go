package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
)

// devDashboardRE matches the dashboard's ready line with a dev admin
// token.
var devDashboardRE = regexp.MustCompile(`(?m)^dashboard: (http://\S+/dashboard/) \(dev admin token (\w+), stored in (\S+); the admin API at /admin/v1/ takes it too\)$`)

// TestDevDashboard: serve --dev-dashboard (make run) turns the dashboard
// on with a dev admin token kept beside the dev key, prints it with the
// dashboard's URL, and keeps it across restarts; a configured admin.token
// wins and is not printed; without either there is no dashboard.
func TestDevDashboard(t *testing.T) {
	dir := t.TempDir()
	cfg := config.DefaultConfig()
	cfg.DataDir = dir
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm", Devnet: config.Devnet{Disabled: true}}}
	dev := func(m *Main) { m.DevDashboard = true }

	s1 := start(t, cfg, dev)
	m := devDashboardRE.FindStringSubmatch(s1.stdout.String())
	if m == nil {
		t.Fatalf("no dev dashboard line in:\n%s", s1.stdout)
	}
	url, token, path := m[1], m[2], m[3]
	if url != "http://"+s1.m.Shared+"/dashboard/" || path != filepath.Join(dir, DevAdminTokenFile) || len(token) < 16 {
		t.Fatalf("dashboard line %q", m[0])
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", path, fi, err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != token {
		t.Fatalf("%s holds %q, the line says %q", path, b, token)
	}
	if status, body := getAuth(t, url, ""); status != 200 || !strings.Contains(body, "<form") {
		t.Fatalf("GET %s: %d %.200s", url, status, body)
	}
	admin := "http://" + s1.m.Shared + "/admin/v1/keys"
	if status, _ := getAuth(t, admin, token); status != 200 {
		t.Fatalf("the admin API with the dev token: %d", status)
	}
	if status, _ := getAuth(t, admin, strings.Repeat("x", 32)); status != 401 {
		t.Fatalf("the admin API with another token: %d", status)
	}
	s1.m.Close()

	s2 := start(t, cfg, dev)
	if m := devDashboardRE.FindStringSubmatch(s2.stdout.String()); m == nil || m[2] != token {
		t.Fatalf("the token changed across restarts:\n%s", s2.stdout)
	}
	s2.m.Close()

	// A configured admin.token wins, and is not printed.
	own := cfg
	own.DataDir = t.TempDir()
	own.Admin.Token = "configured-token-0123456789"
	s3 := start(t, own, dev)
	want := "dashboard: http://" + s3.m.Shared + "/dashboard/ (sign in with admin.token)\n"
	if out := s3.stdout.String(); !strings.Contains(out, want) || strings.Contains(out, own.Admin.Token) {
		t.Fatalf("want %q, and no token, in:\n%s", want, out)
	}
	if _, err := os.Stat(filepath.Join(own.DataDir, DevAdminTokenFile)); !os.IsNotExist(err) {
		t.Fatalf("a dev token was made beside a configured one: %v", err)
	}
	s3.m.Close()

	// Neither: no dashboard.
	s4 := start(t, cfg)
	if out := s4.stdout.String(); strings.Contains(out, "dashboard:") {
		t.Fatalf("a dashboard line without a token:\n%s", out)
	}
	if status, _ := getAuth(t, "http://"+s4.m.Shared+"/dashboard/", ""); status != 404 {
		t.Fatalf("/dashboard/ without a token: %d", status)
	}
}

// getAuth sends GET url, with token as the bearer when not empty.
func getAuth(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
