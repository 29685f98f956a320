package solana_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/solana"
)

const (
	key = `"11111111111111111111111111111111"`
	sig = `"5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"`
	// A signed transaction: base58 and base64 of the same 3 bytes are
	// enough for the gateway, which checks only the encoding and size.
	tx58 = `"Ldp"`
	tx64 = `"AQID"`
)

// TestClientMethodParams runs each validation row: accepted params are
// forwarded unchanged, refused ones name the param and the field.
func TestClientMethodParams(t *testing.T) {
	rows := map[string]portico.Method{}
	for _, m := range solana.Table().Methods {
		rows[m.Name] = m
	}
	cases := []struct {
		method, params string
		err            string // "" when accepted
	}{
		{"getSlot", ``, ""},
		{"getSlot", `[]`, ""},
		{"getSlot", `null`, ""},
		{"getSlot", `[{"commitment":"processed","minContextSlot":5}]`, ""},
		{"getSlot", `[{"commitment":"recent"}]`, `invalid params: param 1 (config.commitment): want one of finalized, confirmed, processed, got string "recent"`},
		{"getSlot", `[{"minContextSlot":-1}]`, `invalid params: param 1 (config.minContextSlot): want a non-negative integer, got number -1`},
		{"getSlot", `[{"comitment":"processed"}]`, `invalid params: param 1 (config.comitment): unknown field; allowed fields are commitment, minContextSlot`},
		{"getBlockHeight", `["finalized"]`, `invalid params: param 1 (config): want an object, got string "finalized"`},
		{"getLatestBlockhash", `[{"commitment":"confirmed"}]`, ""},
		{"getEpochInfo", `[{},1]`, `invalid params: param 2: too many params: want at most 1 [config], got 2`},
		{"getVersion", `[]`, ""},
		{"getVersion", `[1]`, `invalid params: param 1: too many params: want at most 0 [], got 1`},
		{"getHealth", ``, ""},
		{"getGenesisHash", `{}`, `invalid params: want an array [], got an object`},
		{"getFirstAvailableBlock", `[]`, ""},
		{"getBalance", `[` + key + `]`, ""},
		{"getBalance", `[` + key + `,{"commitment":"confirmed"}]`, ""},
		{"getBalance", `[]`, `invalid params: param 1 (pubkey): missing; want 1 to 2 params [pubkey, config], got 0`},
		{"getBalance", `["abc"]`, `invalid params: param 1 (pubkey): want a base58 public key of 32 bytes, got string "abc"`},
		{"getBalance", `["0OIl"]`, `invalid params: param 1 (pubkey): want a base58 public key of 32 bytes, got string "0OIl"`},
		{"getBalance", `[1]`, `invalid params: param 1 (pubkey): want a string, got number 1`},
		{"getAccountInfo", `[` + key + `,{"encoding":"jsonParsed","dataSlice":{"offset":0,"length":8}}]`, ""},
		{"getAccountInfo", `[` + key + `,{"encoding":"json"}]`, `invalid params: param 2 (config.encoding): want one of base58, base64, base64+zstd, jsonParsed, got string "json"`},
		{"getAccountInfo", `[` + key + `,{"dataSlice":{"offset":0}}]`, `invalid params: param 2 (config.dataSlice.length): missing`},
		{"getBlocks", `[5]`, ""},
		{"getBlocks", `[5,10]`, ""},
		{"getBlocks", `[5,{"commitment":"confirmed"}]`, ""},
		{"getBlocks", `[5,10,{"commitment":"processed"}]`, `invalid params: param 3 (config.commitment): want one of finalized, confirmed, got string "processed"`},
		{"getBlocks", `[5,"10"]`, `invalid params: param 2 (endSlot): want an integer, got string "10"`},
		{"getBlocks", `[5,{},{}]`, `invalid params: param 3: too many params: with a config in position 2 there is no position 3`},
		{"getTransaction", `[` + sig + `]`, ""},
		{"getTransaction", `[` + sig + `,"base64"]`, ""},
		{"getTransaction", `[` + sig + `,{"encoding":"jsonParsed","maxSupportedTransactionVersion":0,"commitment":"confirmed"}]`, ""},
		{"getTransaction", `[` + key + `]`, `invalid params: param 1 (signature): want a base58 signature of 64 bytes, got string "11111111111111111111111111111111"`},
		{"getTransaction", `[` + sig + `,{"commitment":"processed"}]`, `invalid params: param 2 (config.commitment): want one of finalized, confirmed, got string "processed"`},
		{"getTransaction", `[` + sig + `,{"maxSupportedTransactionVersion":256}]`, `invalid params: param 2 (config.maxSupportedTransactionVersion): want an integer from 0 to 255, got number 256`},
		{"getSignaturesForAddress", `[` + key + `,{"limit":1000,"before":` + sig + `}]`, ""},
		{"getSignaturesForAddress", `[` + key + `,{"limit":1001}]`, `invalid params: param 2 (config.limit): want an integer from 0 to 1000, got number 1001`},
		{"getSignaturesForAddress", `[` + key + `,{"limit":0}]`, `invalid params: param 2 (config.limit): want an integer from 1 to 1000, got 0`},
		{"getSignaturesForAddress", `[` + key + `,{"until":"x"}]`, `invalid params: param 2 (config.until): want a base58 signature of 64 bytes, got string "x"`},
		{"getSignatureStatuses", `[[` + sig + `],{"searchTransactionHistory":true}]`, ""},
		{"getSignatureStatuses", `[[]]`, `invalid params: param 1 (signatures): want 1 to 256 signatures, got 0`},
		{"getSignatureStatuses", `[[` + sig + `,"x"]]`, `invalid params: param 1 (signatures[1]): want a base58 signature of 64 bytes, got string "x"`},
		{"getSignatureStatuses", `[` + sig + `]`, `invalid params: param 1 (signatures): want an array, got string "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3Z..."`},
		{"getSignatureStatuses", `[[` + sig + `],{"searchTransactionHistory":"yes"}]`, `invalid params: param 2 (config.searchTransactionHistory): want a boolean, got string "yes"`},
		{"requestAirdrop", `[` + key + `,1000000000]`, ""},
		{"requestAirdrop", `[` + key + `]`, `invalid params: param 2 (lamports): missing; want 2 to 3 params [pubkey, lamports, config], got 1`},
		{"requestAirdrop", `[` + key + `,0]`, `invalid params: param 2 (lamports): want at least 1 lamport, got 0`},
		{"requestAirdrop", `[` + key + `,1.5]`, `invalid params: param 2 (lamports): want an integer, got number 1.5`},
		{"sendTransaction", `[` + tx58 + `]`, ""},
		{"sendTransaction", `[` + tx64 + `,{"encoding":"base64","skipPreflight":true,"preflightCommitment":"processed","maxRetries":3}]`, ""},
		{"sendTransaction", `[` + tx64 + `]`, `invalid params: param 1 (transaction): want a base58-encoded signed transaction, got string "AQID"`}, // I is not base58
		{"sendTransaction", `["0OIl"]`, `invalid params: param 1 (transaction): want a base58-encoded signed transaction, got string "0OIl"`},
		{"sendTransaction", `[` + tx58 + `,{"encoding":"base64"}]`, `invalid params: param 1 (transaction): want a base64-encoded signed transaction, got string "Ldp"`},
		{"sendTransaction", `[` + tx64 + `,{"encoding":"hex"}]`, `invalid params: param 2 (config.encoding): want one of base58, base64, got string "hex"`},
		{"sendTransaction", `[` + tx64 + `,{"skipPreflight":1}]`, `invalid params: param 2 (config.skipPreflight): want a boolean, got number 1`},
		{"sendTransaction", `["` + strings.Repeat("A", 1648) + `",{"encoding":"base64"}]`, `invalid params: param 1 (transaction): decodes to 1236 bytes; a transaction is at most 1232 bytes`},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.params, func(t *testing.T) {
			row, ok := rows[tc.method]
			if !ok || row.Params == nil || row.Cost != solana.DefaultCost {
				t.Fatalf("no validated row for %s", tc.method)
			}
			var raw jsontext.Value
			if tc.params != "" {
				raw = jsontext.Value(tc.params)
			}
			p, err := row.Params(raw)
			if tc.err == "" {
				if got := p.Send; err != nil || string(got) != tc.params {
					t.Fatalf("got %s, %v; want the params forwarded unchanged", p.Send, err)
				}
				return
			}
			var pe *portico.ParamsError
			if !errors.As(err, &pe) || err.Error() != tc.err {
				t.Fatalf("err = %v\nwant %s", err, tc.err)
			}
		})
	}
}

// FuzzClientMethodParams: no row panics, and errors are params errors.
func FuzzClientMethodParams(f *testing.F) {
	for _, s := range []string{`[` + key + `]`, `[[` + sig + `]]`, `[` + tx64 + `,{"encoding":"base64"}]`, `[1,{},{}]`, `null`} {
		f.Add(s)
	}
	rows := solana.Table().Methods
	f.Fuzz(func(t *testing.T, s string) {
		if !jsontext.Value(s).IsValid() {
			return
		}
		for _, m := range rows {
			if _, err := m.Params(jsontext.Value(s)); err != nil {
				var pe *portico.ParamsError
				if !errors.As(err, &pe) {
					t.Fatalf("%s: error of the wrong kind: %v", m.Name, err)
				}
			}
		}
	})
}
