package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
)

// txFront is a node in front of a real anvil for fault injection: a
// dropper answers a sent transaction's hash and never passes it on (a
// node whose pool evicts it, or with no peers); a liar answers another
// hash; any other front passes everything on, but for the transaction
// whose nonce+1 lose holds, which it drops the first time (a node that
// lost one). It counts the sends.
type txFront struct {
	node  string
	drop  bool
	lie   bool
	lose  atomic.Uint64
	sends atomic.Int64
	srv   *httptest.Server
}

func newTxFront(t testing.TB, f *txFront) *txFront {
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params []hexutil.Bytes `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil && req.Method == "eth_sendRawTransaction" && len(req.Params) == 1 {
			f.sends.Add(1)
			var tx types.Transaction
			decoded := tx.UnmarshalBinary(req.Params[0]) == nil
			lost := decoded && f.lose.CompareAndSwap(tx.Nonce()+1, 0)
			// A dropping node still checks the nonce, as a pool does:
			// a used one gets the node's own error.
			if (f.drop || f.lie || lost) && decoded && !nonceUsed(t, f.node, &tx) {
				hash := tx.Hash()
				if f.lie {
					hash[0] ^= 0xff
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%q}`, req.ID, hash.Hex())
				return
			}
		}
		forwardTo(w, f.node, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// nonceUsed reports whether tx's nonce is below its sender's on node.
func nonceUsed(t testing.TB, node string, tx *types.Transaction) bool {
	from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx)
	if err != nil {
		return false
	}
	var n hexutil.Uint64
	json.Unmarshal(nodeRPC(t, node, "eth_getTransactionCount", from, "latest"), &n)
	return tx.Nonce() < uint64(n)
}

// TestBroadcastLands: three fronts of one anvil, the first two of which
// drop the transactions they are sent and the third loses one (and a
// fourth that answers other hashes): 20 transfers signed by
// go-ethereum's ethclient through Portico all land, in order, each sent
// once to every node but the lost one, which Portico sends again when no
// node holds it (the nonce gap closes); the client's own error (a nonce
// already used) comes back as the node wrote it; the same bytes sent
// again are answered without a second broadcast.
func TestBroadcastLands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx).URL()
	drop1 := newTxFront(t, &txFront{node: node, drop: true})
	drop2 := newTxFront(t, &txFront{node: node, drop: true})
	liar := newTxFront(t, &txFront{node: node, lie: true})
	honest := newTxFront(t, &txFront{node: node})
	cfg := verifyConfigFor(map[string]string{"drop1": drop1.srv.URL, "drop2": drop2.srv.URL, "liar": liar.srv.URL, "honest": honest.srv.URL},
		[]string{"drop1", "drop2", "liar", "honest"}, "off")
	cfg.Networks[0].Transactions.ResendAfter = 500 * time.Millisecond
	client, err := ethclient.DialContext(ctx, start(t, cfg).url(t, "anvil"))
	if err != nil {
		t.Fatal(err)
	}
	// anvil's first dev account.
	key, _ := crypto.HexToECDSA("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
	from := crypto.PubkeyToAddress(key.PublicKey)
	chainID, err := client.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(chainID)
	start, err := client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	honest.lose.Store(start + 5 + 1)
	to := common.HexToAddress("0x000000000000000000000000000000000000b0b0")
	var txs []*types.Transaction
	for i := range uint64(20) {
		tx, err := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: start + i, To: &to, Value: big.NewInt(int64(i + 1)),
			Gas: 21000, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(1e11)})
		if err != nil {
			t.Fatal(err)
		}
		if err := client.SendTransaction(ctx, tx); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		txs = append(txs, tx)
	}
	var last uint64
	for i, tx := range txs {
		var r *types.Receipt
		for r == nil && ctx.Err() == nil {
			if r, _ = client.TransactionReceipt(ctx, tx.Hash()); r == nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if r == nil || r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("transaction %d did not land", i)
		}
		if r.BlockNumber.Uint64() < last {
			t.Errorf("transaction %d landed in block %d, before the one before it (%d)", i, r.BlockNumber, last)
		}
		last = r.BlockNumber.Uint64()
	}
	// Each was sent to every node once, and the lost one again (to every
	// node): a node that already has a transaction is not sent it again.
	for name, f := range map[string]*txFront{"drop1": drop1, "drop2": drop2, "honest": honest} {
		if f.sends.Load() != 21 {
			t.Errorf("%s was sent %d times the 20 transactions, want 21 (one resent)", name, f.sends.Load())
		}
	}
	// The liar's first wrong hash benched it: it is not sent the next.
	if liar.sends.Load() == 0 || liar.sends.Load() == 20 {
		t.Errorf("the node answering other hashes was sent %d of 20", liar.sends.Load())
	}

	// The same bytes again: answered as before, no node asked.
	if err := client.SendTransaction(ctx, txs[3]); err != nil {
		t.Errorf("a retry of a sent transaction: %v", err)
	}
	if honest.sends.Load() != 21 {
		t.Errorf("a retry was broadcast again (%d sends)", honest.sends.Load())
	}

	// The client's own error, as the node writes it: another transaction
	// with a nonce already used.
	reuse, _ := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: start, To: &to, Value: big.NewInt(99),
		Gas: 21000, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(1e11)})
	raw, _ := reuse.MarshalBinary()
	got, rpcErr, _ := gatewayCall(t, honest.srv.URL, "eth_sendRawTransaction", []any{hexutil.Bytes(raw)})
	direct, _ := json.Marshal(rpcErr)
	sent := client.SendTransaction(ctx, reuse)
	if sent == nil || rpcErr == nil || sent.Error() != rpcErr.Message {
		t.Errorf("a used nonce: through Portico %v, the node %s %s", sent, got, direct)
	}
}

