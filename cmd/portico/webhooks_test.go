package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm/evmtx"
	"github.com/porticohq/portico/gateway/webhook"
	"github.com/porticohq/portico/internal/anvil"
)

// receiver is a webhook receiver that fails a share of first attempts
// (chosen by the delivery id, so a retry of the same delivery succeeds)
// and keeps what it accepted, deduplicated by delivery id.
type receiver struct {
	secret string
	// failPercent of deliveries fail their first attempt.
	failPercent int
	// down fails every attempt while set.
	down bool

	mu       sync.Mutex
	seen     map[string]bool // delivery ids accepted
	tried    map[string]int  // attempts per delivery id
	got      []webhook.Payload
	badSigns int
	srv      *httptest.Server
}

func newReceiver(t testing.TB, secret string, failPercent int) *receiver {
	r := &receiver{secret: secret, failPercent: failPercent, seen: map[string]bool{}, tried: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get(webhook.HeaderDelivery)
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Header.Get(webhook.HeaderSignature) != webhook.Sign(body, r.secret) {
		r.badSigns++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.tried[id]++
	if r.down {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	sum := sha256.Sum256([]byte(id))
	if r.tried[id] == 1 && int(sum[0])%100 < r.failPercent {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if r.seen[id] {
		return // a retry of what was taken: 2xx, nothing new
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.seen[id] = true
	r.got = append(r.got, p)
}

// payloads returns what was accepted, in order.
func (r *receiver) payloads() []webhook.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhook.Payload(nil), r.got...)
}

// waitFor polls until ok holds of what was accepted.
func (r *receiver) waitFor(t testing.TB, what string, d time.Duration, ok func([]webhook.Payload) bool) []webhook.Payload {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := r.payloads()
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver: %s: not within %s; got %d deliveries", what, d, len(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hasBlock says whether the receiver took block hash (not removed).
func hasBlock(got []webhook.Payload, hash string) bool {
	for _, p := range got {
		if strings.EqualFold(p.Block.Hash, hash) && !p.Block.Removed {
			return true
		}
	}
	return false
}

// adminCall calls the admin API and decodes the answer into out.
func adminCall(t testing.TB, base, token, method, path string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode
}

// checkChain checks that the deliveries of a newHeads webhook, read as
// a stream (a removed block undoes the last block taken), end on the
// chain direct serves from block from to its head, every block in parent
// order, and that the blocks in dropped were taken back.
func checkChain(t *testing.T, ctx context.Context, direct *ethclient.Client, got []webhook.Payload, from uint64, dropped []common.Hash) {
	t.Helper()
	var chain []webhook.PayloadBlock
	removed := map[string]bool{}
	for _, p := range got {
		b := p.Block
		if b.Removed {
			if len(chain) == 0 || chain[len(chain)-1].Hash != b.Hash {
				t.Fatalf("removed block %d %s is not the last block taken", b.Number, b.Hash)
			}
			chain = chain[:len(chain)-1]
			removed[strings.ToLower(b.Hash)] = true
			continue
		}
		if n := len(chain); n > 0 && chain[n-1].Hash != b.ParentHash {
			t.Fatalf("block %d %s does not follow %d %s", b.Number, b.Hash, chain[n-1].Number, chain[n-1].Hash)
		}
		chain = append(chain, b)
	}
	head, err := direct.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) == 0 || chain[len(chain)-1].Hash != head.Hash().Hex() {
		t.Fatalf("the receiver's chain does not end at the head %d", head.Number)
	}
	for i := len(chain) - 1; i >= 0 && uint64(chain[i].Number) >= from; i-- {
		h, err := direct.HeaderByNumber(ctx, bigOf(uint64(chain[i].Number)))
		if err != nil {
			t.Fatal(err)
		}
		if h.Hash().Hex() != chain[i].Hash {
			t.Fatalf("block %d: receiver has %s, the chain %s", chain[i].Number, chain[i].Hash, h.Hash())
		}
	}
	for _, d := range dropped {
		if !removed[strings.ToLower(d.Hex())] {
			t.Errorf("dropped block %s was not delivered as removed", d)
		}
	}
}

// TestWebhookNewHeads: a newHeads webhook made through the admin API, a
// receiver that fails 30% of first attempts: every block arrives signed,
// in parent order, each once; a 3-block reorg on anvil comes as the 3
// dropped blocks removed, then the new branch.
func TestWebhookNewHeads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newHookRig(t, ctx)
	base, direct, raw := r.base, r.direct, r.raw

	rec := newReceiver(t, "receiver-secret-0123456789", 30)
	// Bad input names the field and stores nothing.
	for _, c := range []struct {
		req   map[string]any
		field string
	}{
		{map[string]any{"network": "nope", "event": "newHeads", "url": rec.srv.URL, "secret": rec.secret}, "network"},
		{map[string]any{"network": "anvil", "event": "blocks", "url": rec.srv.URL, "secret": rec.secret}, "event"},
		{map[string]any{"network": "anvil", "event": "newHeads", "url": "ftp://x", "secret": rec.secret}, "url"},
		{map[string]any{"network": "anvil", "event": "newHeads", "url": rec.srv.URL, "secret": "short"}, "secret"},
		{map[string]any{"network": "anvil", "event": "address", "filter": map[string]any{"address": "0x12"}, "url": rec.srv.URL, "secret": rec.secret}, "filter"},
	} {
		var e struct{ Error string }
		if st := adminCall(t, base, hookAdminToken, "POST", "/admin/v1/keys/hooks/webhooks", c.req, &e); st != http.StatusBadRequest || !strings.Contains(e.Error, c.field) {
			t.Errorf("%v: %d %q, want 400 naming %s", c.req, st, e.Error, c.field)
		}
	}
	var made struct{ ID string }
	if st := adminCall(t, base, hookAdminToken, "POST", "/admin/v1/keys/hooks/webhooks",
		map[string]any{"network": "anvil", "event": "newHeads", "url": rec.srv.URL, "secret": rec.secret}, &made); st != http.StatusCreated || made.ID == "" {
		t.Fatalf("create: %d %+v", st, made)
	}
	start, err := direct.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The first delivery is the first head after the webhook started.
	rec.waitFor(t, "a first delivery", time.Minute, func(got []webhook.Payload) bool {
		if len(got) == 0 {
			_ = raw.CallContext(ctx, nil, "evm_mine")
		}
		return len(got) > 0
	})
	for range 10 {
		if err := raw.CallContext(ctx, nil, "evm_mine"); err != nil {
			t.Fatal(err)
		}
	}
	top, err := direct.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "the head", time.Minute, func(got []webhook.Payload) bool { return hasBlock(got, top.Hash().Hex()) })
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
	got := rec.waitFor(t, "the new head", time.Minute, func(got []webhook.Payload) bool { return hasBlock(got, newTop.Hash().Hex()) })
	checkChain(t, ctx, direct, got, start+1, dropped)
	for _, p := range got {
		if p.Webhook != made.ID || p.Network != "anvil" || p.Event != "newHeads" || (!p.Block.Removed && len(p.Data) < 10) {
			t.Fatalf("delivery %+v", p)
		}
	}
	rec.mu.Lock()
	bad := rec.badSigns
	rec.mu.Unlock()
	if bad != 0 {
		t.Errorf("%d deliveries with a bad signature", bad)
	}

	var list []struct {
		ID, State string
		Delivered int64
		Cursor    *struct{ Number int64 }
	}
	if st := adminCall(t, base, hookAdminToken, "GET", "/admin/v1/keys/hooks/webhooks", nil, &list); st != 200 || len(list) != 1 ||
		list[0].State != "active" || list[0].Delivered < int64(len(got)) || list[0].Cursor == nil {
		t.Fatalf("list: %d %+v", st, list)
	}
	if st := adminCall(t, base, hookAdminToken, "DELETE", "/admin/v1/keys/hooks/webhooks/"+made.ID, nil, nil); st != 200 {
		t.Fatalf("delete: %d", st)
	}
	if st := adminCall(t, base, hookAdminToken, "DELETE", "/admin/v1/keys/hooks/webhooks/"+made.ID, nil, nil); st != 404 {
		t.Fatalf("delete again: %d", st)
	}
}

func bigOf(n uint64) *big.Int { return new(big.Int).SetUint64(n) }

// hookRig is a portico in front of anvil with the key "hooks" (hookKey),
// the admin token hookAdminToken and webhooks allowed to private URLs;
// base is its admin API, direct and raw reach anvil itself.
type hookRig struct {
	node   *anvil.Node
	base   string
	direct *ethclient.Client
	raw    *rpc.Client
}

func newHookRig(t *testing.T, ctx context.Context) *hookRig {
	t.Helper()
	node := startAnvil(t, ctx)
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "hooks", Key: hookKey, DailyCredits: 1e12}}
	cfg.Admin.Token = hookAdminToken
	cfg.Webhooks.AllowPrivateURLs = true
	cfg.Networks = []config.Network{{Name: "anvil", Family: "evm", PollInterval: 100 * time.Millisecond,
		Upstreams: []config.Upstream{{URL: node.URL(), WSURL: node.WSURL()}}}}
	s := start(t, cfg)
	direct, err := ethclient.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	raw, err := rpc.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	return &hookRig{node: node, base: "http://" + s.m.Shared, direct: direct, raw: raw}
}

