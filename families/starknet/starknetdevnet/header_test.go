package starknetdevnet

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/porticohq/portico/families/starknet/starkblock"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// checkHeader decodes a sealed header with starkblock and checks that it
// hashes to its block_hash, and that changing any one field the hash
// commits to changes the hash.
func checkHeader(t *testing.T, raw json.RawMessage) *starkblock.Header {
	t.Helper()
	h, claimed, err := starkblock.Decode(raw)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	got, err := h.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&claimed) {
		t.Fatalf("block %d: header hashes to %s, block_hash is %s", h.Number, starknettx.Hex(&got), starknettx.Hex(&claimed))
	}
	one := starknettx.FeltU64(1)
	bump := func(f *Felt) { f.Add(f, &one) }
	for _, c := range []struct {
		field  string
		change func(h *starkblock.Header)
	}{
		{"block_number", func(h *starkblock.Header) { h.Number++ }},
		{"new_root", func(h *starkblock.Header) { bump(&h.StateRoot) }},
		{"sequencer_address", func(h *starkblock.Header) { bump(&h.Sequencer) }},
		{"timestamp", func(h *starkblock.Header) { h.Timestamp++ }},
		{"transaction_count", func(h *starkblock.Header) { h.TxCount++ }},
		{"event_count", func(h *starkblock.Header) { h.EventCount++ }},
		{"state_diff_length", func(h *starkblock.Header) { h.StateDiffLength++ }},
		{"l1_da_mode", func(h *starkblock.Header) { h.Blob = !h.Blob }},
		{"state_diff_commitment", func(h *starkblock.Header) { bump(&h.StateDiffCommitment) }},
		{"transaction_commitment", func(h *starkblock.Header) { bump(&h.TxCommitment) }},
		{"event_commitment", func(h *starkblock.Header) { bump(&h.EventCommitment) }},
		{"receipt_commitment", func(h *starkblock.Header) { bump(&h.ReceiptCommitment) }},
		{"l1_gas_price.price_in_wei", func(h *starkblock.Header) { bump(&h.L1Gas.Wei) }},
		{"l1_gas_price.price_in_fri", func(h *starkblock.Header) { bump(&h.L1Gas.Fri) }},
		{"l1_data_gas_price.price_in_wei", func(h *starkblock.Header) { bump(&h.L1DataGas.Wei) }},
		{"l1_data_gas_price.price_in_fri", func(h *starkblock.Header) { bump(&h.L1DataGas.Fri) }},
		{"l2_gas_price.price_in_wei", func(h *starkblock.Header) { bump(&h.L2Gas.Wei) }},
		{"l2_gas_price.price_in_fri", func(h *starkblock.Header) { bump(&h.L2Gas.Fri) }},
		{"starknet_version", func(h *starkblock.Header) { h.Version = "0.13.5" }},
		{"parent_hash", func(h *starkblock.Header) { bump(&h.Parent) }},
	} {
		changed := *h
		c.change(&changed)
		other, err := changed.Hash()
		if err != nil {
			t.Fatalf("%s: %v", c.field, err)
		}
		if other.Equal(&got) {
			t.Fatalf("block %d: changing %s leaves the hash", h.Number, c.field)
		}
	}
	return h
}

// TestSealedHeadersHash checks every sealed header the devnet sends, from
// getBlockWithTxHashes and from newHeads, against its block_hash with
// package starkblock, the verifier's code; the counts are the block's.
// Pending headers carry no commitments.
func TestSealedHeadersHash(t *testing.T) {
	spec := loadWSSpec(t)
	d, c := startDevnet(t, Config{Clock: fixedClock})
	buildChain(t, d, 4, 3)
	head := decodeJSON[uint64](t, c.must("starknet_blockNumber", ""))
	w := dialWS(t, d, spec)
	id := w.subscribe("starknet_subscribeNewHeads", `{"block_id":{"block_number":0}}`)
	events := 0
	for n := uint64(0); n <= head; n++ {
		raw := c.must("starknet_getBlockWithTxHashes", `{"block_id":{"block_number":`+strconv.FormatUint(n, 10)+`}}`)
		h := checkHeader(t, raw)
		checkHeader(t, w.expect(notifyNewHeads, id).Params.Result)
		blk := decodeJSON[struct {
			Transactions []string `json:"transactions"`
		}](t, raw)
		if h.Number != n || h.TxCount != uint64(len(blk.Transactions)) {
			t.Fatalf("block %d: number %d, %d transactions, transaction_count %d", n, h.Number, len(blk.Transactions), h.TxCount)
		}
		if n > 0 && (h.TxCount == 0 || h.EventCount == 0 || h.StateDiffLength == 0) {
			t.Fatalf("block %d of traffic: counts %d %d %d", n, h.TxCount, h.EventCount, h.StateDiffLength)
		}
		events += int(h.EventCount)
	}
	all := decodeJSON[struct {
		Events []json.RawMessage `json:"events"`
	}](t, c.must("starknet_getEvents", `{"filter":{"to_block":"latest","chunk_size":1024}}`))
	if len(all.Events) != events {
		t.Fatalf("event_count sums to %d, getEvents has %d", events, len(all.Events))
	}
	if err := d.GenerateTraffic(); err != nil {
		t.Fatal(err)
	}
	var fe *starkblock.FieldError
	if _, _, err := starkblock.Decode(c.must("starknet_getBlockWithTxHashes", `["pending"]`)); !errors.As(err, &fe) {
		t.Fatalf("pending header decoded: %v", err)
	}
}

// TestMigrateCommitments opens a data directory whose blocks table has no
// counts and commitments, as before the devnet stored them: they are
// computed from the stored blocks, and every header hashes to its hash
// again.
func TestMigrateCommitments(t *testing.T) {
	dir := t.TempDir()
	d1, c1 := startDevnet(t, Config{DataDir: dir, Clock: fixedClock})
	buildChain(t, d1, 3, 3)
	var before []string
	for n := range 4 {
		before = append(before, string(c1.must("starknet_getBlockWithTxHashes", `[{"block_number":`+strconv.Itoa(n)+`}]`)))
	}
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "starknet-devnet.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"tx_count", "event_count", "diff_length", "tx_commitment", "event_commitment", "receipt_commitment", "diff_commitment"} {
		if _, err := db.ExecContext(context.Background(), `ALTER TABLE blocks DROP COLUMN `+col); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	_, c2 := startDevnet(t, Config{DataDir: dir, Clock: fixedClock})
	for n := range 4 {
		raw := c2.must("starknet_getBlockWithTxHashes", `[{"block_number":`+strconv.Itoa(n)+`}]`)
		if string(raw) != before[n] {
			t.Fatalf("block %d after migration\n%s\nwant\n%s", n, raw, before[n])
		}
		checkHeader(t, raw)
	}
}
