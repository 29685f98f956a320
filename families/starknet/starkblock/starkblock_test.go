package starkblock_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/porticohq/portico/families/starknet/starkblock"
)

func felt(v uint64) starkblock.Felt {
	var f starkblock.Felt
	f.SetUint64(v)
	return f
}

// sample is a header with every field distinct and non-zero.
func sample(version string) starkblock.Header {
	return starkblock.Header{
		Number: 7, StateRoot: felt(0x500), Sequencer: felt(0x5e9), Timestamp: 1_750_000_000,
		TxCount: 3, EventCount: 9, StateDiffLength: 11, Blob: true,
		StateDiffCommitment: felt(0xd1ff), TxCommitment: felt(0x7c), EventCommitment: felt(0xec), ReceiptCommitment: felt(0x3c),
		L1Gas: starkblock.Price{Wei: felt(1), Fri: felt(2)}, L1DataGas: starkblock.Price{Wei: felt(3), Fri: felt(4)},
		L2Gas: starkblock.Price{Wei: felt(5), Fri: felt(6)}, Version: version, Parent: felt(0xba5e),
	}
}

func mustHash(t *testing.T, h *starkblock.Header) starkblock.Felt {
	t.Helper()
	f, err := h.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestEachFieldChangesTheHash changes one field at a time, in both
// layouts: every field changes the hash, except the L2 gas price in the
// 0.13.2 layout, which does not commit to it.
func TestEachFieldChangesTheHash(t *testing.T) {
	one := felt(1)
	bump := func(f *starkblock.Felt) { f.Add(f, &one) }
	cases := []struct {
		field  string
		change func(h *starkblock.Header)
		in0132 bool // the 0.13.2 layout commits to it
	}{
		{"block_number", func(h *starkblock.Header) { h.Number++ }, true},
		{"new_root", func(h *starkblock.Header) { bump(&h.StateRoot) }, true},
		{"sequencer_address", func(h *starkblock.Header) { bump(&h.Sequencer) }, true},
		{"timestamp", func(h *starkblock.Header) { h.Timestamp++ }, true},
		{"transaction_count", func(h *starkblock.Header) { h.TxCount++ }, true},
		{"event_count", func(h *starkblock.Header) { h.EventCount++ }, true},
		{"state_diff_length", func(h *starkblock.Header) { h.StateDiffLength++ }, true},
		{"l1_da_mode", func(h *starkblock.Header) { h.Blob = false }, true},
		{"state_diff_commitment", func(h *starkblock.Header) { bump(&h.StateDiffCommitment) }, true},
		{"transaction_commitment", func(h *starkblock.Header) { bump(&h.TxCommitment) }, true},
		{"event_commitment", func(h *starkblock.Header) { bump(&h.EventCommitment) }, true},
		{"receipt_commitment", func(h *starkblock.Header) { bump(&h.ReceiptCommitment) }, true},
		{"l1_gas_price.price_in_wei", func(h *starkblock.Header) { bump(&h.L1Gas.Wei) }, true},
		{"l1_gas_price.price_in_fri", func(h *starkblock.Header) { bump(&h.L1Gas.Fri) }, true},
		{"l1_data_gas_price.price_in_wei", func(h *starkblock.Header) { bump(&h.L1DataGas.Wei) }, true},
		{"l1_data_gas_price.price_in_fri", func(h *starkblock.Header) { bump(&h.L1DataGas.Fri) }, true},
		{"l2_gas_price.price_in_wei", func(h *starkblock.Header) { bump(&h.L2Gas.Wei) }, false},
		{"l2_gas_price.price_in_fri", func(h *starkblock.Header) { bump(&h.L2Gas.Fri) }, false},
		{"parent_hash", func(h *starkblock.Header) { bump(&h.Parent) }, true},
	}
	for _, version := range []string{"0.13.2", "0.13.4"} {
		base := sample(version)
		want := mustHash(t, &base)
		for _, c := range cases {
			h := sample(version)
			c.change(&h)
			got := mustHash(t, &h)
			commits := c.in0132 || version != "0.13.2"
			if commits == got.Equal(&want) {
				t.Errorf("%s, changing %s: hash changed %v, want %v", version, c.field, !got.Equal(&want), commits)
			}
		}
	}
}

// TestVersions: no layout before 0.13.2 or for an unreadable version;
// 0.13.2 and 0.13.3 share a layout, 0.13.4 and later another.
func TestVersions(t *testing.T) {
	for _, c := range []struct {
		version string
		ok      bool
	}{
		{"0.13.1", false}, {"0.13.1.1", false}, {"0.12.3", false}, {"", false}, {"0.13.x", false}, {"1", false}, {"0.13.2.1.5", false},
		{"0.13.2", true}, {"0.13.2.1", true}, {"0.13.3", true}, {"0.13.4", true}, {"0.13.5", true}, {"0.14.0", true},
	} {
		h := sample(c.version)
		_, err := h.Hash()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, starkblock.ErrVersion)) {
			t.Errorf("version %q: %v", c.version, err)
		}
	}
	// The same fields under the two layouts hash differently, even with
	// the version's own felt aside: 0.13.3 and 0.13.4 differ in the prefix
	// and the gas prices, and 0.13.3's hash ignores L2 gas while 0.13.4's
	// does not (TestEachFieldChangesTheHash).
	a, b := sample("0.13.3"), sample("0.13.4")
	if ha, hb := mustHash(t, &a), mustHash(t, &b); ha.Equal(&hb) {
		t.Error("0.13.3 and 0.13.4 layouts agree")
	}
}

