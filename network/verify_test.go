package network

import "testing"

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
