package main

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// anvilKey is anvil's first dev account.
const anvilKey = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

// transfers signs n transfers from anvil's first account, nonces on
// from its pending nonce.
func transfers(t testing.TB, ctx context.Context, client *ethclient.Client, n int) []*types.Transaction {
	t.Helper()
	key, _ := crypto.HexToECDSA(anvilKey)
	chainID, err := client.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start, err := client.PendingNonceAt(ctx, crypto.PubkeyToAddress(key.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	to := common.HexToAddress("0x000000000000000000000000000000000000b0b0")
	var txs []*types.Transaction
	for i := range uint64(n) {
		tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{ChainID: chainID, Nonce: start + i, To: &to,
			Value: big.NewInt(int64(i + 1)), Gas: 21000, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(1e11)})
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
	}
	return txs
}

// TestSendRawTransactionSync: eth_sendRawTransactionSync (EIP-7966)
// through Portico in front of three fronts of one anvil, two of which
// drop what they are sent: the answer is the receipt, from the chain
// Portico serves; with no block coming, the client's timeout ends the
// wait with EIP-7966's code 4, go-ethereum's words and the hash as data.
func TestSendRawTransactionSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx).URL()
	drop1 := newTxFront(t, &txFront{node: node, drop: true})
	drop2 := newTxFront(t, &txFront{node: node, drop: true})
	honest := newTxFront(t, &txFront{node: node})
	cfg := verifyConfigFor(map[string]string{"drop1": drop1.srv.URL, "drop2": drop2.srv.URL, "honest": honest.srv.URL},
		[]string{"drop1", "drop2", "honest"}, "off")
	url := start(t, cfg).url(t, "anvil")
	client, err := ethclient.DialContext(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	txs := transfers(t, ctx, client, 2)
	wait := 30 * time.Second
	r, err := client.SendTransactionSync(ctx, txs[0], &wait)
	if err != nil {
		t.Fatalf("a sync send: %v", err)
	}
	if r.TxHash != txs[0].Hash() || r.Status != types.ReceiptStatusSuccessful {
		t.Errorf("the receipt: %+v, want transaction %s landed", r, txs[0].Hash())
	}
	if got := onChainHash(t, node, r.BlockNumber.Uint64()); got != r.BlockHash {
		t.Errorf("the receipt's block %s is not the chain's %s", r.BlockHash, got)
	}

	// No block comes: the client's timeout ends the wait.
	nodeRPC(t, node, "evm_setAutomine", false)
	raw, _ := txs[1].MarshalBinary()
	c, _ := rpc.DialContext(ctx, url)
	var res json.RawMessage
	err = c.CallContext(ctx, &res, "eth_sendRawTransactionSync", hexutil.Bytes(raw), hexutil.Uint64(300))
	var coded rpc.Error
	var data rpc.DataError
	if !errors.As(err, &coded) || coded.ErrorCode() != 4 || err.Error() != "The transaction was added to the transaction pool but wasn't processed in 300ms" ||
		!errors.As(err, &data) || data.ErrorData() != txs[1].Hash().Hex() {
		t.Errorf("a sync send that times out: %v, want code 4 with the hash", err)
	}
	// Bad params are refused, naming the field.
	err = c.CallContext(ctx, &res, "eth_sendRawTransactionSync", "0x1234")
	if !errors.As(err, &coded) || coded.ErrorCode() != -32602 || !strings.Contains(err.Error(), "signedTransaction") {
		t.Errorf("a sync send of bytes that are no transaction: %v", err)
	}
}

// onChainHash is the hash of block n on node.
func onChainHash(t *testing.T, node string, n uint64) common.Hash {
	var b struct {
		Hash common.Hash `json:"hash"`
	}
	json.Unmarshal(nodeRPC(t, node, "eth_getBlockByNumber", hexutil.Uint64(n), false), &b)
	return b.Hash
}