// header is sample("0.13.4") as a node's JSON, with its hash.
func headerJSON(t *testing.T) map[string]any {
	t.Helper()
	h := sample("0.13.4")
	hash := mustHash(t, &h)
	hex := func(f starkblock.Felt) string { return "0x" + f.Text(16) }
	price := func(p starkblock.Price) map[string]any {
		return map[string]any{"price_in_wei": hex(p.Wei), "price_in_fri": hex(p.Fri)}
	}
	return map[string]any{
		"block_hash": hex(hash), "parent_hash": hex(h.Parent), "block_number": h.Number, "new_root": hex(h.StateRoot),
		"timestamp": h.Timestamp, "sequencer_address": hex(h.Sequencer),
		"l1_gas_price": price(h.L1Gas), "l2_gas_price": price(h.L2Gas), "l1_data_gas_price": price(h.L1DataGas),
		"l1_da_mode": "BLOB", "starknet_version": h.Version,
		"event_commitment": hex(h.EventCommitment), "transaction_commitment": hex(h.TxCommitment),
		"receipt_commitment": hex(h.ReceiptCommitment), "state_diff_commitment": hex(h.StateDiffCommitment),
		"event_count": h.EventCount, "transaction_count": h.TxCount, "state_diff_length": h.StateDiffLength,
		"status": "ACCEPTED_ON_L2", "transactions": []string{},
	}
}

// TestDecode reads a full header back to the fields it was written from,
// and names the field when one is missing or unreadable.
func TestDecode(t *testing.T) {
	full := headerJSON(t)
	raw, _ := json.Marshal(full)
	h, claimed, err := starkblock.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := sample("0.13.4"); *h != want {
		t.Fatalf("decoded %+v, want %+v", *h, want)
	}
	if got := mustHash(t, h); !got.Equal(&claimed) {
		t.Fatal("decoded header does not hash to its block_hash")
	}
	for _, field := range []string{"block_hash", "parent_hash", "block_number", "new_root", "timestamp", "sequencer_address",
		"l1_gas_price", "l2_gas_price", "l1_data_gas_price", "l1_da_mode", "starknet_version",
		"event_commitment", "transaction_commitment", "receipt_commitment", "state_diff_commitment",
		"event_count", "transaction_count", "state_diff_length"} {
		m := headerJSON(t)
		delete(m, field)
		raw, _ := json.Marshal(m)
		var fe *starkblock.FieldError
		if _, _, err := starkblock.Decode(raw); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("without %s: %v", field, err)
		}
	}
	for _, c := range []struct {
		field string
		value any
	}{
		{"l1_da_mode", "BLOBS"},
		{"new_root", "0x800000000000011000000000000000000000000000000000000000000000001"}, // the prime
		{"event_count", -1},
		{"parent_hash", "12"},
		{"block_number", "7"},
		{"l2_gas_price", map[string]any{"price_in_wei": "0x1"}},
		{"l1_gas_price", map[string]any{"price_in_wei": "0x1", "price_in_fri": "zz"}},
		{"starknet_version", 13},
		{"transaction_commitment", nil},
	} {
		m := headerJSON(t)
		m[c.field] = c.value
		raw, _ := json.Marshal(m)
		var fe *starkblock.FieldError
		if _, _, err := starkblock.Decode(raw); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s = %v: %v", c.field, c.value, err)
		}
	}
}
