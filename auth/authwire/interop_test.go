package authwire

import (
	"encoding/json"
	"testing"
)

// extraLoginOptions.max_age is `string | number` in the JavaScript SDK's
// types; both decode, and it is sent on as a string.
func TestMaxAgeStringOrNumber(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`{"max_age":"3600"}`, "3600", true},
		{`{"max_age":3600}`, "3600", true},
		{`{"max_age":0}`, "0", true},
		{`{"max_age":null}`, "", true},
		{`{}`, "", true},
		{`{"max_age":1.5}`, "", false},
		{`{"max_age":-1}`, "", false},
		{`{"max_age":true}`, "", false},
	}
	for _, c := range cases {
		var xo ExtraLoginOptions
		err := json.Unmarshal([]byte(c.in), &xo)
		if (err == nil) != c.ok || (c.ok && string(xo.MaxAge) != c.want) {
			t.Errorf("%s: %q %v", c.in, xo.MaxAge, err)
		}
	}
	b, _ := json.Marshal(ExtraLoginOptions{MaxAge: "60"})
	if string(b) != `{"max_age":"60"}` {
		t.Errorf("encoded %s", b)
	}
}

// The v7 state type also carries the TSS and key-mode fields of the
// JavaScript OpenloginSessionData; they round-trip byte for byte.
func TestStateV7FieldsRoundTrip(t *testing.T) {
	in := `{"privKey":"01","userInfo":{"typeOfLogin":"jwt"},"factorKey":"ff","signatures":["{\"data\":\"d\",\"sig\":\"s\"}"],` +
		`"tssShareIndex":2,"tssPubKey":"02ab","tssShare":"0c","tssTag":"default","tssNonce":0,"nodeIndexes":[1,2,4],"keyMode":"1/1"}`
	var st State
	if err := json.Unmarshal([]byte(in), &st); err != nil {
		t.Fatal(err)
	}
	if st.FactorKey != "ff" || len(st.Signatures) != 1 || st.TSSShareIndex == nil || *st.TSSShareIndex != 2 || st.TSSNonce == nil ||
		*st.TSSNonce != 0 || st.TSSTag != "default" || len(st.NodeIndexes) != 3 || st.KeyMode != KeyMode1of1 {
		t.Fatalf("%+v", st)
	}
	out, _ := json.Marshal(st)
	if string(out) != in {
		t.Fatalf("round trip:\n%s\n%s", out, in)
	}
}
