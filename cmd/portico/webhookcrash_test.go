package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/gateway/webhook"
	"github.com/porticohq/portico/internal/anvil"
	"github.com/porticohq/portico/internal/testsvc"
)

const (
	hookAdminToken = "admin-token-0123456789abcdef"
	hookKey        = "hooks0123456789abcdef0123456789ab"
)

// hookConfig writes the config of a portico child serving anvil with
// webhooks to private URLs allowed, as instance, on the store in
// storeYAML ("" for the data directory's SQLite file).
func hookConfig(t *testing.T, dir, instance string, node *anvil.Node, storeYAML string) string {
	t.Helper()
	cfg := fmt.Sprintf(`admin:
  token: %s
keys:
  - name: hooks
    key: %s
    daily_credits: 1000000000000
webhooks:
  allow_private_urls: true
  lease_for: 3s
metering:
  instance: %s
  flush_interval: 200ms
%snetworks:
  - name: anvil
    family: evm
    listen: "off"
    poll_interval: 100ms
    upstreams:
      - url: %s
        ws_url: %s
`, hookAdminToken, hookKey, instance, storeYAML, node.URL(), node.WSURL())
	path := filepath.Join(dir, "portico.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startHookChild starts portico serve on dir's config and data.
func startHookChild(t *testing.T, dir string) *child {
	return startChild(t, "serve", "--config", filepath.Join(dir, "portico.yaml"), "--data-dir", dir, "--listen", "127.0.0.1:0")
}

// kill9 kills a child with SIGKILL and waits for it.
func kill9(t *testing.T, c *child) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
}

// needResume skips (fails under PORTICO_TEST_STRICT=1) when the network
// does not take resumeFrom yet (issue 38, item 1): a webhook resumes its
// stream through it after a restart.
func needResume(t *testing.T, ctx context.Context, wsURL, hash string) {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{Host: "anvil.localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	req := `{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads",{"resumeFrom":"` + hash + `"}]}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(msg), `"error"`) {
		if anvil.Strict() {
			t.Fatalf("resumeFrom is refused: %s", msg)
		}
		t.Skipf("resumeFrom is not served yet (issue 38, item 1): %s", msg)
	}
}

// mine mines n blocks on anvil.
func mine(t *testing.T, ctx context.Context, raw *rpc.Client, n int) {
	t.Helper()
	for range n {
		if err := raw.CallContext(ctx, nil, "evm_mine"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWebhookCrash: a receiver that fails 30% of first attempts, 40
// anvil blocks with a kill -9 of portico after 20 and a restart on the
// same data directory, then a 3-block reorg: the receiver ends with
// every block of the final chain (deduplicated by delivery id), in parent
// order, the 3 dropped blocks as removed, every signature valid.
func TestWebhookCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx)
	dir := t.TempDir()
	hookConfig(t, dir, "crash", node, "")
	direct, err := ethclient.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	raw, err := rpc.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := startHookChild(t, dir)

	rec := newReceiver(t, "receiver-secret-0123456789", 30)
	var made struct{ ID string }
	base := "http://" + c.addr
	if st := adminCall(t, base, hookAdminToken, "POST", "/admin/v1/keys/hooks/webhooks",
		map[string]any{"network": "anvil", "event": "newHeads", "url": rec.srv.URL, "secret": rec.secret}, &made); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	rec.waitFor(t, "a first delivery", time.Minute, func(got []webhook.Payload) bool {
		if len(got) == 0 {
			mine(t, ctx, raw, 1)
		}
		return len(got) > 0
	})
	first := uint64(rec.payloads()[0].Block.Number)
	mine(t, ctx, raw, 20)
	// Let some of them out, not all: the kill comes while deliveries
	// are retried and queued.
	got := rec.waitFor(t, "some deliveries", time.Minute, func(got []webhook.Payload) bool { return len(got) >= 5 })
	needResume(t, ctx, "ws://"+c.addr+"/ws/v3/"+hookKey, got[0].Block.Hash)
	kill9(t, c)
	mine(t, ctx, raw, 20)
	c = startHookChild(t, dir)
	top, err := direct.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "the head after the restart", 2*time.Minute, func(got []webhook.Payload) bool { return hasBlock(got, top.Hash().Hex()) })

	var dropped []common.Hash
	for n := top.Number.Uint64() - 2; n <= top.Number.Uint64(); n++ {
		h, err := direct.HeaderByNumber(ctx, bigOf(n))
		if err != nil {
			t.Fatal(err)
		}
		dropped = append(dropped, h.Hash())
	}
	if err := raw.CallContext(ctx, nil, "anvil_reorg", 3, []any{}); err != nil {
		t.Fatalf("anvil_reorg: %v", err)
	}
	newTop, err := direct.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = rec.waitFor(t, "the new head", time.Minute, func(got []webhook.Payload) bool { return hasBlock(got, newTop.Hash().Hex()) })
	checkChain(t, ctx, direct, got, first, dropped)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.badSigns != 0 {
		t.Errorf("%d deliveries with a bad signature", rec.badSigns)
	}
}

// TestWebhookLeasePostgres: two instances on one PostgreSQL store, one
// webhook: one instance delivers it; killed with SIGKILL, the other takes
// the lease once it expires and goes on from the outbox, none lost.
func TestWebhookLeasePostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx)
	dsn := testsvc.Postgres(t)
	storeYAML := fmt.Sprintf("store:\n  postgres: %q\n", dsn)
	dirs := map[string]string{"a": t.TempDir(), "b": t.TempDir()}
	children := map[string]*child{}
	for name, dir := range dirs {
		hookConfig(t, dir, name, node, storeYAML)
	}
	direct, err := ethclient.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	raw, err := rpc.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	children["a"] = startHookChild(t, dirs["a"])
	children["b"] = startHookChild(t, dirs["b"])

	rec := newReceiver(t, "receiver-secret-0123456789", 0)
	var made struct{ ID string }
	base := "http://" + children["a"].addr
	if st := adminCall(t, base, hookAdminToken, "POST", "/admin/v1/keys/hooks/webhooks",
		map[string]any{"network": "anvil", "event": "newHeads", "url": rec.srv.URL, "secret": rec.secret}, &made); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	rec.waitFor(t, "a first delivery", time.Minute, func(got []webhook.Payload) bool {
		if len(got) == 0 {
			mine(t, ctx, raw, 1)
		}
		return len(got) > 0
	})
	first := uint64(rec.payloads()[0].Block.Number)
	mine(t, ctx, raw, 5)
	var list []struct{ Instance string }
	if st := adminCall(t, base, hookAdminToken, "GET", "/admin/v1/keys/hooks/webhooks", nil, &list); st != 200 || len(list) != 1 || children[list[0].Instance] == nil {
		t.Fatalf("list: %d %+v", st, list)
	}
	holder := list[0].Instance
	other := "a"
	if holder == "a" {
		other = "b"
	}
	needResume(t, ctx, "ws://"+children[other].addr+"/ws/v3/"+hookKey, rec.payloads()[0].Block.Hash)
	kill9(t, children[holder])
	mine(t, ctx, raw, 10)
	top, err := direct.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.waitFor(t, "the head from the other instance", 2*time.Minute, func(got []webhook.Payload) bool { return hasBlock(got, top.Hash().Hex()) })
	checkChain(t, ctx, direct, got, first, nil)
	if st := adminCall(t, "http://"+children[other].addr, hookAdminToken, "GET", "/admin/v1/keys/hooks/webhooks", nil, &list); st != 200 || list[0].Instance != other {
		t.Fatalf("after the kill: %d %+v, want %s delivering", st, list, other)
	}
}
