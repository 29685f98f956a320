package starknettx

import (
	"encoding/json"
	"errors"
	"testing"
)

const goodInvoke = `{"type":"INVOKE","sender_address":"0x1","calldata":["0x1","0x2"],"version":"0x3","signature":["0x5","0x6"],"nonce":"0x0",
"resource_bounds":{"l1_gas":{"max_amount":"0x0","max_price_per_unit":"0x1"},"l1_data_gas":{"max_amount":"0x10","max_price_per_unit":"0xffffffffffffffffffffffffffffffff"},"l2_gas":{"max_amount":"0xffffffffffffffff","max_price_per_unit":"0x2"}},
"tip":"0x0","paymaster_data":[],"account_deployment_data":[],"nonce_data_availability_mode":"L1","fee_data_availability_mode":"L1"}`

// Decoding names the bad field; a decoded transaction encodes back to the
// same fields.
func TestDecodeInvoke(t *testing.T) {
	tx, err := DecodeInvoke([]byte(goodInvoke))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(tx)
	again, err := DecodeInvoke(out)
	if err != nil || again.Hash(FeltU64(1)) != tx.Hash(FeltU64(1)) {
		t.Fatalf("round trip: %v\n%s", err, out)
	}
	cases := []struct{ name, edit, field string }{
		{"type", `"type":"DECLARE"`, "type"},
		{"sender", `"sender_address":"1"`, "sender_address"},
		{"calldata item", `"calldata":["0x1","0xzz"]`, "calldata[1]"},
		{"amount over u64", `"max_amount":"0x10000000000000000"`, "resource_bounds.l1_gas.max_amount"},
		{"price over u128", `"max_price_per_unit":"0x100000000000000000000000000000000"`, "resource_bounds.l1_gas.max_price_per_unit"},
		{"da mode", `"nonce_data_availability_mode":"L3"`, "nonce_data_availability_mode"},
		{"paymaster", `"paymaster_data":["0x1"]`, "paymaster_data"},
	}
	for _, c := range cases {
		raw := replaceFirstMember(t, goodInvoke, c.edit)
		_, err := DecodeInvoke([]byte(raw))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want a FieldError on %s", c.name, err, c.field)
		}
	}
	if _, err := DecodeInvoke([]byte(replaceFirstMember(t, goodInvoke, `"version":"0x1"`))); err != ErrUnsupportedVersion {
		t.Errorf("version 1: %v", err)
	}
	q, err := DecodeInvoke([]byte(replaceFirstMember(t, goodInvoke, `"version":"0x100000000000000000000000000000003"`)))
	if err != nil || !q.Query {
		t.Errorf("query version: %v", err)
	}
}

// replaceFirstMember swaps the first member with the edit's name for the
// edit.
func replaceFirstMember(t *testing.T, doc, edit string) string {
	t.Helper()
	name := edit[:len(edit)-len(edit[indexColon(edit):])]
	i := indexOf(doc, name+":")
	if i < 0 {
		t.Fatalf("no %s", name)
	}
	j := i + len(name) + 1
	depth := 0
	for ; j < len(doc); j++ {
		switch doc[j] {
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return doc[:i] + edit + doc[j:]
			}
			depth--
			if depth == 0 {
				j++
				return doc[:i] + edit + doc[j:]
			}
		case ',':
			if depth == 0 {
				return doc[:i] + edit + doc[j:]
			}
		}
	}
	return doc[:i] + edit
}

func indexColon(s string) int { return indexOf(s, ":") }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// FuzzDecodeTransaction: the decoders never panic, and what they accept
// encodes to JSON they accept again with the same hash.
func FuzzDecodeTransaction(f *testing.F) {
	f.Add([]byte(goodInvoke))
	f.Add([]byte(`{"type":"DEPLOY_ACCOUNT","class_hash":"0x1","contract_address_salt":"0x2","constructor_calldata":["0x3"],"version":"0x3","signature":[],"nonce":"0x0","resource_bounds":{"l1_gas":{"max_amount":"0x0","max_price_per_unit":"0x0"},"l1_data_gas":{"max_amount":"0x0","max_price_per_unit":"0x0"},"l2_gas":{"max_amount":"0x0","max_price_per_unit":"0x0"}}}`))
	f.Add([]byte(`{"type":"INVOKE","version":"0x3"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		chain := ShortString("SN_FUZZ")
		if tx, err := DecodeInvoke(raw); err == nil {
			out, _ := json.Marshal(tx)
			again, err := DecodeInvoke(out)
			if err != nil || again.Hash(chain) != tx.Hash(chain) {
				t.Fatalf("invoke round trip: %v\n%s", err, out)
			}
		}
		if tx, err := DecodeDeployAccount(raw); err == nil {
			out, _ := json.Marshal(tx)
			again, err := DecodeDeployAccount(out)
			if err != nil || again.Hash(chain) != tx.Hash(chain) {
				t.Fatalf("deploy round trip: %v\n%s", err, out)
			}
		}
	})
}
