package solanadevnet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
)

// manual builds a devnet whose slots the test drives with d.step, served
// over real HTTP (and WebSocket, at d.WSURL()). Nothing runs in the
// background.
func manual(t *testing.T, cfg Config) (*Devnet, *rpc.Client) {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.init(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.cfg.SkipRate, d.cfg.DropRate = 0, 0
	srv := httptest.NewServer(d.Handler())
	d.url = srv.URL
	c := rpc.New(srv.URL)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		d.Close()
	})
	return d, c
}

func steps(d *Devnet, n int) {
	for range n {
		d.step(context.Background())
	}
}

func wantCode(t *testing.T, err error, code int, msg string) {
	t.Helper()
	got, gotMsg := rpcCode(err)
	if got != code || gotMsg != msg {
		t.Fatalf("got %d %q (%v), want %d %q", got, gotMsg, err, code, msg)
	}
}

func getBlockAt(c *rpc.Client, slot uint64, level rpc.CommitmentType) (*rpc.GetBlockResult, error) {
	v0 := uint64(0)
	return c.GetBlockWithOpts(context.Background(), slot, &rpc.GetBlockOpts{Commitment: level, MaxSupportedTransactionVersion: &v0})
}

// TestCommitmentSkipsAndCleanup walks slots by hand: a block seen at
// processed, then confirmed, then finalized; a processed block abandoned
// (its slot skipped) with the client's transaction in it moved to the next
// block; a leader-skipped slot; and ledger cleanup.
func TestCommitmentSkipsAndCleanup(t *testing.T) {
	d, c := manual(t, Config{ConfirmDepth: 2, FinalizeDepth: 8, KeepSlots: 20, Seed: 1})
	ctx := context.Background()
	steps(d, 1)
	if _, err := getBlockAt(c, 1, rpc.CommitmentProcessed); err != nil {
		t.Fatal("processed:", err)
	}
	_, err := getBlockAt(c, 1, rpc.CommitmentConfirmed)
	wantCode(t, err, -32004, "Block not available for slot 1")
	_, err = getBlockAt(c, 1, rpc.CommitmentFinalized)
	wantCode(t, err, -32004, "Block not available for slot 1")

	steps(d, 2) // slot 3: slot 1 is confirmed
	if _, err := getBlockAt(c, 1, rpc.CommitmentConfirmed); err != nil {
		t.Fatal("confirmed:", err)
	}
	_, err = getBlockAt(c, 1, rpc.CommitmentFinalized)
	wantCode(t, err, -32004, "Block not available for slot 1")

	// A client's transfer lands in slot 4, whose block is then abandoned.
	to := solana.NewWallet().PublicKey()
	sig := sendTransfer(t, c, d.Faucet(), to, 5_000_000, false)
	steps(d, 1)
	if b, err := getBlockAt(c, 4, rpc.CommitmentProcessed); err != nil || !blockHas(b, sig) {
		t.Fatalf("slot 4 at processed: %v", err)
	}
	d.cfg.DropRate = 1
	steps(d, 1) // slot 5 abandons slot 4
	d.cfg.DropRate = 0
	_, err = getBlockAt(c, 4, rpc.CommitmentProcessed)
	wantCode(t, err, -32004, "Block not available for slot 4")
	b5, err := getBlockAt(c, 5, rpc.CommitmentProcessed)
	if err != nil || b5.ParentSlot != 3 || !blockHas(b5, sig) {
		t.Fatalf("slot 5 should build on 3 and carry the requeued transfer: %v %+v", err, b5)
	}

	d.cfg.SkipRate = 1
	steps(d, 1) // slot 6: the leader skips
	d.cfg.SkipRate = 0
	steps(d, 10) // slot 16: root is 8
	if got := d.Slot("finalized"); got != 8 {
		t.Fatalf("finalized slot %d, want 8", got)
	}
	if b, err := getBlockAt(c, 1, rpc.CommitmentFinalized); err != nil || b.ParentSlot != 0 {
		t.Fatal("finalized:", err)
	}
	_, err = getBlockAt(c, 4, rpc.CommitmentFinalized)
	wantCode(t, err, -32007, "Slot 4 was skipped, or missing due to ledger jump to recent snapshot")
	_, err = getBlockAt(c, 6, rpc.CommitmentConfirmed)
	wantCode(t, err, -32007, "Slot 6 was skipped, or missing due to ledger jump to recent snapshot")
	_, err = getBlockAt(c, 1000, rpc.CommitmentProcessed)
	wantCode(t, err, -32004, "Block not available for slot 1000")
	for level, want := range map[rpc.CommitmentType]uint64{rpc.CommitmentProcessed: 16, rpc.CommitmentConfirmed: 14, rpc.CommitmentFinalized: 8} {
		if got, err := c.GetSlot(ctx, level); err != nil || got != want {
			t.Fatalf("getSlot %s = %d, %v; want %d", level, got, err, want)
		}
	}
	blocks, err := c.GetBlocks(ctx, 0, nil, rpc.CommitmentFinalized)
	if err != nil || fmt.Sprint(blocks) != "[0 1 2 3 5 7 8]" {
		t.Fatalf("getBlocks = %v, %v", blocks, err)
	}
	st, err := c.GetSignatureStatuses(ctx, false, sig)
	if err != nil || st.Value[0] == nil || st.Value[0].Slot != 5 || st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusFinalized {
		t.Fatalf("status: %v %+v", err, st)
	}
	if tx, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{}); err != nil || tx.Slot != 5 {
		t.Fatalf("getTransaction: %v", err)
	}

	// Cleanup: only the last 20 slots stay.
	steps(d, 30) // slot 46
	first, err := c.GetFirstAvailableBlock(ctx)
	if err != nil || first != 27 {
		t.Fatalf("first available %d, %v; want 27", first, err)
	}
	_, err = getBlockAt(c, 5, rpc.CommitmentFinalized)
	wantCode(t, err, -32001, "Block 5 cleaned up, does not exist on node. First available block: 27")
	b, err := getBlockAt(c, first, rpc.CommitmentFinalized)
	if err != nil || b.PreviousBlockhash.String() != "11111111111111111111111111111111" {
		t.Fatalf("oldest kept block: %v %+v", err, b)
	}
	if tx, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{}); err == nil && tx != nil {
		t.Fatal("a cleaned-up transaction is still found")
	}
	if sigs, err := c.GetSignaturesForAddress(ctx, to); err != nil || len(sigs) != 0 {
		t.Fatalf("signatures of a cleaned-up transaction: %v %v", sigs, err)
	}
	// getBalance still sees the transfer: accounts outlive blocks.
	if bal, err := c.GetBalance(ctx, to, rpc.CommitmentFinalized); err != nil || bal.Value != 5_000_000 {
		t.Fatalf("balance %v, %v", bal, err)
	}
}

