package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/testsvc"
)

// TestServeDefaults runs serve on the built-in config: three networks on
// their embedded devnets, a dev key, ready lines whose curl works, the
// shared listener routing by Host.
func TestServeDefaults(t *testing.T) {
	s := start(t, config.DefaultConfig())
	out := s.stdout.String()
	if !strings.Contains(out, "portico ready on "+s.m.Shared) || !strings.Contains(out, "dev API key "+s.m.Key) {
		t.Fatalf("stdout:\n%s", out)
	}
	want := map[string]struct {
		status int
		prefix string
	}{
		"evm-devnet":      {200, `{"jsonrpc":"2.0","id":1,"result":"0x`},
		"solana-devnet":   {200, `{"jsonrpc":"2.0","id":1,"result":`},
		"starknet-devnet": {200, `{"jsonrpc":"2.0","id":1,"result":`},
	}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		m := readyRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		seen++
		name, httpURL, key, wsURL, curlURL, body := m[1], m[2], m[3], m[4], m[6], m[7]
		if key != s.m.Key || m[5] != s.m.Key || curlURL != httpURL || httpURL != s.url(t, name) || wsURL != s.wsURL(t, name) {
			t.Errorf("ready line %q", line)
		}
		w := want[name]
		if status, got := post(t, curlURL, body); status != w.status || !strings.HasPrefix(got, w.prefix) {
			t.Errorf("%s: curl gave %d %s", name, status, got)
		}
	}
	if seen != 3 {
		t.Fatalf("%d ready lines in:\n%s", seen, out)
	}

	// The shared listener finds the network by Host.
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.m.Shared+"/v3/"+s.m.Key,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"evm_chainId"}`))
	req.Host = "evm-devnet.localhost"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("shared listener: %d", resp.StatusCode)
	}
}

// TestDevKeyPersists checks that the dev key is kept in the data directory,
// private to its owner, and reused.
func TestDevKeyPersists(t *testing.T) {
	dir := t.TempDir()
	cfg := config.DefaultConfig()
	cfg.DataDir = dir
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm", Devnet: config.Devnet{Disabled: true}}}
	s1 := start(t, cfg)
	key := s1.m.Key
	s1.m.Close()
	fi, err := os.Stat(filepath.Join(dir, "dev-key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("dev-key: %v %v", fi, err)
	}
	s2 := start(t, cfg)
	if s2.m.Key != key {
		t.Fatalf("key changed across restarts")
	}
	if !strings.Contains(s2.stdout.String(), "stored in "+filepath.Join(dir, "dev-key")) {
		t.Fatalf("stdout:\n%s", s2.stdout)
	}
}

// Issue 23: serve made portico.db 0644 in a data directory that already
// existed as 0755. The data directory is 0700 and the store 0600, whatever
// they were before.
func TestDataDirPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "portico-data")
	db := filepath.Join(dir, "portico.db")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.Chmod(dir, 0o755), os.Chmod(db, 0o644)); err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultConfig()
	cfg.DataDir = dir
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm", Devnet: config.Devnet{Disabled: true}}}
	s := start(t, cfg)
	defer s.m.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, db: 0o600, db + "-wal": 0o600, filepath.Join(dir, "dev-key"): 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
}

// TestDevKeyOnlyForAnEmptyStore: a second instance on a shared store that
// already holds keys makes no dev key and revokes nothing; the first
// instance's dev key keeps working through both.
func TestDevKeyOnlyForAnEmptyStore(t *testing.T) {
	dsn := testsvc.Postgres(t)
	node := httptest.NewServer(&okNode{})
	defer node.Close()
	cfgFor := func() config.Config {
		cfg := config.DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.Store.Postgres = dsn
		cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm", Upstreams: []config.Upstream{{URL: node.URL}}}}
		return cfg
	}
	a := start(t, cfgFor())
	if a.m.Key == "" {
		t.Fatal("first instance on an empty store made no dev key")
	}
	b := start(t, cfgFor())
	if b.m.Key != "" || !strings.Contains(b.stdout.String(), "no dev key: the key store already holds keys") {
		t.Fatalf("second instance: key %q, stdout:\n%s", b.m.Key, b.stdout)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`
	for _, s := range []*started{a, b} {
		if status, got := post(t, "http://"+s.addr(t, "evm-devnet")+"/v3/"+a.m.Key, body); status != 200 {
			t.Fatalf("the dev key on %s: %d %s", s.m.Shared, status, got)
		}
	}
	keys, err := a.m.Store.List(context.Background(), true)
	if err != nil || len(keys) != 1 || !keys[0].Active() {
		t.Fatalf("keys in the store: %+v %v", keys, err)
	}
}
