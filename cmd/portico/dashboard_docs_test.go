package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/porticohq/portico/admin/admintoken"
	"github.com/porticohq/portico/admin/dashboard"
	"github.com/porticohq/portico/config"
)

// TestDashboardDocs keeps the Dashboard section of docs/operations.md
// true: its config turns the dashboard on, its limits table is the
// dashboard's and the admin token checker's defaults, and its screenshot
// is there.
func TestDashboardDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Dashboard\n")
	if !ok {
		t.Fatal("docs/operations.md has no ## Dashboard section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}

	yaml := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(section)
	if yaml == nil {
		t.Fatal("no yaml block in the Dashboard section")
	}
	const token = "a-token-of-24-characters"
	cfg, err := config.Parse([]byte(yaml[1]), func(name string) (string, bool) { return token, name == "PORTICO_ADMIN_TOKEN" })
	if err != nil {
		t.Fatalf("the section's config: %v", err)
	}
	if err := checkConfig(&cfg); err != nil || cfg.Admin.Token != token {
		t.Errorf("the section's config: %v, admin token %q", err, cfg.Admin.Token)
	}

	limit := func(l dashboard.Limit) string { return fmt.Sprintf("%d at once, then 1 every %s", l.Burst, l.Every) }
	tok := admintoken.DefaultLimits
	want := [][2]string{
		{"session lifetime", dashboard.DefaultSessionTTL.String()},
		{"sessions held", fmt.Sprint(dashboard.DefaultMaxSessions)},
		{"wrong admin tokens per client address answered at once", fmt.Sprint(tok.Free)},
		{"then each check from that address waits", fmt.Sprintf("%s, doubling to %s", tok.Base, tok.Max)},
		{"free wrong tokens from all addresses", fmt.Sprint(tok.GlobalFree)},
		{"wrong tokens forgotten after the last", tok.Forget.String()},
		{"client addresses tracked for wrong tokens", fmt.Sprint(tok.MaxClients)},
		{"requests without a session per client address", limit(dashboard.DefaultPageLimit)},
		{"client addresses tracked per limit", fmt.Sprint(dashboard.DefaultMaxClients)},
	}
	var got [][2]string
	for _, m := range regexp.MustCompile(`(?m)^\| ([a-z][^|]*?) \| ([^|]+) \|$`).FindAllStringSubmatch(section, -1) {
		if m[1] != "limit" {
			got = append(got, [2]string{m[1], m[2]})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("limits table: %q, want rows %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i][0], want[i][0]) || got[i][1] != want[i][1] {
			t.Errorf("limits row %d: %q, want %q", i, got[i], want[i])
		}
	}

	img := regexp.MustCompile(`!\[[^\]]+\]\(([^)]+\.png)\)`).FindStringSubmatch(section)
	if img == nil {
		t.Fatal("the Dashboard section shows no screenshot")
	}
	png, err := os.ReadFile(filepath.Join("../../docs", img[1]))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) > 400<<10 {
		t.Errorf("screenshot %s: %v, %d bytes (a PNG of at most 400 KiB)", img[1], err, len(png))
	}
}
