package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/gateway"
)

// syncBuffer is a buffer the server writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rpc posts one JSON-RPC call and returns the HTTP status and body.
func rpc(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const testKey = "servertest0123456789abcdef012345"

// writeConfig writes a config file with a key and the given networks
// section.
func writeConfig(t *testing.T, path, networks string) {
	t.Helper()
	yaml := "listen: 127.0.0.1:0\nkeys:\n  - {name: test, key: " + testKey + "}\nnetworks:\n" + networks
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRunReloadClose: Run serves a config's network on its own listener
// and prints its ready line; Reload adds a network (served, with its own
// ready line), refuses a change only a restart makes, naming the field,
// and keeps serving; Close stops everything.
func TestRunReloadClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "portico.yaml")
	one := "  - {name: sol-one, family: solana, devnet: {block_period: 50ms, traffic: false}}\n"
	writeConfig(t, path, one)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var out, logs syncBuffer
	m := &Server{Config: cfg, Stdout: &out, Stderr: &logs, ConfigPath: path}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		m.Close()
		t.Fatalf("run: %v\n%s", err, logs.String())
	}
	closed := false
	defer func() {
		if !closed {
			m.Close()
		}
	}()
	if m.Shared == "" || len(m.Networks) != 1 || m.Networks[0].Addr == "" || m.Devnets["sol-one"] == nil {
		t.Fatalf("after Run: shared %q, networks %+v, devnets %v", m.Shared, m.Networks, m.Devnets)
	}
	if !strings.Contains(out.String(), "portico ready on "+m.Shared) || !strings.Contains(out.String(), "http://"+m.Networks[0].Addr+"/v3/<API_KEY>") {
		t.Fatalf("ready lines:\n%s", out.String())
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"getSlot"}`
	if status, body := rpc(t, "http://"+m.Networks[0].Addr+"/v3/"+testKey, call); status != 200 || !strings.Contains(body, `"result"`) {
		t.Fatalf("getSlot: %d %s", status, body)
	}
	if m.Pool("sol-one") == nil || m.Pool("sol-two") != nil {
		t.Fatal("pools before the reload")
	}

	// A network added by a reload: served on the shared listener by its
	// Host, with a ready line of its own.
	writeConfig(t, path, one+"  - {name: sol-two, family: solana, listen: \"off\", devnet: {block_period: 50ms, traffic: false}}\n")
	if err := m.Reload(ctx); err != nil {
		t.Fatalf("reload: %v\n%s", err, logs.String())
	}
	if m.Pool("sol-two") == nil {
		t.Fatal("sol-two is not served after the reload")
	}
	if !strings.Contains(out.String(), "sol-two") {
		t.Errorf("no ready line for sol-two:\n%s", out.String())
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+m.Shared+"/v3/"+testKey, strings.NewReader(call))
	req.Host = "sol-two.localhost"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"result"`) {
		t.Fatalf("sol-two by Host: %d %s", resp.StatusCode, b)
	}

	// A change only a restart makes: refused, naming the field; the
	// running config stays.
	yaml, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(yaml, []byte("data_dir: "+dir+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx); !errors.Is(err, gateway.ErrNotReloadable) || !strings.Contains(err.Error(), "data_dir") {
		t.Fatalf("reload of data_dir: %v", err)
	}
	if status, body := rpc(t, "http://"+m.Networks[0].Addr+"/v3/"+testKey, call); status != 200 {
		t.Fatalf("after a refused reload: %d %s", status, body)
	}

	closed = true
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx); err == nil {
		t.Fatal("a reload after Close was taken")
	}
	if _, err := http.Post("http://"+m.Networks[0].Addr+"/v3/"+testKey, "application/json", strings.NewReader(call)); err == nil {
		t.Fatal("still serving after Close")
	}
}

// TestRunRefusesABadConfig: Run runs every check of a config first and
// opens nothing for a config that fails one.
func TestRunRefusesABadConfig(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Networks = []config.Network{{Name: "x", Family: "no-such-family"}}
	m := &Server{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	err := m.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "networks[0].family") {
		t.Fatalf("run: %v", err)
	}
	if m.Store != nil || m.Shared != "" {
		t.Fatal("Run opened something for a bad config")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenKeyStore: the keys commands need a store another process can
// reach: none without a data directory or PostgreSQL; in a data directory,
// the serve's own SQLite file.
func TestOpenKeyStore(t *testing.T) {
	ctx := context.Background()
	if _, _, err := OpenKeyStore(ctx, "", ""); err == nil || !strings.Contains(err.Error(), "no store") {
		t.Fatalf("no store: %v", err)
	}
	dir := t.TempDir()
	s, cfg, err := OpenKeyStore(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if cfg.DataDir != dir {
		t.Errorf("data dir %q", cfg.DataDir)
	}
	if _, err := os.Stat(filepath.Join(dir, "portico.db")); err != nil {
		t.Fatal(err)
	}
}

// TestDevKey: a config without keys gets a dev key, made once for an
// empty store and kept in the data directory; a store that holds keys
// already gets none.
func TestDevKey(t *testing.T) {
	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.DataDir = t.TempDir()
	s, err := OpenStore(ctx, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key, err := ImportKeys(ctx, &cfg, s)
	if err != nil || key == "" {
		t.Fatalf("dev key: %q %v", key, err)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "dev-key")); err != nil || strings.TrimSpace(string(b)) != key {
		t.Fatalf("kept: %q %v", b, err)
	}
	if again, err := ImportKeys(ctx, &cfg, s); err != nil || again != key {
		t.Fatalf("again: %q %v, want the kept key", again, err)
	}
	other := config.DefaultConfig() // no data dir: nothing kept, and the store has keys
	if none, err := ImportKeys(ctx, &other, s); err != nil || none != "" {
		t.Fatalf("a store with keys: %q %v", none, err)
	}
}
