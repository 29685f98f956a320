package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/porticohq/portico/auth/wallet"
	"github.com/porticohq/portico/auth/wallet/transfer"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/starknet/starknetdevnet"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// rollupTxFront is a node in front of the rollup's devnet: a dropper
// answers starknet_addInvokeTransaction with the transaction's hash and
// never passes it on; a lossy front drops the first send of each
// transaction. It counts the sends.
type rollupTxFront struct {
	node    string
	chainID starknettx.Felt
	drop    bool
	lossy   bool
	mu      sync.Mutex
	seen    map[string]bool
	sends   atomic.Int64
	srv     *httptest.Server
}

func newRollupTxFront(t *testing.T, f *rollupTxFront) *rollupTxFront {
	f.seen = map[string]bool{}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *rollupTxFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Tx json.RawMessage `json:"invoke_transaction"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) == nil && req.Method == "starknet_addInvokeTransaction" {
		f.sends.Add(1)
		if tx, err := starknettx.DecodeInvoke(req.Params.Tx); err == nil {
			h := tx.Hash(f.chainID)
			hash := starknettx.Hex(&h)
			f.mu.Lock()
			first := !f.seen[hash]
			f.seen[hash] = true
			f.mu.Unlock()
			if f.drop || (f.lossy && first) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"transaction_hash":%q}}`, req.ID, hash)
				return
			}
		}
	}
	forwardTo(w, f.node, body)
}

// TestRollupSendLands: the rollup's devnet behind a node that drops every
// invoke and one that drops the first send of each: an invoke signed by
// the devnet's faucet account and sent once through Portico lands (its
// hash, computed by Portico, checked against the nodes' answers), because
// Portico sends it again when no node knows it.
func TestRollupSendLands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	devnet := config.DefaultConfig()
	devnet.Networks = []config.Network{{Name: "starknet-devnet", Family: "starknet", Devnet: config.Devnet{BlockPeriod: 300 * time.Millisecond}}}
	node := start(t, devnet).m.Devnets["starknet-devnet"].HTTPURL()
	direct := &transfer.Client{URL: node}
	var chain string
	if err := direct.Call(ctx, "starknet_chainId", []any{}, &chain); err != nil {
		t.Fatal(err)
	}
	chainID, err := starknettx.ParseFelt(chain)
	if err != nil {
		t.Fatal(err)
	}
	drop := newRollupTxFront(t, &rollupTxFront{node: node, chainID: chainID, drop: true})
	lossy := newRollupTxFront(t, &rollupTxFront{node: node, chainID: chainID, lossy: true})
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "k", Key: "rollupsend0123456789abcdef012345", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "starknet", Family: "starknet", Hedge: config.Hedge{Disabled: true}, PollInterval: 200 * time.Millisecond,
		Transactions: config.Transactions{ResendAfter: 500 * time.Millisecond},
		Upstreams:    []config.Upstream{{Name: "drop", URL: drop.srv.URL}, {Name: "lossy", URL: lossy.srv.URL}}}}
	c := &transfer.Client{URL: start(t, cfg).url(t, "starknet")}

	faucet, err := wallet.NewStarknetAccount(starknetdevnet.FaucetKey())
	if err != nil {
		t.Fatal(err)
	}
	tx := faucetInvoke(ctx, t, c, faucet, chainID)
	var res struct {
		Hash string `json:"transaction_hash"`
	}
	if err := c.Call(ctx, "starknet_addInvokeTransaction", map[string]any{"invoke_transaction": tx}, &res); err != nil {
		t.Fatal(err)
	}
	h := tx.Hash(chainID)
	if res.Hash != starknettx.Hex(&h) {
		t.Fatalf("the answer's hash %s, want %s", res.Hash, starknettx.Hex(&h))
	}
	for ctx.Err() == nil {
		var st struct {
			Finality string `json:"finality_status"`
		}
		if c.Call(ctx, "starknet_getTransactionStatus", map[string]any{"transaction_hash": res.Hash}, &st) == nil && strings.HasPrefix(st.Finality, "ACCEPTED_ON_") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("the invoke did not land (sends: drop %d, lossy %d)", drop.sends.Load(), lossy.sends.Load())
	}
	if lossy.sends.Load() < 2 {
		t.Errorf("the lossy node was sent the invoke %d times: it was not sent again", lossy.sends.Load())
	}
}

// faucetInvoke signs a transfer of 1 fri to the faucet itself, with
// resource bounds from starknet_estimateFee with room.
func faucetInvoke(ctx context.Context, t *testing.T, c *transfer.Client, acct *wallet.StarknetAccount, chainID starknettx.Felt) *starknettx.Invoke {
	t.Helper()
	addr := acct.Address()
	var nonce string
	if err := c.Call(ctx, "starknet_getNonce", map[string]any{"block_id": "pre_confirmed", "contract_address": starknettx.Hex(&addr)}, &nonce); err != nil {
		if err := c.Call(ctx, "starknet_getNonce", map[string]any{"block_id": "latest", "contract_address": starknettx.Hex(&addr)}, &nonce); err != nil {
			t.Fatal(err)
		}
	}
	n, _ := new(big.Int).SetString(strings.TrimPrefix(nonce, "0x"), 16)
	tx := &starknettx.Invoke{Common: starknettx.Common{Nonce: starknettx.FeltU64(n.Uint64())},
		Calldata: []starknettx.Felt{starknettx.FeltU64(1), starknetdevnet.FeeToken(), starknettx.Selector("transfer"), starknettx.FeltU64(3), addr, starknettx.FeltU64(1), {}}}
	q := *tx
	q.Query = true
	if err := acct.SignInvoke(&q, chainID); err != nil {
		t.Fatal(err)
	}
	var est []struct {
		L2Gas      string `json:"l2_gas_consumed"`
		L2Price    string `json:"l2_gas_price"`
		DataGas    string `json:"l1_data_gas_consumed"`
		DataPrice  string `json:"l1_data_gas_price"`
		L1GasPrice string `json:"l1_gas_price"`
	}
	if err := c.Call(ctx, "starknet_estimateFee", map[string]any{"request": []any{&q}, "simulation_flags": []string{}, "block_id": "latest"}, &est); err != nil || len(est) != 1 {
		t.Fatalf("estimateFee: %v %v", est, err)
	}
	u := func(s string) uint64 {
		v, _ := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
		return v.Uint64()
	}
	e := est[0]
	b := &tx.ResourceBounds
	b.L2Gas.MaxAmount, b.L1DataGas.MaxAmount = u(e.L2Gas)*3/2, u(e.DataGas)*3/2
	b.L2Gas.MaxPricePerUnit.SetUint64(2 * u(e.L2Price))
	b.L1DataGas.MaxPricePerUnit.SetUint64(2 * u(e.DataPrice))
	b.L1Gas.MaxPricePerUnit.SetUint64(2 * u(e.L1GasPrice))
	if err := acct.SignInvoke(tx, chainID); err != nil {
		t.Fatal(err)
	}
	return tx
}
