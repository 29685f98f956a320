package gateway

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/metering/apikey"
)

func BenchmarkCheckContracts(b *testing.B) {
	r := &apikey.Rules{Addresses: []string{"0x1111111111111111111111111111111111111111", "0x2222222222222222222222222222222222222222"}, UserAgents: []string{"bench/"}}
	call := evm.Contracts()["eth_call"]
	params := []byte(`[{"to":"0x1111111111111111111111111111111111111111","data":"0x70a08231"},"latest"]`)
	b.ReportAllocs()
	for b.Loop() {
		if err := checkContracts(r, "eth_call", &call, params); err != nil {
			b.Fatal(err)
		}
		if !r.UserAgentAllowed("Mozilla/5.0 bench/1.0") {
			b.Fatal("ua")
		}
	}
}

// TestCheckContracts reads params as strictly as the strictest node: the
// address checked is the one every node acts on, and what nodes could read
// apart (a member in another case, one given twice, an unknown member or
// param, an override) is refused, naming the field.
func TestCheckContracts(t *testing.T) {
	const a, other = "0x1111111111111111111111111111111111111111", "0x3333333333333333333333333333333333333333"
	r := &apikey.Rules{Addresses: []string{a}}
	stmts := evm.Contracts()
	subs := evm.SubscriptionContracts()
	tests := []struct {
		name, method, params string
		field                string // "" for a pass; else the field the refusal names
		value                string // the refused address, if any
	}{
		{"call", "eth_call", `[{"to":"` + a + `"},"latest"]`, "", ""},
		{"call with the usual members", "eth_call", `[{"data":"0x","from":"` + other + `","to":"` + a + `","gas":"0x1","value":"0x0","input":"0x"},"latest"]`, "", ""},
		{"escaped name", "eth_call", `[{"t\u006f":"` + a + `"}]`, "", ""},
		{"empty overrides", "eth_call", `[{"to":"` + a + `"},"latest",{},null]`, "", ""},
		{"another contract", "eth_call", `[{"to":"` + other + `"},"latest"]`, "params[0].to", other},
		{"to and To (go-ethereum reads To, anvil to)", "eth_call", `[{"to":"` + other + `","To":"` + a + `"}]`, "params[0].to", other},
		{"To after a listed to", "eth_call", `[{"to":"` + a + `","To":"` + other + `"}]`, "params[0].To", ""},
		{"To alone", "eth_call", `[{"TO":"` + a + `"}]`, "params[0].TO", ""},
		{"to twice", "eth_call", `[{"to":"` + a + `","to":"` + a + `"}]`, "params[0].to", ""},
		{"unknown member", "eth_call", `[{"to":"` + a + `","target":"` + other + `"}]`, "params[0].target", ""},
		{"state override", "eth_call", `[{"to":"` + a + `"},"latest",{"` + a + `":{"code":"0x00"}}]`, "params[2] (stateOverrides)", ""},
		{"block override", "eth_call", `[{"to":"` + a + `"},"latest",null,{"number":"0x1"}]`, "params[3] (blockOverrides)", ""},
		{"a fifth param", "eth_call", `[{"to":"` + a + `"},"latest",null,null,1]`, "params[4]", ""},
		{"authorization list", "eth_call", `[{"to":"` + a + `","authorizationList":[{"address":"` + other + `"}]}]`, "params[0].authorizationList", ""},
		{"creation", "eth_call", `[{"data":"0x60"},"latest"]`, "params[0].to", ""},
		{"to null", "eth_call", `[{"to":null}]`, "params[0].to", ""},
		{"to a list", "eth_call", `[{"to":["` + a + `"]}]`, "params[0].to", ""},
		{"named params", "eth_call", `{"transaction":{"to":"` + a + `"}}`, "params", ""},
		{"no params", "eth_call", `[]`, "params[0] (transaction)", ""},
		{"a second value after the params", "eth_call", `[{"to":"` + a + `"}]0`, "params", ""},
		{"space after the params", "eth_call", ` [{"to":"` + a + `"}] ` + "\n", "", ""},
		{"cut short", "eth_call", `[{"to":"` + a + `"`, "params[0] (transaction)", ""},
		{"estimateGas to and To", "eth_estimateGas", `[{"to":"` + a + `","To":"` + other + `"}]`, "params[0].To", ""},
		{"createAccessList to and To", "eth_createAccessList", `[{"To":"` + a + `","to":"` + other + `"}]`, "params[0].To", ""},
		{"createAccessList", "eth_createAccessList", `[{"to":"` + a + `"}]`, "", ""},
		{"simulate", "eth_simulateV1", `[{"blockStateCalls":[{"calls":[{"to":"` + a + `"},{"to":"` + a + `","data":"0x"}]}],"validation":true},"latest"]`, "", ""},
		{"simulate another contract", "eth_simulateV1", `[{"blockStateCalls":[{"calls":[{"to":"` + a + `"}]},{"calls":[{"to":"` + other + `"}]}]},"latest"]`, "params[0].blockStateCalls[1].calls[0].to", other},
		{"simulate with a state override", "eth_simulateV1", `[{"blockStateCalls":[{"stateOverrides":{"` + a + `":{"code":"0x00"}},"calls":[{"to":"` + a + `"}]}]}]`, "params[0].blockStateCalls[0].stateOverrides", ""},
		{"simulate a creation", "eth_simulateV1", `[{"blockStateCalls":[{"calls":[{"to":"` + a + `"},{"data":"0x60"}]}]}]`, "params[0].blockStateCalls[0].calls[1].to", ""},
		{"simulate nothing", "eth_simulateV1", `[{"blockStateCalls":[]}]`, "", "none"},
		{"storage values", "eth_getStorageValues", `[{"` + a + `":["0x0","0x1"]},"latest"]`, "", ""},
		{"storage values of another", "eth_getStorageValues", `[{"` + a + `":["0x0"],"` + other + `":["0x0"]},"latest"]`, "params[0] (requests)", other},
		{"storage values of none", "eth_getStorageValues", `[{},"latest"]`, "params[0] (requests)", ""},
		{"logs", "eth_getLogs", `[{"address":["` + a + `","` + a + `"],"topics":[null,["0x01"]]}]`, "", ""},
		{"logs of one", "eth_getLogs", `[{"address":"` + a + `","fromBlock":"0x1","toBlock":"latest"}]`, "", ""},
		{"logs of another too", "eth_getLogs", `[{"address":["` + a + `","` + other + `"]}]`, "params[0].address[1]", other},
		{"logs, Address", "eth_getLogs", `[{"Address":"` + a + `"}]`, "params[0].Address", ""},
		{"logs of any", "eth_getLogs", `[{"address":[]}]`, "params[0].address", ""},
		{"logs, address null", "eth_getLogs", `[{"address":null}]`, "params[0].address", ""},
		{"logs without address", "eth_getLogs", `[{"fromBlock":"0x1"}]`, "params[0].address", ""},
		{"logs, not a string", "eth_getLogs", `[{"address":["` + a + `",1]}]`, "params[0].address[1]", ""},
		{"new filter of another", "eth_newFilter", `[{"address":"` + other + `"}]`, "params[0].address", other},
		{"balance, any case", "eth_getBalance", `["0x` + strings.ToUpper(a[2:]) + `","latest"]`, "", ""},
		{"balance without 0x", "eth_getBalance", `["` + a[2:] + `"]`, "params[0] (address)", a[2:]},
		{"balance, extra param", "eth_getBalance", `["` + a + `","latest",1]`, "params[2]", ""},
		{"proof", "eth_getProof", `["` + a + `",["0x0"],"latest"]`, "", ""},
		{"storage range", "debug_storageRangeAt", `["0x00",0,"` + other + `","0x00",1]`, "params[2] (address)", other},
		{"traceCall", "debug_traceCall", `[{"to":"` + a + `"},"latest",{"tracer":"prestateTracer"}]`, "", "refused"},
		{"block access list", "eth_getBlockAccessList", `["latest"]`, "", "refused"},
		{"blockNumber", "eth_blockNumber", `[]`, "", ""},
		{"sendRawTransaction", "eth_sendRawTransaction", `["0x00"]`, "", ""},
		{"a method the table does not know", "anvil_setCode", `["` + a + `","0x00"]`, "", "refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stmt := stmts[tc.method]
			err := checkContracts(r, tc.method, &stmt, []byte(tc.params))
			check(t, err, tc.field, tc.value)
		})
	}
	logs := subs["logs"]
	check(t, checkContracts(r, "eth_subscribe", &logs, []byte(`["logs",{"address":"`+other+`"}]`)), "params[1].address", other)
	check(t, checkContracts(r, "eth_subscribe", &logs, []byte(`["logs"]`)), "params[1] (filter)", "")
	check(t, checkContracts(r, "eth_subscribe", &logs, []byte(`["logs",{"address":"`+a+`","topics":[]}]`)), "", "")
	check(t, checkContracts(r, "eth_subscribe", &logs, []byte(`["logs",{"address":"`+a+`","resumeFrom":"0x`+strings.Repeat("ab", 32)+`"}]`)), "", "")
	heads := subs["newHeads"]
	check(t, checkContracts(r, "eth_subscribe", &heads, []byte(`["newHeads"]`)), "", "")
}

