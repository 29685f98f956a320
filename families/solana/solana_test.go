package solana_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/solana"
)

func TestGetBlockParams(t *testing.T) {
	cases := []struct {
		name   string
		params string
		want   string // forwarded params, or the error message
		err    bool
	}{
		// Accepted, with the forwarded params.
		{"slot only: rewards false added", `[430]`, `[430,{"rewards":false}]`, false},
		{"null config", `[430,null]`, `[430,{"rewards":false}]`, false},
		{"slot zero", `[0]`, `[0,{"rewards":false}]`, false},
		{"max u64", `[18446744073709551615]`, `[18446744073709551615,{"rewards":false}]`, false},
		{"full config unchanged", `[430, {"encoding":"base64","transactionDetails":"full","rewards":true,"commitment":"finalized","maxSupportedTransactionVersion":0}]`,
			`[430, {"encoding":"base64","transactionDetails":"full","rewards":true,"commitment":"finalized","maxSupportedTransactionVersion":0}]`, false},
		{"rewards omitted", `[430,{"encoding":"jsonParsed"}]`, `[430,{"encoding":"jsonParsed","rewards":false}]`, false},
		{"processed to confirmed", `[430,{"commitment":"processed","rewards":true}]`, `[430,{"rewards":true,"commitment":"confirmed"}]`, false},
		{"confirmed kept", `[430,{"commitment":"confirmed","rewards":false}]`, `[430,{"commitment":"confirmed","rewards":false}]`, false},
		{"each detail level", `[1,{"transactionDetails":"none","rewards":false}]`, `[1,{"transactionDetails":"none","rewards":false}]`, false},
		{"accounts", `[1,{"transactionDetails":"accounts","rewards":false}]`, `[1,{"transactionDetails":"accounts","rewards":false}]`, false},
		{"signatures", `[1,{"transactionDetails":"signatures","rewards":false}]`, `[1,{"transactionDetails":"signatures","rewards":false}]`, false},
		{"base58", `[1,{"encoding":"base58","rewards":false}]`, `[1,{"encoding":"base58","rewards":false}]`, false},
		{"json", `[1,{"encoding":"json","rewards":false}]`, `[1,{"encoding":"json","rewards":false}]`, false},
		{"max version 255", `[1,{"maxSupportedTransactionVersion":255}]`, `[1,{"rewards":false,"maxSupportedTransactionVersion":255}]`, false},
		{"deprecated bare encoding", `[430,"base64"]`, `[430,{"encoding":"base64","rewards":false}]`, false},
		{"deprecated binary", `[430,"binary"]`, `[430,{"encoding":"binary","rewards":false}]`, false},

		// Refused.
		{"no params", ``, `invalid params: want an array [slot, config], got no params`, true},
		{"empty array", `[]`, `invalid params: param 1 (slot): missing; want 1 to 2 params [slot, config], got 0`, true},
		{"named params", `{"slot":1}`, `invalid params: want an array [slot, config], got an object`, true},
		{"too many", `[1,{},3]`, `invalid params: param 3: too many params: want at most 2 [slot, config], got 3`, true},
		{"slot string", `["430"]`, `invalid params: param 1 (slot): want an integer, got string "430"`, true},
		{"slot negative", `[-1]`, `invalid params: param 1 (slot): want a non-negative integer, got number -1`, true},
		{"slot fraction", `[1.5]`, `invalid params: param 1 (slot): want an integer, got number 1.5`, true},
		{"slot exponent", `[1e3]`, `invalid params: param 1 (slot): want an integer, got number 1e3`, true},
		{"slot too big", `[18446744073709551616]`, `invalid params: param 1 (slot): want an integer from 0 to 18446744073709551615, got number 18446744073709551616`, true},
		{"slot null", `[null]`, `invalid params: param 1 (slot): want an integer, got null`, true},
		{"config number", `[1,2]`, `invalid params: param 2 (config): want an object, got number 2`, true},
		{"bad bare encoding", `[1,"hex"]`, `invalid params: param 2 (config): want an object or an encoding (json, jsonParsed, base58, base64), got string "hex"`, true},
		{"bad encoding", `[1,{"encoding":"hex"}]`, `invalid params: param 2 (config.encoding): want one of json, jsonParsed, base58, base64, got string "hex"`, true},
		{"binary not in object", `[1,{"encoding":"binary"}]`, `invalid params: param 2 (config.encoding): want one of json, jsonParsed, base58, base64, got string "binary"`, true},
		{"encoding number", `[1,{"encoding":1}]`, `invalid params: param 2 (config.encoding): want one of json, jsonParsed, base58, base64, got number 1`, true},
		{"bad details", `[1,{"transactionDetails":"some"}]`, `invalid params: param 2 (config.transactionDetails): want one of full, accounts, signatures, none, got string "some"`, true},
		{"rewards string", `[1,{"rewards":"false"}]`, `invalid params: param 2 (config.rewards): want a boolean, got string "false"`, true},
		{"bad commitment", `[1,{"commitment":"recent"}]`, `invalid params: param 2 (config.commitment): want one of finalized, confirmed, processed, got string "recent"`, true},
		{"version too big", `[1,{"maxSupportedTransactionVersion":256}]`, `invalid params: param 2 (config.maxSupportedTransactionVersion): want an integer from 0 to 255, got number 256`, true},
		{"version negative", `[1,{"maxSupportedTransactionVersion":-1}]`, `invalid params: param 2 (config.maxSupportedTransactionVersion): want a non-negative integer, got number -1`, true},
		{"version string", `[1,{"maxSupportedTransactionVersion":"0"}]`, `invalid params: param 2 (config.maxSupportedTransactionVersion): want an integer, got string "0"`, true},
		{"unknown field", `[1,{"maxSupportedTransactionVerison":0}]`, `invalid params: param 2 (config.maxSupportedTransactionVerison): unknown field; allowed fields are encoding, transactionDetails, rewards, commitment, maxSupportedTransactionVersion`, true},
		{"duplicate field", `[1,{"rewards":true,"rewards":false}]`, `invalid params: param 2 (config.rewards): field appears twice`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var raw jsontext.Value
			if tc.params != "" {
				raw = jsontext.Value(tc.params)
			}
			p, err := solana.GetBlockParams(raw)
			got := p.Send
			if tc.err {
				var pe *portico.ParamsError
				if !errors.As(err, &pe) || err.Error() != tc.want {
					t.Fatalf("err = %v\nwant %s", err, tc.want)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

func TestTable(t *testing.T) {
	tb := solana.Table()
	if tb.Family != solana.Family || len(tb.Methods) != 17 || tb.Methods[0].Name != "getBlock" || tb.Methods[0].Cost != 160 || tb.DefaultCost != 180 {
		t.Fatalf("%+v", tb)
	}
	// A block asked for at finalized commitment (the default) is
	// immutable; the params rule says so in its one scan.
	cases := []struct {
		params string
		want   portico.Cacheability
	}{
		{`[1]`, portico.Immutable},
		{`[1,"base64"]`, portico.Immutable},
		{`[1,{"rewards":false}]`, portico.Immutable},
		{`[1,{"commitment":"finalized"}]`, portico.Immutable},
		{`[1,{"commitment": "confirmed"}]`, portico.NotCacheable},
		{`[1,{"commitment":"processed"}]`, portico.NotCacheable},
	}
	for _, c := range cases {
		if p, err := tb.Methods[0].Params(jsontext.Value(c.params)); err != nil || p.Cache != c.want {
			t.Errorf("Params(%s).Cache = %v, %v", c.params, p.Cache, err)
		}
	}
}

func FuzzGetBlockParams(f *testing.F) {
	for _, s := range []string{`[430]`, `[1,{"encoding":"base64","commitment":"processed"}]`, `[1,"json"]`, `{"a":1}`, `[1,{"rewards":true,"rewards":1}]`, `[1e99]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !jsontext.Value(s).IsValid() {
			return // the envelope decoder refuses invalid JSON before us
		}
		p, err := solana.GetBlockParams(jsontext.Value(s))
		out := p.Send
		if err != nil {
			var pe *portico.ParamsError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "invalid params: ") {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		if !out.IsValid() {
			t.Fatalf("forwarded invalid JSON %q for %q", out, s)
		}
		// What is forwarded must itself pass, unchanged apart from the
		// seed's rewrites being idempotent.
		p2, err := solana.GetBlockParams(out)
		again := p2.Send
		if err != nil {
			t.Fatalf("forwarded params %s refused: %v", out, err)
		}
		if strings.Contains(string(again), `"processed"`) {
			t.Fatalf("processed reached the node: %s", again)
		}
	})
}

// TestTableForProcessed checks that a table for nodes serving processed
// blocks forwards that commitment, and the default table does not.
func TestTableForProcessed(t *testing.T) {
	cases := []struct {
		opts   solana.Options
		params string
		want   string
	}{
		{solana.Options{}, `[7,{"commitment":"processed"}]`, `[7,{"rewards":false,"commitment":"confirmed"}]`},
		{solana.Options{NodeServesProcessed: true}, `[7,{"commitment":"processed"}]`, `[7,{"rewards":false,"commitment":"processed"}]`},
		{solana.Options{NodeServesProcessed: true}, `[7,{"commitment":"processed","rewards":true}]`, `[7,{"commitment":"processed","rewards":true}]`},
		{solana.Options{NodeServesProcessed: true}, `[7]`, `[7,{"rewards":false}]`},
	}
	for _, c := range cases {
		p, err := solana.TableFor(c.opts).Methods[0].Params(jsontext.Value(c.params))
		if got := p.Send; err != nil || string(got) != c.want {
			t.Errorf("%+v %s: got %s, %v; want %s", c.opts, c.params, p.Send, err, c.want)
		}
	}
	if _, err := solana.TableFor(solana.Options{NodeServesProcessed: true}).Methods[0].Params(jsontext.Value(`[7,{"commitment":"recent"}]`)); err == nil {
		t.Fatal("bad commitment accepted")
	}
}

// TestRulesAndHeads: getSlot is answered from the tracked slot at its
// commitment (not with minContextSlot); a finalized transaction never
// changes; balances are true for one head; writes are marked.
func TestRulesAndHeads(t *testing.T) {
	rows := map[string]portico.Method{}
	for _, m := range solana.Table().Methods {
		rows[m.Name] = m
	}
	h := portico.Heads{Latest: 30, Safe: 20, Finalized: 10}
	slots := []struct {
		params string
		want   string // "" when a node must answer
	}{
		{``, "10"},
		{`[]`, "10"},
		{`[{"commitment":"processed"}]`, "30"},
		{`[{"commitment":"confirmed"}]`, "20"},
		{`[{"commitment":"finalized","minContextSlot":5}]`, ""},
	}
	getSlot := rows["getSlot"]
	for _, c := range slots {
		var raw jsontext.Value
		if c.params != "" {
			raw = jsontext.Value(c.params)
		}
		p, err := getSlot.Params(raw)
		if err != nil {
			t.Fatalf("getSlot %s: %v", c.params, err)
		}
		got, ok := getSlot.FromHeads(p, h)
		if string(got) != c.want || ok != (c.want != "") {
			t.Errorf("getSlot %s from heads: %s %v, want %q", c.params, got, ok, c.want)
		}
	}
	const sig = `"5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"`
	cache := []struct {
		method, params string
		want           portico.Cacheability
	}{
		{"getTransaction", `[` + sig + `]`, portico.Immutable},
		{"getTransaction", `[` + sig + `,"base64"]`, portico.Immutable},
		{"getTransaction", `[` + sig + `,{"commitment":"confirmed"}]`, portico.NotCacheable},
		{"getGenesisHash", ``, portico.Immutable},
		{"getBalance", `["11111111111111111111111111111111"]`, portico.PerHead},
		{"getSignatureStatuses", `[[` + sig + `]]`, portico.NotCacheable},
	}
	for _, c := range cache {
		var raw jsontext.Value
		if c.params != "" {
			raw = jsontext.Value(c.params)
		}
		p, err := rows[c.method].Params(raw)
		if err != nil || p.Cache != c.want {
			t.Errorf("%s %s: cache %v, %v; want %v", c.method, c.params, p.Cache, err, c.want)
		}
	}
	for _, name := range []string{"sendTransaction", "requestAirdrop"} {
		if !rows[name].Write {
			t.Errorf("%s is not marked as a write", name)
		}
	}
}
