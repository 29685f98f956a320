package starknetdevnet

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

var update = flag.Bool("update", false, "rewrite the WebSocket notification goldens in testdata/ws")

// golden compares a notification with testdata/ws/name.json, byte for byte.
func golden(t *testing.T, name string, m wsMessage) {
	t.Helper()
	path := filepath.Join("testdata", "ws", name+".json")
	got := append(append([]byte(nil), m.Raw...), '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestWSGolden -update writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s:\n%s\nwant\n%s", name, got, want)
	}
}

// TestWSGolden keeps one notification of each kind in testdata/ws, each
// validated against the spec first. The chain is reproducible (fixed clock,
// traffic seeded by block and round) and every connection's first
// subscription is "1". The reorg notification comes from notifyReorg,
// since the devnet never reorgs by itself.
func TestWSGolden(t *testing.T) {
	spec := loadWSSpec(t)
	d, _ := startDevnet(t, Config{Clock: fixedClock, L1Lag: 1})
	buildChain(t, d, 2, 1)
	transfer, token := starknettx.Hex(&selTransfer), starknettx.Hex(&tokenAddress)

	w := dialWS(t, d, spec)
	id := w.subscribe("starknet_subscribeNewHeads", `{"block_id":{"block_number":2}}`)
	golden(t, "newHeads", w.expect(notifyNewHeads, id))

	w = dialWS(t, d, spec)
	id = w.subscribe("starknet_subscribeEvents", `{"from_address":"`+token+`","keys":[["`+transfer+`"]],"block_id":{"block_number":2}}`)
	golden(t, "events", w.expect(notifyEvents, id))

	w = dialWS(t, d, spec)
	hashes := w.subscribe("starknet_subscribePendingTransactions", "")
	wd := dialWS(t, d, spec)
	details := wd.subscribe("starknet_subscribePendingTransactions", `{"transaction_details":true}`)
	traffic(t, d)
	golden(t, "pendingTransactions", w.expect(notifyPendingTx, hashes))
	golden(t, "pendingTransactionsDetails", wd.expect(notifyPendingTx, details))

	w = dialWS(t, d, spec)
	tx := pendingTx(d, 0)
	status := w.subscribe("starknet_subscribeTransactionStatus", `["`+starknettx.Hex(&tx.hash)+`"]`)
	golden(t, "transactionStatus", w.expect(notifyTxStatus, status))

	// A reorg reaches newHeads (in its stream's order), events and
	// transactionStatus subscriptions, but not pending transactions.
	wh := dialWS(t, d, spec)
	heads := wh.subscribe("starknet_subscribeNewHeads", "")
	wh.expect(notifyNewHeads, heads)
	if err := d.notifyReorg(context.Background(), 1, 2); err != nil {
		t.Fatal(err)
	}
	golden(t, "reorg", wh.expect(notifyReorg, heads))
	w.expect(notifyReorg, status)
	wd.fence()
	for _, m := range wd.backlog { // the rest of the traffic round
		if m.Method != notifyPendingTx {
			t.Fatalf("pending transactions subscription got %s", m.Raw)
		}
	}
	seal(t, d)
	wh.expect(notifyNewHeads, heads) // the stream goes on
	if err := d.notifyReorg(context.Background(), 2, 1); err == nil {
		t.Fatal("a reorg of blocks 2..1 was accepted")
	}
}
