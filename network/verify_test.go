package network

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/porticohq/portico/network/verify"
)

// TestParseVerifyMode: the config's three spellings, exactly, and off by
// default.
func TestParseVerifyMode(t *testing.T) {
	cases := []struct {
		in      string
		want    VerifyMode
		wantErr bool
	}{
		{"", VerifyOff, false},
		{"off", VerifyOff, false},
		{"on", VerifyOn, false},
		{"strict", VerifyStrict, false},
		{"true", VerifyOff, true},
		{"On", VerifyOff, true},
		{"STRICT", VerifyOff, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseVerifyMode(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseVerifyMode(%q) = %v, %v", tc.in, got, err)
			}
			if err == nil && tc.in != "" && got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

// TestParseBlock: how a verified call's block parameter is read; pending
// cannot be verified, and a tag needs the served chain.
func TestParseBlock(t *testing.T) {
	v := &verifier{}
	hash := `"0x` + "ab" + "00000000000000000000000000000000000000000000000000000000000000"[:62] + `"`
	cases := []struct {
		name, raw string
		want      blockRef
		wantErr   bool
	}{
		{"number", `"0x1f"`, blockRef{number: 31}, false},
		{"earliest", `"earliest"`, blockRef{number: 0}, false},
		{"hash", hash, blockRef{byHash: true}, false},
		{"EIP-1898 hash", `{"blockHash":` + hash + `}`, blockRef{byHash: true}, false},
		{"EIP-1898 number", `{"blockNumber":"0x2"}`, blockRef{number: 2}, false},
		{"pending", `"pending"`, blockRef{}, true},
		{"garbage", `"0xzz"`, blockRef{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.parseBlock([]byte(tc.raw))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (got.byHash != tc.want.byHash || got.number != tc.want.number) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCheckStarkHeader: a rollup header is trusted only when its fields
// hash to the hash asked for; a header without the spec 0.10 fields, or of
// a protocol before 0.13.2, cannot be checked (nobody's fault).
func TestCheckStarkHeader(t *testing.T) {
	raw, err := os.ReadFile("../families/starknet/starkblock/testdata/pathfinder_newheads_0.14.3.json")
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

// TestSplitParams: a verified call's params are split into their
// elements as sent (spacing inside an element kept, duplicate names and
// all, for the method's own reading to judge); null and nothing are no
// params; anything but one array is not positional params.
func TestSplitParams(t *testing.T) {
	cases := []struct {
		raw     string
		want    []string
		wantErr bool
	}{
		{``, nil, false},
		{`null`, nil, false},
		{`[]`, nil, false},
		{` [ "0xab" , {"a": 1, "a": 2} ,null,[1, 2]] `, []string{`"0xab"`, `{"a": 1, "a": 2}`, `null`, `[1, 2]`}, false},
		{`{"a":1}`, nil, true},
		{`"0x1"`, nil, true},
		{`[1] [2]`, nil, true},
		{`null 1`, nil, true},
		{`[1,`, nil, true},
	}
	for _, c := range cases {
		ps, err := splitParams([]byte(c.raw))
		if (err != nil) != c.wantErr {
			t.Errorf("%q: error %v, want error %v", c.raw, err, c.wantErr)
			continue
		}
		var got []string
		for _, p := range ps {
			got = append(got, string(p))
		}
		if len(got) != len(c.want) {
			t.Errorf("%q: %q, want %q", c.raw, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: %q, want %q", c.raw, got, c.want)
			}
		}
	}
	if _, err := parseAddress([]byte(`"0x\u0030000000000000000000000000000000000000001"`)); err != nil {
		t.Errorf("an escaped address: %v", err)
	}
	for _, raw := range []string{`"0x01"`, `1`, `"0xzz00000000000000000000000000000000000001"`} {
		if _, err := parseAddress([]byte(raw)); err == nil {
			t.Errorf("parseAddress(%s) passed", raw)
		}
	}
}
