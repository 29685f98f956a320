package main

import (
	"context"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/ws"

	"github.com/porticohq/portico/auth/wallet"
	"github.com/porticohq/portico/config"
)

// TestSubscriptionsSolana: solana-go's WebSocket client watches slots,
// an account's balance, logs mentioning it and a transaction's signature
// through the gateway, in front of the embedded slot-chain devnet.
func TestSubscriptionsSolana(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "subs", Key: "subs00123456789abcdef0123456789ab", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "solana", Family: "solana", Devnet: config.Devnet{BlockPeriod: 40 * time.Millisecond}}}
	s := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := rpc.New("http://" + s.addr(t, "solana") + "/v3/" + cfg.Keys[0].Key)
	wc, err := ws.Connect(ctx, "ws://"+s.addr(t, "solana")+"/ws/v3/"+cfg.Keys[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()

	slots, err := wc.SlotSubscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer slots.Unsubscribe()
	roots, err := wc.RootSubscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer roots.Unsubscribe()
	// Slots keep their meaning across the devnet's skipped slots: each
	// comes once, after the one before, its parent before it (a skipped
	// slot in between leaves a gap), its root never going back; and roots
	// never go back.
	var prev, prevRoot uint64
	for i := range 40 {
		got, err := slots.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && got.Slot <= prev {
			t.Fatalf("slot %d after %d", got.Slot, prev)
		}
		if got.Parent >= got.Slot || got.Root > got.Slot || got.Root < prevRoot {
			t.Fatalf("slot %d: parent %d, root %d (root before %d)", got.Slot, got.Parent, got.Root, prevRoot)
		}
		prev, prevRoot = got.Slot, got.Root
	}
	var prevR uint64
	for i := range 5 {
		r, err := roots.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && uint64(*r) <= prevR {
			t.Fatalf("root %d after %d", *r, prevR)
		}
		prevR = uint64(*r)
	}

	payer, _ := solana.NewRandomPrivateKey()
	airdrop, err := c.RequestAirdrop(ctx, payer.PublicKey(), 2*solana.LAMPORTS_PER_SOL, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, t, c, airdrop, rpc.ConfirmationStatusConfirmed)

	to := solana.NewWallet().PublicKey()
	account, err := wc.AccountSubscribe(to, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	defer account.Unsubscribe()
	logs, err := wc.LogsSubscribeMentions(to, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Unsubscribe()

	// Sent as a careful wallet sends it (wallet.SolanaSender); each
	// signing's signature is subscribed to before it is sent.
	var signature *ws.SignatureSubscription
	sender := &wallet.SolanaSender{RPC: c, Signed: func(tx *solana.Transaction) error {
		if signature != nil {
			signature.Unsubscribe()
		}
		var err error
		signature, err = wc.SignatureSubscribe(tx.Signatures[0], rpc.CommitmentConfirmed)
		return err
	}}
	sent, err := sender.Send(ctx, payer.PublicKey(), func(tx *solana.Transaction) error {
		_, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &payer })
		return err
	}, system.NewTransferInstruction(1_000_000, payer.PublicKey(), to).Build())
	if err != nil {
		t.Fatal(err)
	}

	acct, err := account.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if acct.Value.Lamports != 1_000_000 {
		t.Fatalf("account notification: %d lamports, want 1000000", acct.Value.Lamports)
	}
	l, err := logs.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Value.Signature != sent || len(l.Value.Logs) == 0 {
		t.Fatalf("logs notification: %+v", l.Value)
	}
	sig, err := signature.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sig.Value.Err != nil {
		t.Fatalf("signature notification: %+v", sig.Value)
	}
}
