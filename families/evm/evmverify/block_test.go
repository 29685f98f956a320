package evmverify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/network/verify"
)

// TestVerifyBlockFixtureChain asks a real node for every block of the
// fixture chain and checks each answer against the hash in the chain
// file: with full transactions the whole answer verifies, and the
// hashes-only rendering equals what the node answers for false.
func TestVerifyBlockFixtureChain(t *testing.T) {
	fc := loadFixture(t)
	node := fixtureNode(t)
	txs := 0
	for _, want := range fc.blocks {
		full := call(t, node, "eth_getBlockByHash", want.Hash(), true)
		var uncles [][]byte
		for i := range want.Uncles() {
			uncles = append(uncles, call(t, node, "eth_getUncleByBlockHashAndIndex", want.Hash(), hexutil.Uint(i)))
		}
		b, err := fc.chain.VerifyBlock(full, want.Hash(), uncles...)
		if err != nil {
			t.Fatalf("block %d: %v", want.NumberU64(), err)
		}
		txs += len(b.Transactions)
		if got := string(b.JSON(true)); !jsonEqual(got, string(full)) {
			t.Fatalf("block %d: full JSON differs", want.NumberU64())
		}
		hashes := call(t, node, "eth_getBlockByHash", want.Hash(), false)
		if got := string(b.JSON(false)); !jsonEqual(got, string(hashes)) {
			t.Fatalf("block %d: hashes JSON\n got %s\nwant %s", want.NumberU64(), got, hashes)
		}
		if _, err := evmverify.VerifyHeader(hashes, want.Hash()); err != nil {
			t.Fatalf("block %d header: %v", want.NumberU64(), err)
		}
	}
	if txs < 50 {
		t.Fatalf("only %d transactions in the chain", txs)
	}
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(a, b string) bool {
	x, y := jsontext.Value(a), jsontext.Value(b)
	if x.Canonicalize() != nil || y.Canonicalize() != nil {
		return false
	}
	return string(x) == string(y)
}

// TestVerifyBlockTampered changes one thing at a time in a real node's
// answer and expects each change to be caught, naming the part.
func TestVerifyBlockTampered(t *testing.T) {
	fc := loadFixture(t)
	node := fixtureNode(t)
	// A block with several transactions of different types and withdrawals.
	var pick common.Hash
	for _, b := range fc.blocks {
		if len(b.Transactions()) >= 2 && len(b.Withdrawals()) > 0 {
			pick = b.Hash()
		}
	}
	if pick == (common.Hash{}) {
		t.Fatal("no block with transactions and withdrawals")
	}
	raw := string(call(t, node, "eth_getBlockByHash", pick, true))
	if _, err := fc.chain.VerifyBlock([]byte(raw), pick); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		want  error
		where string
	}{
		{"state root changed, hash kept", func(m map[string]any) { m["stateRoot"] = flipHex(m["stateRoot"].(string)) }, verify.ErrMismatch, "header.hash"},
		{"gas used changed", func(m map[string]any) { m["gasUsed"] = "0x1" }, verify.ErrMismatch, "header.hash"},
		{"hash changed to another", func(m map[string]any) { m["hash"] = flipHex(m["hash"].(string)) }, verify.ErrMismatch, "header.hash"},
		{"extra member", func(m map[string]any) { m["l1BlockNumber"] = "0x1" }, verify.ErrUnverifiable, "header.l1BlockNumber"},
		{"transaction dropped", func(m map[string]any) { txs := m["transactions"].([]any); m["transactions"] = txs[1:] }, verify.ErrMismatch, "block.transactions"},
		{"transactions swapped", func(m map[string]any) {
			txs := m["transactions"].([]any)
			txs[0], txs[1] = txs[1], txs[0]
		}, verify.ErrMismatch, "block.transactions[0].transactionIndex"},
		{"transaction value changed", func(m map[string]any) { tx(m, 0)["value"] = "0x7" }, verify.ErrMismatch, "block.transactions[0]."},
		{"sender changed", func(m map[string]any) { tx(m, 0)["from"] = "0x0000000000000000000000000000000000000001" }, verify.ErrMismatch, "block.transactions[0].from"},
		{"block number of a transaction", func(m map[string]any) { tx(m, 1)["blockNumber"] = "0x1" }, verify.ErrMismatch, "block.transactions[1].blockNumber"},
		{"withdrawal amount", func(m map[string]any) {
			m["withdrawals"].([]any)[0].(map[string]any)["amount"] = "0x7"
		}, verify.ErrMismatch, "block.withdrawals"},
		{"hashes only", func(m map[string]any) {
			txs := m["transactions"].([]any)
			for i := range txs {
				txs[i] = txs[i].(map[string]any)["hash"]
			}
		}, verify.ErrUnverifiable, "block.transactions[0]"},
	}
	t.Run("size recomputed", func(t *testing.T) {
		b, err := fc.chain.VerifyBlock(edit(t, raw, func(m map[string]any) { m["size"] = "0x1" }), pick)
		if err != nil || !jsonEqual(string(b.JSON(true)), raw) {
			t.Fatalf("%v", err)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := fc.chain.VerifyBlock(edit(t, raw, c.edit), pick)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.where) {
				t.Fatalf("got %v, want %v naming %s", err, c.want, c.where)
			}
		})
	}
}
