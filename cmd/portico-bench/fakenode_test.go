package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
)

// The generated block is the same on every run, and it is a block: its
// transactions are signed, their hashes and the transactions root match
// what the JSON says, and it has the types the setup promises.
func TestGenerateBlock(t *testing.T) {
	a, b := generateBlock(fakeHead), generateBlock(fakeHead)
	if !bytes.Equal(a.JSON, b.JSON) || a.Hash != b.Hash {
		t.Fatal("two generations differ")
	}
	if n := len(a.JSON); n < 115_000 || n > 122_000 {
		t.Fatalf("block answer is %d bytes, want about 118 kB", n)
	}
	var blk struct {
		Hash             common.Hash       `json:"hash"`
		Number           hexutil.Uint64    `json:"number"`
		TransactionsRoot common.Hash       `json:"transactionsRoot"`
		Transactions     []json.RawMessage `json:"transactions"`
	}
	if err := json.Unmarshal(a.JSON, &blk); err != nil {
		t.Fatal(err)
	}
	if blk.Hash != a.Hash || uint64(blk.Number) != fakeHead || len(blk.Transactions) != blockTxs {
		t.Fatalf("hash %s number %d with %d transactions", blk.Hash, blk.Number, len(blk.Transactions))
	}
	var txs types.Transactions
	kinds := map[uint8]int{}
	for i, raw := range blk.Transactions {
		var tx types.Transaction
		if err := tx.UnmarshalJSON(raw); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		var fields struct {
			Hash common.Hash `json:"hash"`
		}
		json.Unmarshal(raw, &fields)
		if tx.Hash() != fields.Hash {
			t.Fatalf("transaction %d: hash %s, JSON says %s", i, tx.Hash(), fields.Hash)
		}
		kinds[tx.Type()]++
		txs = append(txs, &tx)
	}
	if root := types.DeriveSha(txs, trie.NewStackTrie(nil)); root != blk.TransactionsRoot {
		t.Fatalf("transactions root %s, JSON says %s", root, blk.TransactionsRoot)
	}
	if kinds[0] == 0 || kinds[1] == 0 || kinds[2] == 0 || len(kinds) != 3 {
		t.Fatalf("transaction types %v, want 0, 1 and 2", kinds)
	}
}

// The fake node answers as the setups need: the id echoed, the two
// measured calls, the tracking calls (held back when lagging), batches,
// and -32601 for the rest.
func TestFakeNode(t *testing.T) {
	calls, err := loadFakeCalls("../../internal/testdata/fixtures")
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{calls: calls, chainID: []byte(`"0x1"`), syncing: []byte(`false`)}
	srv := httptest.NewServer(n)
	defer srv.Close()
	call := func(body string) string {
		t.Helper()
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	head := `{"number":"0x10","hash":"` + calls.block.Hash.Hex() + `"}`
	for _, c := range []struct{ name, req, want string }{
		{"chain", `{"jsonrpc":"2.0","id":"a","method":"eth_chainId","params":[]}`, `{"jsonrpc":"2.0","id":"a","result":"0x1"}`},
		{"latest", `{"jsonrpc":"2.0","id":7,"method":"eth_getBlockByNumber","params":["latest",false]}`, `{"jsonrpc":"2.0","id":7,"result":` + head + `}`},
		{"finalized", `{"jsonrpc":"2.0","id":7,"method":"eth_getBlockByNumber","params":["finalized",false]}`, `{"jsonrpc":"2.0","id":7,"result":` + head + `}`},
		{"future", `{"jsonrpc":"2.0","id":7,"method":"eth_getBlockByNumber","params":["0x11",false]}`, `{"jsonrpc":"2.0","id":7,"result":null}`},
		{"tx", string(calls.txBody()), `{"jsonrpc":"2.0","id":1,"result":` + string(calls.txResult) + `}`},
		{"block", string(calls.blockBody()), `{"jsonrpc":"2.0","id":1,"result":` + string(calls.block.JSON) + `}`},
		{"call", `{"jsonrpc":"2.0","id":2,"method":"eth_call","params":[{"to":"0x1111111111111111111111111111111111111111"},"latest"]}`, `{"jsonrpc":"2.0","id":2,"result":` + fakeCallResult + `}`},
		{"unknown", `{"jsonrpc":"2.0","id":2,"method":"eth_getCode","params":[]}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"the method eth_getCode does not exist/is not available"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_syncing"}]`, `[{"jsonrpc":"2.0","id":1,"result":"0x1"},{"jsonrpc":"2.0","id":2,"result":false}]`},
	} {
		if got := call(c.req); got != c.want {
			t.Errorf("%s: got %.300s, want %.300s", c.name, got, c.want)
		}
	}
	n.lagged.Store(true)
	if got := call(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`); got != `{"jsonrpc":"2.0","id":1,"result":"0x8"}` {
		t.Errorf("lagging: %s", got)
	}
}

// TestMain lets a test start this package's child processes: the test
// binary, run as a child, is the child and runs no tests.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 {
		if child, ok := children[os.Args[1]]; ok {
			if err := child(os.Args[2:]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}
