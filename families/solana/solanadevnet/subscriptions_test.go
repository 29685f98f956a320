package solanadevnet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/ws"
)

// The tests here talk to the devnet's own WebSocket endpoint with
// solana-go's ws client, as a client of a real node would. Slots are
// stepped by the test (manual), so every notification is known in advance;
// waits are bounded by waitCtx and nothing asserts on time.

// subConfig is a small deterministic devnet: no traffic, no skips or drops
// (manual turns them off), roots 4 slots behind.
func subConfig() Config {
	return Config{Seed: 11, ConfirmDepth: 2, FinalizeDepth: 4, KeepSlots: 64, SlotsPerEpoch: 64}
}

// wsConnect connects solana-go's ws client to the devnet.
func wsConnect(t *testing.T, d *Devnet) *ws.Client {
	t.Helper()
	c, err := ws.Connect(waitCtx(t), d.WSURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitJoined waits until n subscriptions have joined the devnet's hub: their
// ids have been answered, so the slots stepped next reach them.
func waitJoined(t *testing.T, d *Devnet, n int) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		d.subs.mu.Lock()
		joined, ch := d.subs.joined, d.subs.changed
		d.subs.mu.Unlock()
		if joined == n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%d subscriptions joined, want %d", joined, n)
		}
	}
}

// testKey is a fixed key, so that runs are reproducible.
func testKey(name string) solana.PrivateKey { return devKey("test " + name) }

func TestSlotAndRootSubscribe(t *testing.T) {
	d, _ := manual(t, subConfig())
	c := wsConnect(t, d)
	slots, err := c.SlotSubscribe()
	if err != nil {
		t.Fatal(err)
	}
	roots, err := c.RootSubscribe()
	if err != nil {
		t.Fatal(err)
	}
	waitJoined(t, d, 2)
	steps(d, 8)
	ctx := waitCtx(t)
	for want := uint64(1); want <= 8; want++ {
		got, err := slots.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The root is the one the slot started from: 4 slots behind the
		// slot before it.
		wantRoot := uint64(0)
		if want > 5 {
			wantRoot = want - 5
		}
		if got.Slot != want || got.Parent != want-1 || got.Root != wantRoot {
			t.Fatalf("slot notification %+v, want slot %d parent %d root %d", got, want, want-1, wantRoot)
		}
	}
	for want := uint64(1); want <= 4; want++ {
		got, err := roots.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(*got) != want {
			t.Fatalf("root %d, want %d", *got, want)
		}
	}
	// Unsubscribing the slots leaves the roots.
	slots.Unsubscribe()
	waitJoined(t, d, 1)
	steps(d, 1)
	if got, err := roots.Recv(ctx); err != nil || uint64(*got) != 5 {
		t.Fatalf("root after unsubscribing slots: %v %v", got, err)
	}
}

func TestAccountSubscribe(t *testing.T) {
	d, c := manual(t, subConfig())
	wc := wsConnect(t, d)
	bob := testKey("bob").PublicKey()
	atProcessed, err := wc.AccountSubscribe(bob, rpc.CommitmentProcessed)
	if err != nil {
		t.Fatal(err)
	}
	atFinalized, err := wc.AccountSubscribeWithOpts(bob, rpc.CommitmentFinalized, solana.EncodingBase58)
	if err != nil {
		t.Fatal(err)
	}
	waitJoined(t, d, 2)
	ctx := waitCtx(t)
	if _, err := c.RequestAirdrop(ctx, bob, lamportsPerSOL, rpc.CommitmentProcessed); err != nil {
		t.Fatal(err)
	}
	steps(d, 1)
	got, err := atProcessed.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context.Slot != 1 || got.Value.Lamports != lamportsPerSOL || got.Value.Owner != solana.SystemProgramID || len(got.Value.Data.GetBinary()) != 0 {
		t.Fatalf("processed notification: slot %d %+v", got.Context.Slot, got.Value)
	}
	// Nothing touches bob until the root reaches slot 1; the next
	// processed notification is the second transfer's.
	steps(d, 4)
	got, err = atFinalized.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context.Slot != 1 || got.Value.Lamports != lamportsPerSOL {
		t.Fatalf("finalized notification: slot %d %+v", got.Context.Slot, got.Value)
	}
	sendTransfer(t, c, d.Faucet(), bob, 5000, false)
	steps(d, 1)
	got, err = atProcessed.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context.Slot != 6 || got.Value.Lamports != lamportsPerSOL+5000 {
		t.Fatalf("second processed notification: slot %d %+v", got.Context.Slot, got.Value)
	}
}

