package transfer

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/auth/wallet"
	"github.com/porticohq/portico/families"
)

// startDevnet starts a family's embedded devnet on its own listener and
// returns its HTTP URL, which the example's WebSocket URL derivation
// turns into the devnet's WebSocket URL.
func startDevnet(t *testing.T, family portico.Family, period time.Duration) string {
	t.Helper()
	fam, err := families.Get(family)
	if err != nil {
		t.Fatal(err)
	}
	d, err := fam.NewDevnet(families.DevnetConfig{Listen: "127.0.0.1:0", BlockPeriod: period})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ws := wsURL(d.HTTPURL()); ws != d.WSURL() && ws+"/" != d.WSURL() && ws != d.WSURL()+"/" {
		t.Skipf("%s devnet: HTTP %s and WebSocket %s are not one address", family, d.HTTPURL(), d.WSURL())
	}
	return d.HTTPURL()
}

// testWallet is a wallet from fixed keys, as a login would give.
func testWallet(t *testing.T) *wallet.Wallet {
	t.Helper()
	seed := sha256.Sum256([]byte("portico transfer test ed25519"))
	priv := sha256.Sum256([]byte("portico transfer test secp256k1"))
	w, err := wallet.FromKeys(hex.EncodeToString(priv[:]), hex.EncodeToString(ed25519.NewKeyFromSeed(seed[:])))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRun: against the three devnets, each family's account is funded
// and sends its transfer; each line's balance after is the balance
// before less what was sent and the fee, and the rollup's balance read
// back agrees.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three devnets")
	}
	urls := URLs{
		EVM:      startDevnet(t, "evm", time.Second),
		Solana:   startDevnet(t, "solana", 40*time.Millisecond),
		Starknet: startDevnet(t, "starknet", time.Second),
	}
	w := testWallet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A new go-ethereum devnet answers receipts once its transaction
	// index is built; the gateway's own devnets are long past that.
	for {
		var r json.RawMessage
		err := (&Client{URL: urls.EVM}).Call(ctx, "eth_getTransactionReceipt", []string{"0x" + strings.Repeat("0", 64)}, &r)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "indexing") || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var out strings.Builder
	if err := Run(ctx, &out, w, urls); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	lines := regexp.MustCompile(`(?m)^(evm|solana|starknet): before (\d+) after (\d+) sent (\d+) fee (\d+) \((\w+)\) tx (\S+)$`).FindAllStringSubmatch(out.String(), -1)
	if len(lines) != 3 || lines[0][1] != "evm" || lines[1][1] != "solana" || lines[2][1] != "starknet" {
		t.Fatalf("want a line per family, in order:\n%s", out.String())
	}
	for _, l := range lines {
		n := func(i int) *big.Int { v, _ := new(big.Int).SetString(l[i], 10); return v }
		before, after, sent, fee := n(2), n(3), n(4), n(5)
		if want := new(big.Int).Sub(before, new(big.Int).Add(sent, fee)); after.Cmp(want) != 0 || sent.Sign() <= 0 || fee.Sign() <= 0 {
			t.Errorf("%s: before %s, after %s, sent %s, fee %s", l[1], before, after, sent, fee)
		}
		if l[1] == "starknet" {
			got, err := StarknetBalance(ctx, urls.Starknet, w.Starknet.Address())
			if err != nil || got.Cmp(after) != 0 {
				t.Errorf("starknet balance read back %v %v, the line says %s", got, err, after)
			}
		}
	}
}

// TestRunNamesTheFamily: an error stops the run and names the family it
// came from.
func TestRunNamesTheFamily(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Run(ctx, &strings.Builder{}, testWallet(t), URLs{EVM: "http://127.0.0.1:1/v3/k"})
	if err == nil || !strings.HasPrefix(err.Error(), "evm: ") {
		t.Fatalf("err = %v, want one naming evm", err)
	}
}

// TestClient: a result is decoded, an error answer is an *Error with its
// code, message and data, and an answer that is not JSON-RPC names the
// method and the HTTP status.
func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch req.Method {
		case "ok":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x2a"}`))
		case "fails":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":20,"message":"Contract not found","data":"0x1"}}`))
		default:
			http.Error(w, "no", http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	c := &Client{URL: srv.URL}
	ctx := context.Background()
	var got string
	if err := c.Call(ctx, "ok", []any{}, &got); err != nil || got != "0x2a" {
		t.Fatalf("ok: %q %v", got, err)
	}
	var e *Error
	if err := c.Call(ctx, "fails", []any{}, &got); !errors.As(err, &e) || e.Code != 20 || err.Error() != `20 Contract not found: "0x1"` {
		t.Fatalf("fails: %v", err)
	}
	if err := c.Call(ctx, "other", []any{}, &got); err == nil || !strings.HasPrefix(err.Error(), "other: HTTP 502") {
		t.Fatalf("other: %v", err)
	}
}
