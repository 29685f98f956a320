package wallet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/porticohq/portico/auth/wallet"
	"github.com/porticohq/portico/families/solana/solanadevnet"
)

// lossyFront is a node in front of the devnet that takes the first drop
// transactions it is sent and passes none of them on, answering their
// signatures as if it had (a node whose queue evicts, or without peers);
// everything else it forwards.
type lossyFront struct {
	drop    int64
	dropped atomic.Int64
	sends   atomic.Int64
}

func (f *lossyFront) start(t *testing.T, node string) string {
	t.Helper()
	u, err := url.Parse(node)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil && req.Method == "sendTransaction" {
			f.sends.Add(1)
			if f.dropped.Load() < f.drop {
				f.dropped.Add(1)
				var enc string
				_ = json.Unmarshal(req.Params[0], &enc)
				tx, err := solana.TransactionFromBase64(enc)
				if err == nil {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"` + tx.Signatures[0].String() + `"}`))
					return
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fastDevnet is a slot-chain devnet with 10 ms slots, so that a
// blockhash expires (150 blocks) in about two seconds.
func fastDevnet(t *testing.T) *solanadevnet.Devnet {
	t.Helper()
	d, err := solanadevnet.New(solanadevnet.Config{SlotPeriod: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// A transfer through a node that drops what it is sent: the sender sends
// again while the blockhash is valid and signs again on a new one when it
// expires, and the transfer lands; through a node that drops everything,
// Send says the transaction expired instead of waiting forever.
func TestSolanaSenderLands(t *testing.T) {
	d := fastDevnet(t)
	faucet := d.Faucet()
	sign := func(tx *solana.Transaction) error {
		_, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &faucet })
		return err
	}
	cases := []struct {
		name string
		drop int64
		// resend is the sender's; longer than the blockhash's life, it
		// leaves the expiry and the new signing to bring the transfer in.
		resend  time.Duration
		expired bool
	}{
		{"honest node", 0, 0, false},
		{"first sends dropped, sent again", 2, 200 * time.Millisecond, false},
		{"every send of a signing dropped, signed again", 1, time.Hour, false},
		{"every send dropped", 1 << 30, 200 * time.Millisecond, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			front := &lossyFront{drop: c.drop}
			client := rpc.New(front.start(t, d.HTTPURL()))
			var signed []solana.Signature
			s := &wallet.SolanaSender{RPC: client, Resend: c.resend, Poll: 20 * time.Millisecond, Signings: 2,
				Signed: func(tx *solana.Transaction) error { signed = append(signed, tx.Signatures[0]); return nil }}
			to := solana.NewWallet().PublicKey()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sig, err := s.Send(ctx, faucet.PublicKey(), sign, system.NewTransferInstruction(5_000_000, faucet.PublicKey(), to).Build())
			if c.expired {
				var ee *wallet.SolanaExpiredError
				if !errors.As(err, &ee) || ee.Signings != 2 || ee.Signature != signed[1] {
					t.Fatalf("every send dropped: %v, want a SolanaExpiredError after 2 signings", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sig != signed[len(signed)-1] {
				t.Fatalf("Send returned %s, the last signing was %s", sig, signed[len(signed)-1])
			}
			bal, err := client.GetBalance(ctx, to, rpc.CommitmentConfirmed)
			if err != nil || bal.Value != 5_000_000 {
				t.Fatalf("balance %v, %v", bal, err)
			}
			if c.drop > 0 && front.sends.Load() <= c.drop {
				t.Fatalf("%d sends for %d dropped", front.sends.Load(), c.drop)
			}
			t.Logf("%d signings, %d sends, %d dropped", len(signed), front.sends.Load(), front.dropped.Load())
		})
	}
}

// A transaction the node refuses at once is that error, unchanged, and is
// not signed again.
func TestSolanaSenderRefused(t *testing.T) {
	d := fastDevnet(t)
	client := rpc.New(d.HTTPURL())
	poor := solana.NewWallet().PrivateKey
	signings := 0
	s := &wallet.SolanaSender{RPC: client, Signed: func(*solana.Transaction) error { signings++; return nil }}
	_, err := s.Send(context.Background(), poor.PublicKey(), func(tx *solana.Transaction) error {
		_, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &poor })
		return err
	}, system.NewTransferInstruction(1, poor.PublicKey(), solana.NewWallet().PublicKey()).Build())
	var re *jsonrpc.RPCError
	if err == nil || signings != 1 || !errors.As(err, &re) || re.Code != -32002 {
		t.Fatalf("a transfer from an empty account: %v after %d signings, want the node's -32002", err, signings)
	}
}