func TestLogsSubscribe(t *testing.T) {
	d, c := manual(t, subConfig())
	wc := wsConnect(t, d)
	bob := testKey("bob").PublicKey()
	mentions, err := wc.LogsSubscribeMentions(bob, rpc.CommitmentProcessed)
	if err != nil {
		t.Fatal(err)
	}
	all, err := wc.LogsSubscribe(ws.LogsSubscribeFilterAll, rpc.CommitmentProcessed)
	if err != nil {
		t.Fatal(err)
	}
	withVotes, err := wc.LogsSubscribe(ws.LogsSubscribeFilterAllWithVotes, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	waitJoined(t, d, 3)
	sig := sendTransfer(t, c, d.Faucet(), bob, 7_000_000, false)
	steps(d, 3) // slot 1 holds the transfer; slot 3 confirms it
	ctx := waitCtx(t)

	got, err := mentions.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context.Slot != 1 || got.Value.Signature != sig || got.Value.Err != nil ||
		!slices.Contains(got.Value.Logs, "Program 11111111111111111111111111111111 invoke [1]") {
		t.Fatalf("mentions: %+v", got)
	}
	// "all" leaves the votes out: its first notification is the transfer.
	if got, err := all.Recv(ctx); err != nil || got.Value.Signature != sig {
		t.Fatalf("all: %+v %v", got, err)
	}
	// "allWithVotes" has slot 1 in block order: three votes, the transfer.
	d.mu.RLock()
	b1 := d.led.blocks[1]
	d.mu.RUnlock()
	for i, r := range b1.Txs {
		got, err := withVotes.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Context.Slot != 1 || got.Value.Signature != r.sig() || (i < 3) != isSimpleVote(r) {
			t.Fatalf("allWithVotes %d: %+v", i, got)
		}
	}
}

func TestProgramSubscribe(t *testing.T) {
	d, _ := manual(t, subConfig())
	wc := wsConnect(t, d)
	votes, err := wc.ProgramSubscribeWithOpts(voteProgram, rpc.CommitmentProcessed, solana.EncodingBase64,
		[]rpc.RPCFilter{{DataSize: voteDataLen}})
	if err != nil {
		t.Fatal(err)
	}
	// Validator a's vote account holds its identity at offset 24.
	va := d.keys.validators[0]
	one, err := wc.ProgramSubscribeWithOpts(voteProgram, rpc.CommitmentConfirmed, solana.EncodingBase64,
		[]rpc.RPCFilter{{Memcmp: &rpc.RPCFilterMemcmp{Offset: 24, Bytes: solana.Base58(va.identity.PublicKey().Bytes())}}})
	if err != nil {
		t.Fatal(err)
	}
	waitJoined(t, d, 2)
	// Slot 1's votes are on slot 0, which no vote can be newer than:
	// they fail and leave the vote accounts alone. From slot 2 on, each
	// block changes the three.
	steps(d, 4)
	ctx := waitCtx(t)
	want := sortedKeys(map[solana.PublicKey]bool{
		d.keys.validators[0].vote: true, d.keys.validators[1].vote: true, d.keys.validators[2].vote: true,
	})
	for slot := uint64(2); slot <= 4; slot++ {
		for _, k := range want {
			got, err := votes.Recv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			vs, ok := decodeVote(got.Value.Account.Data.GetBinary())
			if got.Context.Slot != slot || got.Value.Pubkey != k || got.Value.Account.Owner != voteProgram || !ok || vs.lastVote != slot-1 {
				t.Fatalf("slot %d: %s voted %d, want slot %d %s", got.Context.Slot, got.Value.Pubkey, vs.lastVote, slot, k)
			}
		}
	}
	got, err := one.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context.Slot != 2 || got.Value.Pubkey != va.vote {
		t.Fatalf("memcmp filter: slot %d %s", got.Context.Slot, got.Value.Pubkey)
	}
}

func TestSignatureSubscribe(t *testing.T) {
	d, c := manual(t, subConfig())
	wc := wsConnect(t, d)
	sig := sendTransfer(t, c, d.Faucet(), testKey("bob").PublicKey(), 1_000_000, false)
	sub, err := wc.SignatureSubscribe(sig, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	waitJoined(t, d, 1)
	steps(d, 3)
	ctx := waitCtx(t)
	got, err := sub.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context.Slot != 1 || got.Value.Err != nil {
		t.Fatalf("signature notification %+v", got)
	}
	// It ended itself: the hub holds nothing, so no second notification
	// can come.
	waitJoined(t, d, 0)
	d.subs.mu.Lock()
	n := d.subs.indexed
	d.subs.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d subscriptions still indexed", n)
	}

	// A signature already finalized is notified at once.
	steps(d, 4)
	again, err := wc.SignatureSubscribe(sig, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	got, err = again.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context.Slot != d.Slot("finalized") || got.Value.Err != nil {
		t.Fatalf("already finalized: %+v", got)
	}

	// A failed transaction reports its error.
	bad := failingTransfer(t, c, d.Faucet())
	failed, err := wc.SignatureSubscribe(bad, rpc.CommitmentProcessed)
	if err != nil {
		t.Fatal(err)
	}
	waitJoined(t, d, 1)
	steps(d, 1)
	got, err = failed.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := got.Value.Err.(map[string]any); !ok || e["InstructionError"] == nil {
		t.Fatalf("failed transaction: %+v", got.Value)
	}
}

// failingTransfer sends, without preflight, a transfer of more lamports
// than from holds: it lands and fails.
func failingTransfer(t *testing.T, c *rpc.Client, from solana.PrivateKey) solana.Signature {
	t.Helper()
	ctx := context.Background()
	bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentProcessed)
	if err != nil {
		t.Fatal(err)
	}
	tx := signedTransfer(t, from, testKey("carol").PublicKey(), 1<<62, bh.Value.Blockhash)
	sig, err := c.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestBlockSubscribe(t *testing.T) {
	d, c := manual(t, subConfig())
	wc := wsConnect(t, d)
	bob := testKey("bob").PublicKey()
	v0 := uint64(0)
	mentions, err := wc.BlockSubscribe(ws.NewBlockSubscribeFilterMentionsAccountOrProgram(bob), &ws.BlockSubscribeOpts{
		Commitment: rpc.CommitmentConfirmed, Encoding: solana.EncodingBase64,
		TransactionDetails: rpc.TransactionDetailsFull, MaxSupportedTransactionVersion: &v0,
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := wc.BlockSubscribe(ws.NewBlockSubscribeFilterAll(), &ws.BlockSubscribeOpts{
		Commitment: rpc.CommitmentProcessed, TransactionDetails: rpc.TransactionDetailsSignatures,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitJoined(t, d, 2)
	sig := sendTransfer(t, c, d.Faucet(), bob, 2_000_000, false)
	steps(d, 3)
	ctx := waitCtx(t)

	got, err := mentions.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := got.Value.Block
	if got.Context.Slot != 1 || got.Value.Slot != 1 || got.Value.Err != nil || b == nil || len(b.Transactions) != 1 {
		t.Fatalf("mentions: %+v", got.Value)
	}
	tx, err := b.Transactions[0].GetTransaction()
	if err != nil || tx.Signatures[0] != sig || b.Rewards != nil {
		t.Fatalf("mentions: transaction %v %v, rewards %v", tx, err, b.Rewards)
	}
	for slot := uint64(1); slot <= 3; slot++ {
		got, err := all.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d.mu.RLock()
		n := len(d.led.blocks[slot].Txs)
		d.mu.RUnlock()
		if got.Value.Slot != slot || len(got.Value.Block.Signatures) != n || got.Value.Block.Transactions != nil {
			t.Fatalf("all, slot %d: %+v", slot, got.Value)
		}
	}
}

// TestBlockSubscribeOptions: blockSubscribe checks its options by
// getBlock's rules, so a bad option gets the message getBlock gives.
func TestBlockSubscribeOptions(t *testing.T) {
	d, c := manual(t, subConfig())
	steps(d, 1)
	w := dialRaw(t, d)
	for _, cfg := range []string{
		`{"encoding":"hex"}`,
		`{"encoding":"binary"}`,
		`{"transactionDetails":"some"}`,
		`{"commitment":"recent"}`,
		`{"maxSupportedTransactionVersion":256}`,
		`{"maxSupportedTransactionVersion":"0"}`,
		`[]`,
	} {
		_, want := rawCall(t, c, "getBlock", 1, jsonValue(cfg))
		_, got := w.call("blockSubscribe", `["all",`+cfg+`]`)
		if want == nil || got == nil || got.Code != -32602 || got.Message != want.Message {
			t.Errorf("%s: blockSubscribe %+v, getBlock %+v", cfg, got, want)
		}
	}
	if _, e := w.call("blockSubscribe", `["all",{"showRewards":"yes"}]`); e == nil || e.Message != `invalid params: param 2 (config.showRewards): want a boolean, got string "yes"` {
		t.Errorf("showRewards: %+v", e)
	}
	// The good options of getBlock are taken.
	if id, e := w.call("blockSubscribe", `["all",{"encoding":"jsonParsed","transactionDetails":"accounts","showRewards":true,"commitment":"processed","maxSupportedTransactionVersion":0}]`); e != nil || id != "0" {
		t.Errorf("good options: %s %+v", id, e)
	}
}

// TestBlockSubscribeUnsupportedVersion: a block holding a v0 transaction,
// to a subscription without maxSupportedTransactionVersion, is reported
// as agave reports it: no block, its error.
func TestBlockSubscribeUnsupportedVersion(t *testing.T) {
	cfg := subConfig()
	cfg.Traffic = true
	d, _ := manual(t, cfg)
	w := dialRaw(t, d)
	id, e := w.call("blockSubscribe", `["all",{"commitment":"processed"}]`)
	if e != nil {
		t.Fatal(e)
	}
	waitJoined(t, d, 1)
	for range 2000 {
		steps(d, 1)
		d.mu.RLock()
		tip := d.led.tip()
		d.mu.RUnlock()
		msg := w.next()
		if !slices.ContainsFunc(tip.Txs, isV0) {
			if !strings.Contains(msg, `"err":null}`) {
				t.Fatalf("slot %d: %s", tip.Slot, msg)
			}
			continue
		}
		want := `{"jsonrpc":"2.0","method":"blockNotification","params":{"result":{"context":{"slot":` + itoa(tip.Slot) +
			`},"value":{"slot":` + itoa(tip.Slot) + `,"block":null,"err":{"UnsupportedTransactionVersion":0}}},"subscription":` + id + `}}`
		if msg != want {
			t.Fatalf("got  %s\nwant %s", msg, want)
		}
		return
	}
	t.Fatal("no v0 transaction in 2000 slots")
}

// TestSubscriptionsLiveDevnet: on a devnet producing slots on its own
// (skips, drops, traffic), slots arrive in increasing order, and Close
// ends the subscriptions with the connections.
func TestSubscriptionsLiveDevnet(t *testing.T) {
	d, _ := start(t, testConfig())
	wc := wsConnect(t, d)
	slots, err := wc.SlotSubscribe()
	if err != nil {
		t.Fatal(err)
	}
	logs, err := wc.LogsSubscribe(ws.LogsSubscribeFilterAll, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	ctx := waitCtx(t)
	var last uint64
	for range 10 {
		got, err := slots.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Slot <= last || got.Parent >= got.Slot || got.Root > got.Parent {
			t.Fatalf("slot %+v after %d", got, last)
		}
		last = got.Slot
	}
	if got, err := logs.Recv(ctx); err != nil || len(got.Value.Logs) == 0 {
		t.Fatalf("logs: %+v %v", got, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := slots.Recv(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("the subscription outlived Close")
			}
			break
		}
	}
	waitJoined(t, d, 0)
}

// TestDocsSubscriptionTable keeps the table of docs/solana-devnet.md in
// step with the methods served and the notifications they send.
func TestDocsSubscriptionTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "solana-devnet.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| method | params | notification | result |\n|---|---|---|---|\n")
	if !ok {
		t.Fatal("the subscriptions table is missing")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	seen := map[string]bool{}
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, " | ")
		method, note := strings.Trim(cells[0], "| `"), strings.Trim(cells[len(cells)-2], "`")
		kind, ok := pubsubMethods[method]
		if !ok || lookupSub(method) == nil || lookupSub(strings.TrimSuffix(method, "Subscribe")+"Unsubscribe") == nil {
			t.Errorf("%s is documented but not served", method)
			continue
		}
		if note != notificationMethods[kind] {
			t.Errorf("%s: documented notification %s, sends %s", method, note, notificationMethods[kind])
		}
		seen[method] = true
	}
	for m := range pubsubMethods {
		if !seen[m] {
			t.Errorf("%s is served but not documented", m)
		}
	}
}