func blockHas(b *rpc.GetBlockResult, sig solana.Signature) bool {
	if b == nil {
		return false
	}
	for _, tw := range b.Transactions {
		tx, err := tw.GetTransaction()
		if err == nil && tx.Signatures[0] == sig {
			return true
		}
	}
	return false
}

// sendTransfer signs a transfer with solana-go and sends it through the
// client (base64), or as base58 with a raw call.
func sendTransfer(t *testing.T, c *rpc.Client, from solana.PrivateKey, to solana.PublicKey, lamports uint64, base58 bool) solana.Signature {
	t.Helper()
	ctx := context.Background()
	bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentProcessed)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(lamports, from.PublicKey(), to).Build()}, bh.Value.Blockhash, solana.TransactionPayer(from.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey { return &from }); err != nil {
		t.Fatal(err)
	}
	if base58 {
		raw, _ := tx.MarshalBinary()
		var sig string
		if err := c.RPCCallForInto(ctx, &sig, "sendTransaction", []any{solana.Base58(raw).String()}); err != nil {
			t.Fatal(err)
		}
		if sig != tx.Signatures[0].String() {
			t.Fatalf("signature %s, want %s", sig, tx.Signatures[0])
		}
		return tx.Signatures[0]
	}
	sig, err := c.SendTransaction(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// TestSendTransactionErrors checks what a node refuses before queueing.
func TestSendTransactionErrors(t *testing.T) {
	d, c := manual(t, Config{Seed: 2})
	ctx := context.Background()
	steps(d, 1)
	poor := solana.NewWallet().PrivateKey
	bh, _ := c.GetLatestBlockhash(ctx, rpc.CommitmentProcessed)
	build := func(from solana.PrivateKey, recent solana.Hash, lamports uint64) *solana.Transaction {
		tx, _ := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(lamports, from.PublicKey(), solana.SystemProgramID).Build()}, recent, solana.TransactionPayer(from.PublicKey()))
		tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &from })
		return tx
	}
	faucet := d.Faucet()

	tx := build(faucet, solana.Hash{1}, 1)
	_, err := c.SendTransaction(ctx, tx)
	wantCode(t, err, -32002, "Transaction simulation failed: Blockhash not found")

	tx = build(poor, bh.Value.Blockhash, 1)
	_, err = c.SendTransaction(ctx, tx)
	wantCode(t, err, -32002, "Transaction simulation failed: Attempt to debit an account but found no record of a prior credit.")

	tx = build(faucet, bh.Value.Blockhash, 1)
	tx.Signatures[0][0] ^= 1
	_, err = c.SendTransaction(ctx, tx)
	wantCode(t, err, -32003, "Transaction signature verification failure")

	// More than the faucet holds: preflight refuses, skipPreflight lands
	// it as a failed transaction that still pays its fee.
	tx = build(faucet, bh.Value.Blockhash, 1<<62)
	_, err = c.SendTransaction(ctx, tx)
	wantCode(t, err, -32002, "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1")
	sig, err := c.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	steps(d, 1)
	var res rpc.GetTransactionResult
	if err := c.RPCCallForInto(ctx, &res, "getTransaction", []any{sig.String(), map[string]any{"commitment": "confirmed"}}); err != nil {
		t.Fatal(err)
	}
	steps(d, 2)
	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		t.Fatal(err)
	}
	errJSON, _ := json.Marshal(got.Meta.Err)
	if string(errJSON) != `{"InstructionError":[0,{"Custom":1}]}` || got.Meta.Fee != 5000 {
		t.Fatalf("failed transfer: err %s fee %d", errJSON, got.Meta.Fee)
	}
	if !strings.Contains(strings.Join(got.Meta.LogMessages, "\n"), "Transfer: insufficient lamports") {
		t.Fatalf("logs: %q", got.Meta.LogMessages)
	}
	checkConserved(t, got.Meta)

	_, rerr := rawCall(t, c, "sendTransaction", "not base58!")
	if rerr == nil || rerr.Code != -32602 {
		t.Fatalf("bad base58: %v", rerr)
	}
	_, rerr = rawCall(t, c, "sendTransaction", "AQID", map[string]any{"encoding": "base64"})
	if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "failed to deserialize") {
		t.Fatalf("short transaction: %v", rerr)
	}
	_, rerr = rawCall(t, c, "sendTransaction", "AQID", map[string]any{"encoding": "hex"})
	if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "config.encoding") {
		t.Fatalf("bad encoding: %v", rerr)
	}
}

