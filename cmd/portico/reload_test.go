package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/internal/anvil"
)

// Keys and token of the reload test's configs.
const (
	reloadLoadKey  = "reloadload0123456789abcdef012345"
	reloadProbeKey = "reloadprobe123456789abcdef012345"
	reloadLateKey  = "reloadlate0123456789abcdef012345"
	reloadToken    = "reload-admin-token-0123456789"
)

// reloadConfig is one version of the reload test's config file.
type reloadConfig struct {
	aNode    *anvil.Node // evm-a's node
	costA    int         // evm-a's eth_blockNumber cost
	maxBatch int
	gone     bool // evm-gone served
	added    bool // evm-new served
	late     bool // the key "late" imported
	badURL   bool // a broken upstream URL in networks[1]
}

func (c reloadConfig) yaml(keep, other *anvil.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "keys:\n  - {name: load, key: %s, daily_credits: 1000000000}\n  - {name: probe, key: %s, daily_credits: 1000000000}\n", reloadLoadKey, reloadProbeKey)
	if c.late {
		fmt.Fprintf(&b, "  - {name: late, key: %s, daily_credits: 1000}\n", reloadLateKey)
	}
	fmt.Fprintf(&b, "admin:\n  token: %s\nlimits:\n  max_batch: %d\nnetworks:\n", reloadToken, c.maxBatch)
	network := func(name string, n *anvil.Node, extra string) {
		fmt.Fprintf(&b, "  - name: %s\n    family: evm\n    listen: \"off\"\n    upstreams:\n      - {url: %s, ws_url: %s}\n%s", name, n.URL(), n.WSURL(), extra)
	}
	network("evm-keep", keep, "")
	if c.badURL {
		b.WriteString("  - name: evm-bad\n    family: evm\n    upstreams:\n      - url: ftp://nowhere\n")
	}
	network("evm-a", c.aNode, fmt.Sprintf("    costs: {eth_blockNumber: %d}\n", c.costA))
	if c.gone {
		network("evm-gone", keep, "")
	}
	if c.added {
		network("evm-new", other, "")
	}
	return b.String()
}

