package evmverify

import "testing"

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
