package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
)

// TestReloadPublishesEndpoints: a network that a reload adds gets its
// ready line on stdout and its links on the dashboard, and a removed one
// loses its links, as if the process had started with the new config.
func TestReloadPublishesEndpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "portico.yaml")
	write := func(names ...string) {
		y := "listen: 127.0.0.1:0\nlog: {level: debug}\nadmin: {token: reload-links-admin-token-0123456789}\nkeys: [{name: k, key: reloadlinks0123456789abcdef01234}]\nnetworks:\n"
		for _, n := range names {
			y += "  - {name: " + n + ", family: evm, listen: \"off\"}\n"
		}
		if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("evm-one")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, cfg, func(m *Main) { m.ConfigPath = path })
	links := func() map[string]string {
		out := map[string]string{}
		for _, n := range s.m.DashboardNetworks() {
			out[n.Name] = n.HTTP
		}
		return out
	}
	if l := links(); len(l) != 1 || l["evm-one"] == "" {
		t.Fatalf("links at start: %v", l)
	}

	write("evm-two")
	if err := s.m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	l := links()
	if len(l) != 1 || !strings.HasPrefix(l["evm-two"], "http://evm-two.") {
		t.Errorf("links after the reload: %v, want evm-two's alone", l)
	}
	var ready string
	for _, line := range strings.Split(s.stdout.String(), "\n") {
		if strings.HasPrefix(line, "evm-two ") {
			ready = line
		}
	}
	if !strings.Contains(ready, l["evm-two"]+"/v3/") || !strings.Contains(ready, "curl -s") {
		t.Errorf("no ready line for the added network:\n%s", s.stdout.String())
	}
}
