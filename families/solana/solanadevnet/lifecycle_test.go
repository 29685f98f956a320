package solanadevnet

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/go-json-experiment/json/jsontext"
)

// waitFinalized polls getSignatureStatuses until sig is finalized.
func waitFinalized(t *testing.T, c *rpc.Client, sig solana.Signature) uint64 {
	t.Helper()
	ctx := waitCtx(t)
	for {
		st, err := c.GetSignatureStatuses(ctx, true, sig)
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Value[0]; s != nil && s.ConfirmationStatus == rpc.ConfirmationStatusFinalized {
			return s.Slot
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not finalized", sig)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestSendAndPersist: an airdrop and two client transfers (base64 through
// solana-go, base58 raw) land in blocks; after a restart on the same data
// directory the blocks, balances and signatures are still there.
func TestSendAndPersist(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.DataDir = dir
	d, c := start(t, cfg)
	ctx := context.Background()

	alice, bob := solana.NewWallet().PrivateKey, solana.NewWallet().PublicKey()
	drop, err := c.RequestAirdrop(ctx, alice.PublicKey(), 2*lamportsPerSOL, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	waitFinalized(t, c, drop)
	sig1 := sendTransfer(t, c, alice, bob, 3_000_000, false)
	sig2 := sendTransfer(t, c, alice, bob, 4_000_000, true)
	slot1 := waitFinalized(t, c, sig1)
	waitFinalized(t, c, sig2)

	v0 := uint64(0)
	b1, err := c.GetBlockWithOpts(ctx, slot1, &rpc.GetBlockOpts{MaxSupportedTransactionVersion: &v0})
	if err != nil || !blockHas(b1, sig1) {
		t.Fatalf("block %d lacks the transfer: %v", slot1, err)
	}
	bal, err := c.GetBalance(ctx, bob, rpc.CommitmentFinalized)
	if err != nil || bal.Value != 7_000_000 {
		t.Fatalf("bob %v %v", bal, err)
	}
	sigs, err := c.GetSignaturesForAddress(ctx, bob)
	if err != nil || len(sigs) != 2 || sigs[0].Signature != sig2 || sigs[1].Signature != sig1 {
		t.Fatalf("signatures for bob: %v %+v", err, sigs)
	}
	genesis, _ := c.GetGenesisHash(ctx)
	root := d.Slot("finalized")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d2, c2 := start(t, cfg)
	if got := d2.Slot("finalized"); got < root {
		t.Fatalf("restarted at finalized slot %d, below %d", got, root)
	}
	if g, _ := c2.GetGenesisHash(ctx); g != genesis {
		t.Fatalf("genesis %s, want %s", g, genesis)
	}
	again, err := c2.GetBlockWithOpts(ctx, slot1, &rpc.GetBlockOpts{MaxSupportedTransactionVersion: &v0})
	if err != nil || again.Blockhash != b1.Blockhash || !blockHas(again, sig1) {
		t.Fatalf("block %d after restart: %v", slot1, err)
	}
	if bal, err := c2.GetBalance(ctx, bob, rpc.CommitmentFinalized); err != nil || bal.Value != 7_000_000 {
		t.Fatalf("bob after restart %v %v", bal, err)
	}
	if tx, err := c2.GetTransaction(ctx, sig2, &rpc.GetTransactionOpts{}); err != nil || tx == nil {
		t.Fatalf("getTransaction after restart: %v", err)
	}
	// The chain goes on: new blocks build on the stored root.
	if err := d2.WaitForSlot(waitCtx(t), "finalized", d2.Slot("finalized")+2); err != nil {
		t.Fatal(err)
	}
	sig3 := sendTransfer(t, c2, alice, bob, 1_000_000, false)
	waitFinalized(t, c2, sig3)

	// Without a data directory the devnet starts fresh.
	fresh, c3 := start(t, testConfig())
	_ = fresh
	if bal, err := c3.GetBalance(ctx, bob, rpc.CommitmentProcessed); err != nil || bal.Value != 0 {
		t.Fatalf("fresh devnet knows bob: %v %v", bal, err)
	}
}

// TestMethods covers the small methods solana-go's helpers call.
func TestMethods(t *testing.T) {
	d, c := manual(t, testConfig())
	steps(d, 20)
	ctx := context.Background()
	if v, err := c.GetVersion(ctx); err != nil || v.SolanaCore != coreVersion {
		t.Fatalf("version %v %v", v, err)
	}
	if h, err := c.GetHealth(ctx); err != nil || h != "ok" {
		t.Fatalf("health %q %v", h, err)
	}
	info, err := c.GetEpochInfo(ctx, rpc.CommitmentFinalized)
	if err != nil || info.AbsoluteSlot != d.Slot("finalized") || info.SlotsInEpoch != 32 || info.TransactionCount == nil || *info.TransactionCount == 0 {
		t.Fatalf("epoch info %+v %v", info, err)
	}
	h, err := c.GetBlockHeight(ctx, rpc.CommitmentConfirmed)
	if err != nil || h == 0 {
		t.Fatalf("height %d %v", h, err)
	}
	bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentFinalized)
	if err != nil || bh.Value.LastValidBlockHeight != info.BlockHeight+150 || bh.Context.Slot != d.Slot("finalized") {
		t.Fatalf("latest blockhash %+v %v", bh, err)
	}
	acct, err := c.GetAccountInfo(ctx, d.Faucet().PublicKey())
	if err != nil || acct.Value.Lamports == 0 || acct.Value.Owner != solana.SystemProgramID {
		t.Fatalf("faucet account %+v %v", acct, err)
	}
	if _, err := c.GetAccountInfo(ctx, solana.NewWallet().PublicKey()); err != rpc.ErrNotFound {
		t.Fatalf("unknown account: %v", err)
	}
	_, rerr := rawCall(t, c, "getBlock", 1, map[string]any{"commitment": "recent"})
	if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "config.commitment") {
		t.Fatalf("bad commitment: %v", rerr)
	}
	_, rerr = rawCall(t, c, "getTransaction", solana.Signature{}.String(), map[string]any{"commitment": "processed"})
	if rerr == nil || rerr.Message != "Method does not support commitment below `confirmed`" {
		t.Fatalf("processed getTransaction: %v", rerr)
	}
	_, rerr = rawCall(t, c, "getBalance", "not-a-key")
	if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "param 1 (pubkey)") {
		t.Fatalf("bad pubkey: %v", rerr)
	}
	_, rerr = rawCall(t, c, "getNothing")
	if rerr == nil || rerr.Code != -32601 {
		t.Fatalf("unknown method: %v", rerr)
	}
}

// TestBatchAndNotifications checks the envelope handling over HTTP.
func TestBatchAndNotifications(t *testing.T) {
	d, c := manual(t, testConfig())
	_ = c
	steps(d, 3)
	post := func(body string) string {
		rec := &recorder{header: http.Header{}}
		req, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		d.Handler().ServeHTTP(rec, req)
		return rec.body.String()
	}
	got := post(`[{"jsonrpc":"2.0","id":1,"method":"getHealth"},{"jsonrpc":"2.0","method":"getSlot"},{"jsonrpc":"2.0","id":"x","method":"getBlock","params":["1"]}]`)
	want := `[{"jsonrpc":"2.0","id":1,"result":"ok"},{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"invalid params: param 1 (slot): want an integer, got string \"1\""}}]`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := post(`{"jsonrpc":"2.0","method":"getSlot"}`); got != "" {
		t.Fatalf("notification answered: %s", got)
	}
	if got := post(`{`); !strings.Contains(got, `"code":-32700`) {
		t.Fatalf("parse error: %s", got)
	}
}

type recorder struct {
	header http.Header
	body   bytes.Buffer
	status int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }

// FuzzServe feeds arbitrary bodies to the request decoder and methods: no
// panic, and every answer is valid JSON.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[1,{"encoding":"jsonParsed","maxSupportedTransactionVersion":0}]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[0,"base64"]}]`,
		`{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["AQID",{"encoding":"base64"}]}`,
		`{"jsonrpc":"2.0","id":1,"method":"getSignaturesForAddress","params":["11111111111111111111111111111111",{"limit":0}]}`,
		`{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["11111111111111111111111111111111",{"dataSlice":{"offset":1,"length":2}}]}`,
		`{"jsonrpc":"2.0","id":1,"method":"getBlocks","params":[0,{"commitment":"confirmed"}]}`,
		`{"jsonrpc":"2.0","id":1,"method":"getSignatureStatuses","params":[["x"]]}`,
	} {
		f.Add(s)
	}
	d, err := New(Config{Seed: 3, Traffic: true, SlotsPerEpoch: 16, FinalizeDepth: 4, KeepSlots: 64})
	if err != nil {
		f.Fatal(err)
	}
	if err := d.init(context.Background()); err != nil {
		f.Fatal(err)
	}
	steps(d, 12)
	f.Fuzz(func(t *testing.T, body string) {
		out := d.serve([]byte(body))
		if out != nil && !jsontext.Value(out).IsValid() {
			t.Fatalf("invalid JSON answer %q to %q", out, body)
		}
	})
}
