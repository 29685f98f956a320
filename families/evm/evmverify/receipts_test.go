package evmverify_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/network/verify"
)

// verifiedChain verifies every block of the fixture chain and its
// receipts from the node.
func verifiedChain(t *testing.T, fc *fixtureChain, node *rpc.Client) ([]*evmverify.Header, map[common.Hash]*evmverify.Receipts) {
	t.Helper()
	var headers []*evmverify.Header
	receipts := make(map[common.Hash]*evmverify.Receipts)
	for _, want := range fc.blocks {
		var uncles [][]byte
		for i := range want.Uncles() {
			uncles = append(uncles, call(t, node, "eth_getUncleByBlockHashAndIndex", want.Hash(), hexutil.Uint(i)))
		}
		b, err := fc.chain.VerifyBlock(call(t, node, "eth_getBlockByHash", want.Hash(), true), want.Hash(), uncles...)
		if err != nil {
			t.Fatal(err)
		}
		raw := call(t, node, "eth_getBlockReceipts", want.Hash())
		rs, err := fc.chain.VerifyReceipts(raw, b)
		if err != nil {
			t.Fatalf("block %d: %v", want.NumberU64(), err)
		}
		headers = append(headers, b.Header)
		receipts[want.Hash()] = rs
	}
	return headers, receipts
}

// TestVerifyReceiptsFixtureChain verifies every block's receipts from a
// real node, checks each eth_getTransactionReceipt answer is the
// verified one, and catches a dropped receipt, a dropped log and changed
// fields, consensus and derived.
func TestVerifyReceiptsFixtureChain(t *testing.T) {
	fc := loadFixture(t)
	node := fixtureNode(t)
	_, receipts := verifiedChain(t, fc, node)
	logs, txs := 0, 0
	var many common.Hash // a block with the most logs
	for _, b := range fc.blocks {
		rs := receipts[b.Hash()]
		for _, tx := range b.Transactions() {
			got, ok := rs.ReceiptJSON(tx.Hash())
			if !ok || !jsonEqual(string(got), string(call(t, node, "eth_getTransactionReceipt", tx.Hash()))) {
				t.Fatalf("receipt of %s differs", tx.Hash())
			}
			txs++
		}
		logs += len(rs.Logs())
		if many == (common.Hash{}) || len(rs.Logs()) > len(receipts[many].Logs()) {
			many = b.Hash()
		}
	}
	if txs < 50 || len(receipts[many].Logs()) < 2 {
		t.Fatalf("%d transactions, at most %d logs in a block", txs, len(receipts[many].Logs()))
	}
	t.Logf("%d transactions, %d logs; block with most logs has %d", txs, logs, len(receipts[many].Logs()))

	rs := receipts[many]
	raw := string(rs.JSON())
	var withLogs int // a receipt with at least one log
	for i, r := range rs.Receipts {
		if len(r.Logs) > 0 {
			withLogs = i
			break
		}
	}
	cases := []struct {
		name  string
		edit  func(list []any)
		want  error
		where string
	}{
		{"receipt dropped", func(list []any) {}, verify.ErrMismatch, "receipts"},
		{"log dropped", func(list []any) {
			r := list[withLogs].(map[string]any)
			r["logs"] = r["logs"].([]any)[1:]
		}, verify.ErrMismatch, "receipts"},
		{"log data changed", func(list []any) {
			l := list[withLogs].(map[string]any)["logs"].([]any)[0].(map[string]any)
			l["data"] = "0x01"
		}, verify.ErrMismatch, "receipts"},
		{"status or post state changed", func(list []any) {
			r := list[0].(map[string]any)
			if s, ok := r["status"].(string); ok {
				r["status"] = map[string]string{"0x1": "0x0", "0x0": "0x1"}[s]
			} else {
				r["root"] = flipHex(r["root"].(string))
			}
		}, verify.ErrMismatch, "receipts"},
		{"cumulative gas changed", func(list []any) { list[0].(map[string]any)["cumulativeGasUsed"] = "0x1" }, verify.ErrMismatch, "receipts"},
		{"gas used changed", func(list []any) { list[0].(map[string]any)["gasUsed"] = "0x5208" }, verify.ErrMismatch, "receipts[0].gasUsed"},
		{"log index changed", func(list []any) {
			l := list[withLogs].(map[string]any)["logs"].([]any)[0].(map[string]any)
			l["logIndex"] = "0x63"
		}, verify.ErrMismatch, ".logIndex"},
		{"transaction hash changed", func(list []any) {
			r := list[0].(map[string]any)
			r["transactionHash"] = flipHex(r["transactionHash"].(string))
		}, verify.ErrMismatch, "receipts[0].transactionHash"},
		{"extra member", func(list []any) { list[0].(map[string]any)["l1Fee"] = "0x1" }, verify.ErrUnverifiable, "receipts[0].l1Fee"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var list []any
			if err := json.Unmarshal([]byte(raw), &list); err != nil {
				t.Fatal(err)
			}
			c.edit(list)
			if c.name == "receipt dropped" {
				list = list[:len(list)-1]
			}
			bad, _ := json.Marshal(list)
			_, err := fc.chain.VerifyReceipts(bad, rs.Block)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.where) {
				t.Fatalf("got %v, want %v naming %s", err, c.want, c.where)
			}
		})
	}
}

