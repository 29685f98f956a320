package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/porticohq/portico/admin/dashboard"
)

// DevAdminTokenFile is the file in the data directory that keeps the dev
// admin token, beside the dev key (dev-key).
const DevAdminTokenFile = "dev-admin-token"

// devAdminToken returns the dev admin token of `portico serve
// --dev-dashboard` (make run): the one kept in dataDir, or a new one,
// written there for the next start. Without a data directory it is new
// each start and path is "".
func devAdminToken(dataDir string) (token, path string, err error) {
	if dataDir != "" {
		path = filepath.Join(dataDir, DevAdminTokenFile)
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			// Validate's rule for admin.token: 16 characters or more.
			if t := strings.TrimSpace(string(b)); len(t) >= 16 {
				return t, path, nil
			}
		case !errors.Is(err, os.ErrNotExist):
			return "", "", fmt.Errorf("dev admin token: %w", err)
		}
	}
	var r [24]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(r[:])
	if path != "" {
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			return "", "", fmt.Errorf("dev admin token: %w", err)
		}
	}
	return token, path, nil
}

// dashboardURL is the dashboard's URL on the shared listener at addr, as a
// browser on this machine opens it: a listener on every address is
// reached through 127.0.0.1.
func dashboardURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + dashboard.Prefix
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + dashboard.Prefix
}

// printDashboard prints the dashboard's ready line, when it is on: its URL
// and how to sign in.
func (m *Server) printDashboard() {
	if m.Config.Admin.Token == "" {
		return
	}
	url := dashboardURL(m.Shared)
	if !m.devToken {
		fmt.Fprintf(m.Stdout, "dashboard: %s (sign in with admin.token)\n", url)
		return
	}
	where := "not persisted: pass --data-dir to keep it"
	if m.devTokenPath != "" {
		where = "stored in " + m.devTokenPath
	}
	fmt.Fprintf(m.Stdout, "dashboard: %s (dev admin token %s, %s; the admin API at /admin/v1/ takes it too)\n", url, m.Config.Admin.Token, where)
}
