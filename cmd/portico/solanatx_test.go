package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/ws"
	"github.com/mr-tron/base58"

	"github.com/porticohq/portico/config"
)

// slotTxFront is a node in front of the slot chain's devnet for fault
// injection: a dropper answers sendTransaction with the transaction's
// signature and never passes it on; a lossy front drops the first send
// of each transaction and passes on the next, and drops every send of
// the signatures in hole. It counts the sends.
type slotTxFront struct {
	node  string
	drop  bool
	lossy bool
	mu    sync.Mutex
	seen  map[solana.Signature]bool
	hole  map[solana.Signature]bool
	sends atomic.Int64
	srv   *httptest.Server
}

func newSlotTxFront(t *testing.T, f *slotTxFront) *slotTxFront {
	f.seen, f.hole = map[solana.Signature]bool{}, map[solana.Signature]bool{}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *slotTxFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params []json.RawMessage
	}
	if json.Unmarshal(body, &req) == nil && req.Method == "sendTransaction" && len(req.Params) > 0 {
		f.sends.Add(1)
		if sig, ok := slotSignature(req.Params); ok && f.drops(sig) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%q}`, req.ID, sig)
			return
		}
	}
	forwardTo(w, f.node, body)
}

// drops says whether the front drops this send of sig.
func (f *slotTxFront) drops(sig solana.Signature) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := !f.seen[sig]
	f.seen[sig] = true
	return f.drop || f.hole[sig] || (f.lossy && first)
}

// slotSignature reads the first signature of sendTransaction's params.
func slotSignature(params []json.RawMessage) (solana.Signature, bool) {
	var s string
	var cfg struct {
		Encoding string `json:"encoding"`
	}
	if json.Unmarshal(params[0], &s) != nil || (len(params) > 1 && json.Unmarshal(params[1], &cfg) != nil) {
		return solana.Signature{}, false
	}
	var raw []byte
	var err error
	if cfg.Encoding == "base64" {
		raw, err = base64.StdEncoding.DecodeString(s)
	} else {
		raw, err = base58.Decode(s)
	}
	if err != nil {
		return solana.Signature{}, false
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil || len(tx.Signatures) == 0 {
		return solana.Signature{}, false
	}
	return tx.Signatures[0], true
}

// fundedPayer is a new account the devnet at node airdropped 2 SOL to,
// asked again should an airdrop not land.
func fundedPayer(ctx context.Context, t *testing.T, node string) solana.PrivateKey {
	t.Helper()
	payer, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	c := rpc.New(node)
	for ctx.Err() == nil {
		sig, err := c.RequestAirdrop(ctx, payer.PublicKey(), 2*solana.LAMPORTS_PER_SOL, rpc.CommitmentConfirmed)
		if err != nil {
			t.Fatal(err)
		}
		if reached(ctx, c, sig, 15*time.Second) {
			return payer
		}
	}
	t.Fatal("no airdrop landed")
	return nil
}

// reached polls sig's status on c until it is confirmed, for at most
// wait.
func reached(ctx context.Context, c *rpc.Client, sig solana.Signature, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		res, err := c.GetSignatureStatuses(ctx, false, sig)
		if err == nil && len(res.Value) == 1 && res.Value[0] != nil && res.Value[0].Err == nil &&
			(res.Value[0].ConfirmationStatus == rpc.ConfirmationStatusConfirmed || res.Value[0].ConfirmationStatus == rpc.ConfirmationStatusFinalized) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// slotTransfer signs a transfer of lamports from payer against a confirmed
// blockhash read through c.
func slotTransfer(ctx context.Context, t *testing.T, c *rpc.Client, payer solana.PrivateKey, lamports uint64) *solana.Transaction {
	t.Helper()
	bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(lamports, payer.PublicKey(), solana.NewWallet().PublicKey()).Build()},
		bh.Value.Blockhash, solana.TransactionPayer(payer.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &payer }); err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestSlotSendLands: the slot chain's devnet behind two fronts, one that
// drops every sendTransaction and one that drops the first send of each:
// a transfer signed with solana-go and sent once through Portico lands,
// because Portico sends it again until it is confirmed, and a
// signatureSubscribe through Portico reports it; one that every
// node drops is sent again until its blockhash expires, then let go as
// expired (portico_transactions_total{event="expired"}), not resent for
// ever.
func TestSlotSendLands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	devnet := config.DefaultConfig()
	devnet.Networks = []config.Network{{Name: "solana-devnet", Family: "solana", Devnet: config.Devnet{BlockPeriod: 50 * time.Millisecond}}}
	dn := start(t, devnet).m.Devnets["solana-devnet"]
	node := dn.HTTPURL()
	payer := fundedPayer(ctx, t, node)

	drop := newSlotTxFront(t, &slotTxFront{node: node, drop: true})
	lossy := newSlotTxFront(t, &slotTxFront{node: node, lossy: true})
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "k", Key: "slotsend0123456789abcdef01234567", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "solana", Family: "solana", Hedge: config.Hedge{Disabled: true}, PollInterval: 100 * time.Millisecond,
		Transactions: config.Transactions{ResendAfter: 300 * time.Millisecond},
		// The fronts drop sends; subscriptions go to the node itself.
		Upstreams: []config.Upstream{{Name: "drop", URL: drop.srv.URL, WSURL: dn.WSURL()}, {Name: "lossy", URL: lossy.srv.URL, WSURL: dn.WSURL()}}}}
	s := start(t, cfg)
	c := rpc.New(s.url(t, "solana"))
	wc, err := ws.Connect(ctx, s.wsURL(t, "solana"))
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()

	tx := slotTransfer(ctx, t, c, payer, 1_000_000)
	// Subscribed to through Portico before it is sent, as a wallet does.
	landed, err := wc.SignatureSubscribe(tx.Signatures[0], rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	defer landed.Unsubscribe()
	sig, err := c.SendTransaction(ctx, tx)
	if err != nil || sig != tx.Signatures[0] {
		t.Fatalf("sendTransaction: %s %v, want %s", sig, err, tx.Signatures[0])
	}
	if !reached(ctx, c, sig, time.Minute) {
		t.Fatalf("%s did not land (sends: drop %d, lossy %d)", sig, drop.sends.Load(), lossy.sends.Load())
	}
	if n, err := landed.Recv(ctx); err != nil || n.Value.Err != nil {
		t.Fatalf("signatureSubscribe through Portico: %+v %v", n, err)
	}

	// Every node drops it: sent again until its blockhash expires.
	lost := slotTransfer(ctx, t, c, payer, 2_000_000)
	lossy.mu.Lock()
	lossy.hole[lost.Signatures[0]] = true
	lossy.mu.Unlock()
	if _, err := c.SendTransaction(ctx, lost); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		_, text := get(t, "http://"+s.m.Shared+"/metrics")
		if strings.Contains(text, `portico_transactions_total{event="expired",network="solana"} 1`) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatal("the dropped transaction was never let go as expired")
	}
	resent := lossy.sends.Load()
	if resent < 3 {
		t.Errorf("the lossy node was sent %d transactions: the dropped one was not sent again", resent)
	}
}
