package starkblock_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/porticohq/portico/families/starknet/starkblock"
)

// TestRealHeader recomputes the hash of a real network block from its
// header as a node sends it (a starknet_subscriptionNewHeads result
// recorded in pathfinder's WebSocket documentation, protocol 0.14.3),
// then changes each field the hash covers and expects another hash.
func TestRealHeader(t *testing.T) {
	raw, err := os.ReadFile("testdata/pathfinder_newheads_0.14.3.json")
	if err != nil {
		t.Fatal(err)
	}
	h, claimed, err := starkblock.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&claimed) {
		t.Fatalf("recomputed %s, the block's hash is %s", got.Text(16), claimed.Text(16))
	}

	var fields map[string]any
	json.Unmarshal(raw, &fields)
	for name, v := range fields {
		if name == "block_hash" {
			continue
		}
		changed := map[string]any{}
		for k, x := range fields {
			changed[k] = x
		}
		switch x := v.(type) {
		case float64:
			changed[name] = x + 1
		case string:
			switch name {
			case "l1_da_mode":
				changed[name] = "CALLDATA"
			case "starknet_version":
				changed[name] = "0.14.4"
			default: // another last hex digit
				last := byte('1')
				if x[len(x)-1] == '1' {
					last = '2'
				}
				changed[name] = x[:len(x)-1] + string(last)
			}
		case map[string]any:
			changed[name] = map[string]any{"price_in_fri": "0x1", "price_in_wei": x["price_in_wei"]}
		}
		b, _ := json.Marshal(changed)
		h, _, err := starkblock.Decode(b)
		if err != nil {
			t.Fatalf("%s changed: %v", name, err)
		}
		if other, err := h.Hash(); err != nil || other.Equal(&claimed) {
			t.Errorf("changing %s keeps the hash (err %v)", name, err)
		}
	}
}