// staleFront is a node in front of anvil that, while stale holds a
// receipt, answers it for its transaction: a node still on the branch a
// reorg dropped. hide answers null for the transaction's receipt.
type staleFront struct {
	node   string
	mu     sync.Mutex
	tx     common.Hash
	hide   bool
	stale  json.RawMessage
	served atomic.Int64
	srv    *httptest.Server
}

func (f *staleFront) set(hide bool, stale json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hide, f.stale = hide, stale
}

func (f *staleFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params []common.Hash   `json:"params"`
	}
	if json.Unmarshal(body, &req) == nil && req.Method == "eth_getTransactionReceipt" && len(req.Params) == 1 {
		f.mu.Lock()
		hide, stale, mine := f.hide, f.stale, req.Params[0] == f.tx
		f.mu.Unlock()
		if mine && (hide || stale != nil) {
			res := json.RawMessage("null")
			if !hide {
				res = stale
				f.served.Add(1)
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, res)
			return
		}
	}
	forwardTo(w, f.node, body)
}

// TestSyncSendFollowsReorgs: a transaction mined in a block that anvil_reorg
// then replaces is not confirmed to an eth_sendRawTransactionSync, even by
// a node that still answers its receipt from the dropped block; once it is
// mined again, the answer is the receipt of the block on the chain.
func TestSyncSendFollowsReorgs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx).URL()
	front := &staleFront{node: node}
	front.srv = httptest.NewServer(front)
	t.Cleanup(front.srv.Close)
	url := start(t, verifyConfigFor(map[string]string{"stale": front.srv.URL}, []string{"stale"}, "off")).url(t, "anvil")
	client, err := ethclient.DialContext(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tx := transfers(t, ctx, client, 1)[0]
	front.mu.Lock()
	front.tx, front.hide = tx.Hash(), true
	front.mu.Unlock()
	nodeRPC(t, node, "evm_setAutomine", false)

	type answer struct {
		r   *types.Receipt
		err error
	}
	done := make(chan answer, 1)
	go func() {
		wait := 50 * time.Second
		r, err := client.SendTransactionSync(ctx, tx, &wait)
		done <- answer{r, err}
	}()
	for ctx.Err() == nil && string(nodeRPC(t, node, "eth_getTransactionByHash", tx.Hash())) == "null" {
		time.Sleep(20 * time.Millisecond)
	}
	// Mined, then reorged away; the front answers the dropped receipt.
	nodeRPC(t, node, "evm_mine")
	dropped := nodeRPC(t, node, "eth_getTransactionReceipt", tx.Hash())
	var first types.Receipt
	if err := json.Unmarshal(dropped, &first); err != nil {
		t.Fatalf("the first receipt: %v (%s)", err, dropped)
	}
	nodeRPC(t, node, "anvil_reorg", 1, []any{})
	if onChainHash(t, node, first.BlockNumber.Uint64()) == first.BlockHash {
		t.Fatal("anvil_reorg kept the block")
	}
	front.set(false, dropped)
	for ctx.Err() == nil && front.served.Load() < 3 {
		nodeRPC(t, node, "evm_mine") // new heads: Portico asks again
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case a := <-done:
		t.Fatalf("answered from a block the reorg dropped: %+v %v", a.r, a.err)
	default:
	}
	// Mined again: the receipt of the chain's block answers.
	front.set(false, nil)
	raw, _ := tx.MarshalBinary()
	nodeRPCAllowErr(node, "eth_sendRawTransaction", hexutil.Bytes(raw))
	nodeRPC(t, node, "evm_mine")
	a := <-done
	if a.err != nil {
		t.Fatalf("the sync send: %v", a.err)
	}
	if a.r.BlockHash == first.BlockHash || onChainHash(t, node, a.r.BlockNumber.Uint64()) != a.r.BlockHash {
		t.Errorf("the receipt's block %s: the dropped one was %s", a.r.BlockHash, first.BlockHash)
	}
}

// nodeRPCAllowErr sends one call to a node and ignores its answer.
func nodeRPCAllowErr(node, method string, params ...any) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if resp, err := http.Post(node, "application/json", strings.NewReader(string(body))); err == nil {
		resp.Body.Close()
	}
}