// TestReloadUnderLoad runs portico serve as its own process under load
// (HTTP calls from several goroutines on two networks, a newHeads
// subscription open on each) and reloads its config several times, by
// SIGHUP and by POST /admin/v1/reload: the nodes of a network change, a
// network is added and one removed, a cost and a limit change, a key is
// added, and a bad config in between is refused with its field named.
// No client sees an error, both subscriptions keep their notifications,
// and every change takes effect.
func TestReloadUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	nodeA, err := anvil.Start(ctx, anvil.Options{Args: []string{"--block-time", "1"}})
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer nodeA.Close()
	nodeB, err := anvil.Start(ctx, anvil.Options{Args: []string{"--block-time", "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer nodeB.Close()
	// B is far ahead of A: which node answers shows in eth_blockNumber.
	if code, body := post(t, nodeB.URL(), `{"jsonrpc":"2.0","id":1,"method":"anvil_mine","params":["0x3e8"]}`); code != 200 || strings.Contains(body, "error") {
		t.Fatalf("anvil_mine: %d %s", code, body)
	}

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "portico.yaml")
	write := func(c reloadConfig) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(c.yaml(nodeA, nodeB)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	v1 := reloadConfig{aNode: nodeA, costA: 5, maxBatch: 100, gone: true}
	write(v1)
	c := startChild(t, "serve", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--no-auth")
	base := "http://" + c.addr

	call := func(network, key, body string) (int, string, http.Header) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v3/"+key, strings.NewReader(body))
		req.Host = network + ".localhost"
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error(), nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	const blockNumber = `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`
	// head returns evm-a's block number and what the call was charged.
	head := func() (uint64, string) {
		t.Helper()
		code, body, h := call("evm-a", reloadProbeKey, blockNumber)
		i := strings.Index(body, `"result":"`)
		if code != 200 || i < 0 {
			t.Fatalf("evm-a eth_blockNumber: %d %s", code, body)
		}
		hex, _, _ := strings.Cut(body[i+len(`"result":"0x`):], `"`)
		n, _ := strconv.ParseUint(hex, 16, 64)
		return n, h.Get("X-Credits-Used")
	}
	adminReload := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/admin/v1/reload", nil)
		req.Header.Set("Authorization", "Bearer "+reloadToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// waitLog waits for the n-th log line holding s.
	waitLog := func(s string, n int) {
		t.Helper()
		for strings.Count(c.logs.String(), s) < n {
			select {
			case <-ctx.Done():
				t.Fatalf("no %q in the log:\n%s", s, c.logs)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	// The load: HTTP calls on evm-a and evm-keep, and a newHeads
	// subscription on each, until stop.
	stop := make(chan struct{})
	var (
		wg       sync.WaitGroup
		calls    atomic.Int64
		failures atomic.Int64
		firstMu  sync.Mutex
		first    string
	)
	failed := func(what string) {
		if failures.Add(1) == 1 {
			firstMu.Lock()
			first = what
			firstMu.Unlock()
		}
	}
	for i := range 4 {
		network := []string{"evm-a", "evm-keep"}[i%2]
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body, _ := call(network, reloadLoadKey, blockNumber)
				calls.Add(1)
				if code != 200 || !strings.Contains(body, `"result"`) {
					failed(fmt.Sprintf("%s: %d %s", network, code, body))
				}
			}
		})
	}
	heads := map[string]*atomic.Int64{"evm-a": {}, "evm-keep": {}}
	for network, count := range heads {
		ws, _, err := websocket.Dial(ctx, "ws://"+c.addr+"/ws/v3/"+reloadLoadKey, &websocket.DialOptions{Host: network + ".localhost"})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`)); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				_, msg, err := ws.Read(ctx)
				select {
				case <-stop:
					return
				default:
				}
				switch {
				case err != nil:
					failed(network + " subscription: " + err.Error())
					return
				case strings.Contains(string(msg), `"error"`):
					failed(network + " subscription: " + string(msg))
				case strings.Contains(string(msg), `"eth_subscription"`):
					count.Add(1)
				}
			}
		})
	}
	// moreHeads waits until both subscriptions have had another head.
	moreHeads := func() {
		t.Helper()
		was := map[string]int64{}
		for name, n := range heads {
			was[name] = n.Load()
		}
		for name, n := range heads {
			for n.Load() <= was[name] {
				select {
				case <-ctx.Done():
					t.Fatalf("no new head on %s's subscription", name)
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}
	moreHeads()
	if n, cost := head(); n >= 1000 || cost != "5" {
		t.Fatalf("v1: evm-a at block %d (want A's, below 1000), charged %s (want 5)", n, cost)
	}

	// v2 by SIGHUP: evm-a moves to node B and costs 7, evm-gone goes,
	// evm-new comes, batches shrink to 3.
	write(reloadConfig{aNode: nodeB, costA: 7, maxBatch: 3, added: true})
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog("config reloaded", 1)
	if n, cost := head(); n < 1000 || cost != "7" {
		t.Fatalf("v2: evm-a at block %d (want B's, 1000 or more), charged %s (want 7)", n, cost)
	}
	if code, body, _ := call("evm-new", reloadProbeKey, blockNumber); code != 200 || !strings.Contains(body, `"result"`) {
		t.Fatalf("v2: the added evm-new: %d %s", code, body)
	}
	if code, body, _ := call("evm-gone", reloadProbeKey, blockNumber); code != 404 || !strings.Contains(body, `"code":-32048`) {
		t.Fatalf("v2: the removed evm-gone: %d %s", code, body)
	}
	// evm-gone had no subscription: its nodes are closed once its calls
	// are done. (evm-a's old nodes stay: its subscription is open.)
	waitLog("a replaced network's nodes closed", 1)
	batch := "[" + strings.TrimSuffix(strings.Repeat(blockNumber+",", 4), ",") + "]"
	if code, body, _ := call("evm-a", reloadProbeKey, batch); code != 413 || !strings.Contains(body, `"code":-32043`) {
		t.Fatalf("v2: a batch of 4 under max_batch 3: %d %s", code, body)
	}
	moreHeads()

	// A bad config, by SIGHUP and by the admin API: refused, field named,
	// v2 still served.
	write(reloadConfig{aNode: nodeA, costA: 1, maxBatch: 100, badURL: true})
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	const field = "networks[1].upstreams[0].url"
	waitLog("config reload refused", 1)
	if !strings.Contains(c.logs.String(), field) {
		t.Fatalf("the refusal does not name %s:\n%s", field, c.logs)
	}
	if code, body := adminReload(); code != http.StatusUnprocessableEntity || !strings.Contains(body, field) {
		t.Fatalf("admin reload of a bad config: %d %s", code, body)
	}
	if n, cost := head(); n < 1000 || cost != "7" {
		t.Fatalf("after the bad config: evm-a at block %d, charged %s: not v2's", n, cost)
	}
	if code, body, _ := call("evm-new", reloadProbeKey, blockNumber); code != 200 {
		t.Fatalf("after the bad config: evm-new: %d %s", code, body)
	}

	// v3 by the admin API: evm-a back on A at cost 2, evm-gone back,
	// evm-new gone, a new key.
	if code, body, _ := call("evm-keep", reloadLateKey, blockNumber); code != 401 {
		t.Fatalf("the key late before it is imported: %d %s", code, body)
	}
	write(reloadConfig{aNode: nodeA, costA: 2, maxBatch: 100, gone: true, late: true})
	if code, body := adminReload(); code != 200 || !strings.Contains(body, `"reloaded":true`) {
		t.Fatalf("admin reload: %d %s", code, body)
	}
	if n, cost := head(); n >= 1000 || cost != "2" {
		t.Fatalf("v3: evm-a at block %d (want A's), charged %s (want 2)", n, cost)
	}
	if code, body, _ := call("evm-gone", reloadProbeKey, blockNumber); code != 200 {
		t.Fatalf("v3: evm-gone back: %d %s", code, body)
	}
	if code, body, _ := call("evm-new", reloadProbeKey, blockNumber); code != 404 || !strings.Contains(body, `"code":-32048`) {
		t.Fatalf("v3: the removed evm-new: %d %s", code, body)
	}
	if code, body, _ := call("evm-keep", reloadLateKey, blockNumber); code != 200 {
		t.Fatalf("v3: the imported key late: %d %s", code, body)
	}
	if code, body, _ := call("evm-a", reloadProbeKey, batch); code != 200 || strings.Contains(body, `"error"`) {
		t.Fatalf("v3: a batch of 4 under max_batch 100: %d %s", code, body)
	}
	// evm-a's and evm-new's nodes of v2 are closed too; evm-a's of v1
	// still serve its subscription, which moreHeads sees alive.
	waitLog("a replaced network's nodes closed", 3)
	moreHeads()

	close(stop)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d calls or notifications failed across the reloads; the first: %s", n, calls.Load(), first)
	}
	t.Logf("%d calls, %d and %d heads on the subscriptions of evm-a and evm-keep, no error", calls.Load(), heads["evm-a"].Load(), heads["evm-keep"].Load())
}
