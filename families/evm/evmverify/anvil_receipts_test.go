package evmverify_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/internal/evmcontracts"
	"github.com/porticohq/portico/network/verify"
)

// TestReceiptsAndLogsAgainstAnvil puts several transactions that emit
// logs into one anvil block, verifies the block, its receipts and an
// eth_getLogs answer from anvil, and catches one log or one receipt left
// out.
func TestReceiptsAndLogsAgainstAnvil(t *testing.T) {
	a := startAnvil(t)
	emitter := a.deploy(t, evmcontracts.EmitterInit())
	for i := range 4 {
		tx := map[string]any{"from": a.dev, "to": emitter, "data": hexutil.Encode(common.LeftPadBytes([]byte{byte(i + 1)}, 32)), "gas": hexutil.Uint64(200_000)}
		if err := a.c.Call(nil, "eth_sendTransaction", tx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.c.Call(nil, "evm_mine"); err != nil {
		t.Fatal(err)
	}
	var raw json.RawMessage
	if err := a.c.Call(&raw, "eth_getBlockByNumber", "latest", true); err != nil {
		t.Fatal(err)
	}
	b, err := a.chain.VerifyBlock(raw, common.Hash{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Transactions) != 4 {
		t.Fatalf("%d transactions in the block", len(b.Transactions))
	}
	receipts := call(t, a.c, "eth_getBlockReceipts", b.Header.Hash())
	rs, err := a.chain.VerifyReceipts(receipts, b)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rs.Logs()); n != 12 {
		t.Fatalf("%d logs", n)
	}
	for _, tx := range b.Transactions {
		got, _ := rs.ReceiptJSON(tx.Hash())
		if !jsonEqual(string(got), string(call(t, a.c, "eth_getTransactionReceipt", tx.Hash()))) {
			t.Fatalf("receipt of %s differs", tx.Hash())
		}
	}
	filter := map[string]any{"blockHash": b.Header.Hash(), "topics": []any{nil, "0x00000000000000000000000000000000000000000000000000000000000000bb"}}
	fj, _ := json.Marshal(filter)
	q, err := evmverify.ParseFilter(fj)
	if err != nil {
		t.Fatal(err)
	}
	answer := call(t, a.c, "eth_getLogs", filter)
	byHash := map[common.Hash]*evmverify.Receipts{b.Header.Hash(): rs}
	if _, err := evmverify.VerifyLogs(answer, q, []*evmverify.Header{b.Header}, byHash); err != nil {
		t.Fatal(err)
	}
	var logs []any
	json.Unmarshal(answer, &logs)
	if len(logs) != 8 {
		t.Fatalf("%d logs match", len(logs))
	}
	short, _ := json.Marshal(append(logs[:3:3], logs[4:]...))
	if _, err := evmverify.VerifyLogs(short, q, []*evmverify.Header{b.Header}, byHash); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("a log left out: %v", err)
	}
	var list []any
	json.Unmarshal(receipts, &list)
	dropped, _ := json.Marshal(list[1:])
	if _, err := a.chain.VerifyReceipts(dropped, b); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("a receipt left out: %v", err)
	}
}