// TestVerifyLogsFixtureChain asks a real node for logs with filters of
// every shape and checks each answer against the verified receipts; the
// same answer with one log left out is caught.
func TestVerifyLogsFixtureChain(t *testing.T) {
	fc := loadFixture(t)
	node := fixtureNode(t)
	headers, receipts := verifiedChain(t, fc, node)
	// Pick an emitter and topics from the chain's own logs.
	var all []map[string]any
	if err := json.Unmarshal(call(t, node, "eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": "latest"}), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) < 5 {
		t.Fatalf("%d logs on the chain", len(all))
	}
	first := all[0]
	topic0 := first["topics"].([]any)[0]
	var otherTopic any = "0x" + strings.Repeat("ab", 32)
	for _, l := range all {
		if ts := l["topics"].([]any); len(ts) > 0 && ts[0] != topic0 {
			otherTopic = ts[0]
			break
		}
	}
	var second any = otherTopic
	for _, l := range all {
		if ts := l["topics"].([]any); len(ts) > 1 {
			second = ts[1]
			break
		}
	}
	mid := hexutil.EncodeUint64(uint64(len(headers) / 2))
	filters := map[string]map[string]any{
		"everything":           {"fromBlock": "0x1", "toBlock": "latest"},
		"one address":          {"fromBlock": "0x1", "toBlock": "latest", "address": first["address"]},
		"address list":         {"fromBlock": "0x1", "toBlock": "latest", "address": []any{first["address"], "0x0000000000000000000000000000000000000001"}},
		"first topic":          {"fromBlock": "0x1", "toBlock": "latest", "topics": []any{topic0}},
		"topic OR":             {"fromBlock": "0x1", "toBlock": "latest", "topics": []any{[]any{topic0, otherTopic}}},
		"null then topic":      {"fromBlock": "0x1", "toBlock": "latest", "topics": []any{nil, second}},
		"more topics than any": {"fromBlock": "0x1", "toBlock": "latest", "topics": []any{nil, nil, nil, nil}},
		"part of the range":    {"fromBlock": mid, "toBlock": "latest"},
		"block hash":           {"blockHash": first["blockHash"]},
		"nothing matches":      {"fromBlock": "0x1", "toBlock": "latest", "address": "0x00000000000000000000000000000000000000ee"},
	}
	seen := 0
	for name, f := range filters {
		t.Run(name, func(t *testing.T) {
			fj, _ := json.Marshal(f)
			q, err := evmverify.ParseFilter(fj)
			if err != nil {
				t.Fatal(err)
			}
			var span []*evmverify.Header
			for _, h := range headers {
				switch {
				case q.BlockHash != nil:
					if h.Hash() == *q.BlockHash {
						span = append(span, h)
					}
				case int64(h.Number()) >= q.FromBlock.Int64() && (q.ToBlock.Sign() < 0 || int64(h.Number()) <= q.ToBlock.Int64()):
					span = append(span, h)
				}
			}
			answer := call(t, node, "eth_getLogs", f)
			got, err := evmverify.VerifyLogs(answer, q, span, receipts)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(answer) {
				t.Fatal("answer changed")
			}
			var list []any
			json.Unmarshal(answer, &list)
			seen += len(list)
			if len(list) == 0 {
				if name != "nothing matches" && name != "more topics than any" {
					t.Fatalf("no logs for %s", fj)
				}
				return
			}
			// A log left out, first, in the middle or last, is caught.
			for _, i := range []int{0, len(list) / 2, len(list) - 1} {
				short := append(append([]any{}, list[:i]...), list[i+1:]...)
				bad, _ := json.Marshal(short)
				if _, err := evmverify.VerifyLogs(bad, q, span, receipts); !errors.Is(err, verify.ErrMismatch) {
					t.Fatalf("log %d left out: %v", i, err)
				}
			}
			// Without the receipts of a block whose bloom matches, nothing is claimed.
			partial := map[common.Hash]*evmverify.Receipts{}
			if _, err := evmverify.VerifyLogs(answer, q, span, partial); !errors.Is(err, verify.ErrUnverifiable) {
				t.Fatalf("no receipts: %v", err)
			}
		})
	}
	if seen < 10 {
		t.Fatalf("%d logs in all answers", seen)
	}
}

// TestMayHaveLogs: a block with an empty bloom needs no receipts for any
// filter; one with logs needs them for a filter its bloom does not rule
// out, and not for an address it does.
func TestMayHaveLogs(t *testing.T) {
	fc := loadFixture(t)
	var empty, full *evmverify.Header
	for _, b := range fc.blocks {
		h := evmverify.NewHeader(b.Header())
		if b.Bloom() == (types.Bloom{}) {
			empty = h
		} else if full == nil {
			full = h
		}
	}
	if empty == nil || full == nil {
		t.Fatal("no block with an empty bloom, or none with logs")
	}
	everything, _ := evmverify.ParseFilter([]byte(`{}`))
	absent, _ := evmverify.ParseFilter([]byte(`{"address":"0x00000000000000000000000000000000000000ee"}`))
	if evmverify.MayHaveLogs(empty, everything) || !evmverify.MayHaveLogs(full, everything) || evmverify.MayHaveLogs(full, absent) {
		t.Fatal("bloom rules wrong")
	}
}
