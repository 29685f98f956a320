package evmverify_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
)

// TestTransactionAnswersFixtures takes the conformance suite's recorded
// answers to eth_getTransactionByHash and by block and index (geth's
// answers, recorded apart from the node under test), finds each one's
// block in the chain file, verifies that block as a node serves it, and
// checks that the verified block gives the very same answer.
func TestTransactionAnswersFixtures(t *testing.T) {
	fc := loadFixture(t)
	node := fixtureNode(t)
	byHash := map[common.Hash]int{}
	for i, b := range fc.blocks {
		byHash[b.Hash()] = i
	}
	files, _ := filepath.Glob(filepath.Join(fixtures, "tests", "eth_getTransactionBy*", "*.io"))
	checked := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "<< ") {
				continue
			}
			var resp struct{ Result json.RawMessage }
			json.Unmarshal([]byte(line[3:]), &resp)
			if len(resp.Result) == 0 || string(resp.Result) == "null" {
				continue
			}
			var tx struct {
				BlockHash common.Hash `json:"blockHash"`
				Hash      common.Hash `json:"hash"`
			}
			if err := json.Unmarshal(resp.Result, &tx); err != nil {
				t.Fatal(err)
			}
			i, ok := byHash[tx.BlockHash]
			if !ok {
				t.Fatalf("%s: block %s not in the chain file", f, tx.BlockHash)
			}
			want := fc.blocks[i]
			b, err := fc.chain.VerifyBlock(call(t, node, "eth_getBlockByHash", want.Hash(), true), want.Hash(), uncleHeaders(t, node, want.Hash(), len(want.Uncles()))...)
			if err != nil {
				t.Fatal(err)
			}
			idx, ok := b.Index(tx.Hash)
			if !ok {
				t.Fatalf("%s: transaction not in its block", filepath.Base(f))
			}
			if got := b.TransactionJSON(idx); !jsonEqual(string(got), string(resp.Result)) {
				t.Fatalf("%s:\n got %s\nwant %s", filepath.Base(f), got, resp.Result)
			}
			checked++
		}
		fh.Close()
	}
	if checked < 8 {
		t.Fatalf("only %d recorded answers", checked)
	}
}

// uncleHeaders asks the node for a block's n uncle headers.
func uncleHeaders(t *testing.T, node *rpc.Client, h common.Hash, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		out = append(out, call(t, node, "eth_getUncleByBlockHashAndIndex", h, hexutil.Uint(i)))
	}
	return out
}
