package starkverify

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/porticohq/portico/network/verify"
)

// TestCheckStarkHeader: a rollup header is trusted only when its fields
// hash to the hash asked for; a header without the spec 0.10 fields, or of
// a protocol before 0.13.2, cannot be checked (nobody's fault).
func TestCheckStarkHeader(t *testing.T) {
	raw, err := os.ReadFile("../starkblock/testdata/pathfinder_newheads_0.14.3.json")
	if err != nil {
		t.Fatal(err)
	}
	var real map[string]any
	json.Unmarshal(raw, &real)
	hash := common.HexToHash(real["block_hash"].(string))
	with := func(k string, v any) []byte {
		m := map[string]any{}
		for key, x := range real {
			m[key] = x
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return b
	}
	cases := []struct {
		name string
		res  []byte
		hash common.Hash
		want error // nil: trusted
	}{
		{"real block", raw, hash, nil},
		{"new_root changed, hash kept", with("new_root", "0x1234"), hash, verify.ErrMismatch},
		{"timestamp changed", with("timestamp", 1), hash, verify.ErrMismatch},
		{"another block asked", raw, common.HexToHash("0x1"), verify.ErrMismatch},
		{"no commitments (spec 0.8)", with("receipt_commitment", nil), hash, verify.ErrUnverifiable},
		{"protocol 0.13.1", with("starknet_version", "0.13.1"), hash, verify.ErrUnverifiable},
		{"not a felt", with("new_root", "root"), hash, verify.ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := checkStarkHeader(tc.res, tc.hash)
			if tc.want == nil {
				if err != nil || h == nil || h.Number != 11834642 {
					t.Fatalf("got %+v, %v", h, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