// TestWebhookReceiverDown: while its receiver is down, a webhook's new
// deliveries outgrow what its worker hands over in memory (32), and the
// worker goes back to reading its outbox; once the receiver is up, it
// gets every block, in parent order, each once.
func TestWebhookReceiverDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newHookRig(t, ctx)
	base, direct, raw := r.base, r.direct, r.raw
	rec := newReceiver(t, "receiver-secret-0123456789", 0)
	var made struct{ ID string }
	if st := adminCall(t, base, hookAdminToken, "POST", "/admin/v1/keys/hooks/webhooks",
		map[string]any{"network": "anvil", "event": "newHeads", "url": rec.srv.URL, "secret": rec.secret}, &made); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	start, err := direct.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "a first delivery", time.Minute, func(got []webhook.Payload) bool {
		if len(got) == 0 {
			_ = raw.CallContext(ctx, nil, "evm_mine")
		}
		return len(got) > 0
	})
	rec.mu.Lock()
	rec.down = true
	rec.mu.Unlock()
	for range 48 {
		if err := raw.CallContext(ctx, nil, "evm_mine"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // heads one by one, not skipped
	}
	top, err := direct.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The webhook's outbox holds the blocks the receiver has not taken.
	for deadline := time.Now().Add(time.Minute); ; {
		var list []struct{ Pending int64 }
		adminCall(t, base, hookAdminToken, "GET", "/admin/v1/keys/hooks/webhooks", nil, &list)
		if len(list) == 1 && list[0].Pending >= 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the outbox did not fill while the receiver was down: %+v", list)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rec.mu.Lock()
	rec.down = false
	rec.mu.Unlock()
	got := rec.waitFor(t, "the head", 2*time.Minute, func(got []webhook.Payload) bool { return hasBlock(got, top.Hash().Hex()) })
	checkChain(t, ctx, direct, got, start+1, nil)
}

// TestKeysWebhooksCLI: portico keys webhooks add, list, resume and
// delete on a data directory's store; bad input names the field.
func TestKeysWebhooksCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runOK := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, args, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}
	runOK("keys", "create", "--data-dir", dir, "--name", "hooks")
	add := []string{"keys", "webhooks", "add", "hooks", "--data-dir", dir, "--network", "evm-devnet", "--event", "newHeads", "--secret", "0123456789abcdef0"}
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"--url", "ftp://example.com/"}, "url"},
		{[]string{"--url", "https://example.com/", "--filter", "{"}, "filter"},
	} {
		err := run(ctx, append(append([]string{}, add...), c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.field)
		}
	}
	out := runOK(append(add, "--url", "https://example.com/hook")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id := lines[len(lines)-1]
	if !strings.HasPrefix(id, "wh_") {
		t.Fatalf("add printed %q", out)
	}
	if list := runOK("keys", "webhooks", "list", "hooks", "--data-dir", dir); !strings.Contains(list, id) || !strings.Contains(list, "active") ||
		strings.Contains(list, "0123456789abcdef0") {
		t.Fatalf("list:\n%s", list)
	}
	runOK("keys", "webhooks", "resume", "hooks", id, "--data-dir", dir)
	runOK("keys", "webhooks", "delete", "hooks", id, "--data-dir", dir)
	if list := runOK("keys", "webhooks", "list", "hooks", "--data-dir", dir); strings.Contains(list, id) {
		t.Fatalf("after delete:\n%s", list)
	}
}