// check compares a refusal with the field and value it should name:
// both empty for a pass, field empty and value "none" for a call that
// names no address at all, or "refused" for a method refused whole.
func check(t *testing.T, err error, field, value string) {
	t.Helper()
	if field == "" && value == "" {
		if err != nil {
			t.Errorf("refused: %v", err)
		}
		return
	}
	var f *portico.ForbiddenError
	if !errors.As(err, &f) || f.What != portico.AllowAddress {
		t.Fatalf("got %v, want a refusal by the address list", err)
	}
	switch value {
	case "none":
		if f.Field != "" || f.Value != "" || f.Reason != "" {
			t.Errorf("got %q, want the call to name none", f.Error())
		}
	case "refused":
		if f.Field != "" || f.Reason == "" {
			t.Errorf("got %q, want the method refused", f.Error())
		}
	default:
		if f.Field != field || f.Value != value {
			t.Errorf("got %q (field %q, value %q), want field %q, value %q", f.Error(), f.Field, f.Value, field, value)
		}
	}
}

// FuzzCheckContracts feeds any params to every statement of the EVM
// table: no panic, a refusal is always the address list's, and a call
// that passes names, wherever a node could read a contract from it (a
// member spelt to or address in any case, a storage request's name), only
// listed addresses, and carries no override.
func FuzzCheckContracts(f *testing.F) {
	const a = "0x1111111111111111111111111111111111111111"
	stmts := evm.Contracts()
	names := slices.Sorted(maps.Keys(stmts))
	for _, seed := range []struct{ method, params string }{
		{"eth_call", `[{"to":"` + a + `"},"latest"]`},
		{"eth_call", `[{"to":"0x3333333333333333333333333333333333333333","To":"` + a + `"}]`},
		{"eth_call", `[{"to":"` + a + `"},"latest",{"` + a + `":{"code":"0x00"}}]`},
		{"eth_call", `[{"t\u006f":"` + a + `"}]`},
		{"eth_estimateGas", `{"to":"` + a + `"}`},
		{"eth_simulateV1", `[{"blockStateCalls":[{"calls":[{"to":"` + a + `"}]}]}]`},
		{"eth_getStorageValues", `[{"` + a + `":["0x0"]}]`},
		{"eth_getLogs", `[{"address":["` + a + `"],"topics":[]}]`},
		{"eth_getBalance", `["` + a + `","latest"]`},
		{"debug_storageRangeAt", `["0x00",0,"` + a + `","0x00",1]`},
	} {
		f.Add(slices.Index(names, seed.method), seed.params)
	}
	r := &apikey.Rules{Addresses: []string{a}}
	f.Fuzz(func(t *testing.T, i int, params string) {
		if i < 0 {
			i = -i
		}
		name := names[i%len(names)]
		stmt := stmts[name]
		err := checkContracts(r, name, &stmt, []byte(params))
		if err != nil {
			var fe *portico.ForbiddenError
			if !errors.As(err, &fe) || fe.What != portico.AllowAddress {
				t.Fatalf("%s %s: %v", name, params, err)
			}
			return
		}
		if stmt.Reads != portico.ReadsNamed {
			return
		}
		var v any
		if json.Unmarshal([]byte(params), &v) != nil {
			t.Fatalf("%s %s passed, but is not JSON", name, params)
		}
		list, _ := v.([]any)
		if name == "eth_getStorageValues" && len(list) > 0 {
			for addr := range list[0].(map[string]any) {
				if !strings.EqualFold(addr, a) {
					t.Fatalf("%s %s passed with %s", name, params, addr)
				}
			}
		}
		for j, p := range list {
			if j >= 2 && (name == "eth_call" || name == "eth_estimateGas" || name == "eth_createAccessList") && !emptyJSON(p) {
				t.Fatalf("%s %s passed with an override", name, params)
			}
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if strings.EqualFold(k, "to") || strings.EqualFold(k, "address") {
						addrs, _ := x.([]any)
						if s, ok := x.(string); ok {
							addrs = []any{s}
						}
						for _, y := range addrs {
							if s, _ := y.(string); !strings.EqualFold(s, a) {
								t.Fatalf("%s %s passed with %s %v", name, params, k, y)
							}
						}
					}
					if strings.EqualFold(k, "stateOverrides") || strings.EqualFold(k, "blockOverrides") || strings.EqualFold(k, "authorizationList") {
						if !emptyJSON(x) {
							t.Fatalf("%s %s passed with %s", name, params, k)
						}
					}
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(v)
	})
}

func emptyJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