// TestAirdropSurvivesAbandonedTip: an airdrop is signed against the
// confirmed block's hash, as agave's faucet signs against the bank's
// confirmed blockhash, so abandoning the processed tip it was requested
// at does not void it. Before, it was signed against the tip: when that
// block was abandoned (2% of blocks, more often on a loaded machine) its
// hash was gone, the airdrop expired unseen in the mempool, and a client
// waiting for it waited forever.
func TestAirdropSurvivesAbandonedTip(t *testing.T) {
	d, c := manual(t, Config{ConfirmDepth: 2, FinalizeDepth: 8, KeepSlots: 64, Seed: 1})
	ctx := context.Background()
	steps(d, 4) // slot 4 is the processed tip, slot 2 confirmed
	to := solana.NewWallet().PublicKey()
	sig, err := c.RequestAirdrop(ctx, to, 5_000_000, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	d.cfg.DropRate = 1
	steps(d, 1) // slot 5 abandons slot 4
	d.cfg.DropRate = 0
	steps(d, 3)
	st, err := c.GetSignatureStatuses(ctx, false, sig)
	if err != nil || st.Value[0] == nil || st.Value[0].Err != nil || st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusConfirmed {
		t.Fatalf("the airdrop after its tip was abandoned: %v %+v", err, st)
	}
	if bal, err := c.GetBalance(ctx, to, rpc.CommitmentConfirmed); err != nil || bal.Value != 5_000_000 {
		t.Fatalf("balance %v, %v; want 5000000", bal, err)
	}
}