// TestWebhookLogsAndAddress: a logs webhook on an emitter contract and an
// address webhook on the account that calls it: each call's log arrives
// on the first (the log as data) and the call on the second (the
// transaction and the log), quiet blocks are not delivered, and a reorg
// of the last block delivers its log again with removed: true.
func TestWebhookLogsAndAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newHookRig(t, ctx)
	node, base, direct, raw := r.node, r.base, r.direct, r.raw
	chainID, err := direct.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys := node.DevKeys()
	sender := &evmtx.Sender{Client: direct, ChainID: chainID, Keys: keys[:1]}
	deploy, emitter, err := sender.Deploy(ctx, keys[1], evmtx.EmitterInit)
	if err != nil {
		t.Fatal(err)
	}
	waitMined(t, ctx, direct, deploy)
	caller := crypto.PubkeyToAddress(keys[0].PublicKey)

	logs := newReceiver(t, "receiver-secret-logs-0123", 30)
	acts := newReceiver(t, "receiver-secret-addr-0123", 30)
	for _, h := range []struct {
		rec    *receiver
		event  string
		filter map[string]any
	}{
		{logs, "logs", map[string]any{"address": emitter.Hex()}},
		{acts, "address", map[string]any{"address": caller.Hex()}},
	} {
		if st := adminCall(t, base, hookAdminToken, "POST", "/admin/v1/keys/hooks/webhooks",
			map[string]any{"network": "anvil", "event": h.event, "filter": h.filter, "url": h.rec.srv.URL, "secret": h.rec.secret}, nil); st != http.StatusCreated {
			t.Fatalf("create %s: %d", h.event, st)
		}
	}
	// The webhooks subscribe when their workers start: calls until both
	// have delivered one, then three calls with quiet blocks between.
	call := func() common.Hash {
		tx, err := sender.Call(ctx, keys[0], emitter)
		if err != nil {
			t.Fatal(err)
		}
		waitMined(t, ctx, direct, tx)
		return tx
	}
	for len(logs.payloads()) == 0 || len(acts.payloads()) == 0 {
		call()
		time.Sleep(100 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatal("the webhooks never delivered")
		}
	}
	warm := len(acts.payloads())
	var txs []common.Hash
	for range 3 {
		mine(t, ctx, raw, 1) // quiet for the address
		txs = append(txs, call())
	}
	last, err := direct.TransactionReceipt(ctx, txs[len(txs)-1])
	if err != nil {
		t.Fatal(err)
	}
	lastBlock := last.BlockHash.Hex()
	logs.waitFor(t, "the last call's log", time.Minute, func(got []webhook.Payload) bool { return hasBlock(got, lastBlock) })
	got := acts.waitFor(t, "the last call", time.Minute, func(got []webhook.Payload) bool { return hasBlock(got, lastBlock) })
	for _, p := range got {
		var d struct {
			Transactions []struct{ Hash, From string }
			Logs         []struct{ Address string }
		}
		if err := json.Unmarshal(p.Data, &d); err != nil || len(d.Transactions) != 1 || !strings.EqualFold(d.Transactions[0].From, caller.Hex()) ||
			len(d.Logs) != 0 {
			t.Fatalf("address delivery %s: %v", p.Data, err)
		}
	}
	if len(got) < warm+len(txs) {
		t.Fatalf("address webhook: %d deliveries", len(got))
	}
	for i, tx := range txs {
		r, err := direct.TransactionReceipt(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		if p := got[len(got)-len(txs)+i]; p.Block.Hash != r.BlockHash.Hex() {
			t.Errorf("address delivery %d is block %d %s, want the call's block %s: quiet blocks are not delivered", i, p.Block.Number, p.Block.Hash, r.BlockHash)
		}
	}

	if err := raw.CallContext(ctx, nil, "anvil_reorg", 1, []any{}); err != nil {
		t.Fatalf("anvil_reorg: %v", err)
	}
	got = logs.waitFor(t, "the reorged log as removed", time.Minute, func(got []webhook.Payload) bool {
		for _, p := range got {
			if p.Block.Hash == lastBlock && p.Block.Removed {
				return true
			}
		}
		return false
	})
	for _, p := range got {
		var l struct {
			Address string
			Removed bool
		}
		if err := json.Unmarshal(p.Data, &l); err != nil || !strings.EqualFold(l.Address, emitter.Hex()) || l.Removed != p.Block.Removed {
			t.Fatalf("logs delivery %+v: %s", p.Block, p.Data)
		}
	}
	acts.waitFor(t, "the reorged call as removed", time.Minute, func(got []webhook.Payload) bool {
		for _, p := range got {
			if p.Block.Hash == lastBlock && p.Block.Removed {
				return true
			}
		}
		return false
	})
}