// TestBroadcastLandsViem: as TestBroadcastLands, with viem signing and
// sending from node, as a wallet would: three fronts of one anvil, two
// dropping what they are sent and the third losing one; 20 transfers all
// land in order, the last sent with viem's sendRawTransactionSync, whose
// answer is its receipt.
func TestBroadcastLandsViem(t *testing.T) {
	root, _ := filepath.Abs("../..")
	if _, err := exec.LookPath("node"); err != nil {
		missingDep(t, "node: "+err.Error())
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "viem", "package.json")); err != nil {
		missingDep(t, "viem is not installed (run scripts/install-test-deps.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx).URL()
	drop1 := newTxFront(t, &txFront{node: node, drop: true})
	drop2 := newTxFront(t, &txFront{node: node, drop: true})
	honest := newTxFront(t, &txFront{node: node})
	honest.lose.Store(5 + 1) // anvil's first account starts at nonce 0
	cfg := verifyConfigFor(map[string]string{"drop1": drop1.srv.URL, "drop2": drop2.srv.URL, "honest": honest.srv.URL},
		[]string{"drop1", "drop2", "honest"}, "off")
	cfg.Networks[0].Transactions.ResendAfter = 500 * time.Millisecond
	url := start(t, cfg).url(t, "anvil")

	in, _ := json.Marshal(map[string]any{"url": url, "key": "0x" + anvilKey, "count": 20, "to": "0x000000000000000000000000000000000000b0b0"})
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "js", "txs_viem.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res struct {
		Hashes []common.Hash `json:"hashes"`
		Status string        `json:"status"`
		Error  string        `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Error != "" || len(res.Hashes) != 20 || res.Status != "success" {
		t.Fatalf("viem: %s (%v)", out, err)
	}
	client, err := ethclient.DialContext(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i, h := range res.Hashes {
		var r *types.Receipt
		for r == nil && ctx.Err() == nil {
			if r, _ = client.TransactionReceipt(ctx, h); r == nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if r == nil || r.Status != types.ReceiptStatusSuccessful || r.BlockNumber.Uint64() < last {
			t.Fatalf("transaction %d did not land in order: %+v", i, r)
		}
		last = r.BlockNumber.Uint64()
	}
	if honest.sends.Load() != 21 {
		t.Errorf("the node that lost one was sent %d, want 21 (the lost one again)", honest.sends.Load())
	}
}

// TestPrivateRoute: a network whose broadcast names a private relay
// alone sends no signed transaction to its public nodes, neither the
// client's sends nor Portico's own (eth_sendRawTransactionSync); its
// reads still go to them, and the transactions land.
func TestPrivateRoute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx).URL()
	public1 := newTxFront(t, &txFront{node: node})
	public2 := newTxFront(t, &txFront{node: node})
	relay := newTxFront(t, &txFront{node: node})
	cfg := verifyConfigFor(map[string]string{"public1": public1.srv.URL, "public2": public2.srv.URL, "relay": relay.srv.URL},
		[]string{"public1", "public2", "relay"}, "off")
	cfg.Networks[0].Broadcast = []string{"relay"}
	client, err := ethclient.DialContext(ctx, start(t, cfg).url(t, "anvil"))
	if err != nil {
		t.Fatal(err)
	}
	txs := transfers(t, ctx, client, 3)
	for _, tx := range txs[:2] {
		if err := client.SendTransaction(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	wait := 30 * time.Second
	if r, err := client.SendTransactionSync(ctx, txs[2], &wait); err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("a sync send through the relay: %+v %v", r, err)
	}
	for i, tx := range txs[:2] {
		if r, err := client.TransactionReceipt(ctx, tx.Hash()); err != nil || r.Status != types.ReceiptStatusSuccessful {
			t.Errorf("transaction %d: %+v %v", i, r, err)
		}
	}
	if public1.sends.Load() != 0 || public2.sends.Load() != 0 || relay.sends.Load() != 3 {
		t.Errorf("sends: public %d and %d, relay %d; want 0, 0, 3", public1.sends.Load(), public2.sends.Load(), relay.sends.Load())
	}
}
