package starknet_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/starknet"
)

const felt = `"0x4718f5a0fc34cc1af16a1cdee98ffb20c31f5cd61d6ab07201858f4287c938d"`

type paramsCase struct {
	name   string
	params string
	want   string // the error message; empty when accepted
	code   int    // the error code when it is not -32602
}

// send adapts a params rule to the params it sends.
func send(rule func(jsontext.Value) (portico.Params, error)) func(jsontext.Value) (jsontext.Value, error) {
	return func(raw jsontext.Value) (jsontext.Value, error) {
		p, err := rule(raw)
		return p.Send, err
	}
}

func run(t *testing.T, rule func(jsontext.Value) (portico.Params, error), cases []paramsCase) {
	t.Helper()
	f := send(rule)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var raw jsontext.Value
			if tc.params != "" {
				raw = jsontext.Value(tc.params)
			}
			got, err := f(raw)
			if tc.want == "" {
				if err != nil || string(got) != tc.params {
					t.Fatalf("got %s, %v; want the params forwarded unchanged", got, err)
				}
				return
			}
			code := -32602
			if tc.code != 0 {
				code = tc.code
			}
			var coded interface{ ErrorCode() int }
			if !errors.As(err, &coded) || coded.ErrorCode() != code || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant %d %s", err, code, tc.want)
			}
		})
	}
}

func filter(fields string) string {
	return `{"filter":{"from_block":{"block_number":0},"to_block":"latest","chunk_size":10` + fields + `}}`
}

func TestGetEventsParams(t *testing.T) {
	tooManyPositions := `,"keys":[` + strings.Repeat(`[],`, 16) + `[]]`
	tooManyKeys := `,"keys":[[` + strings.Repeat(`"0x1",`, 256) + `"0x1"]]`
	run(t, starknet.GetEventsParams, []paramsCase{
		{"named minimal", filter(""), "", 0},
		{"positional", `[{"from_block":"latest","to_block":"pending","chunk_size":1}]`, "", 0},
		{"every field", filter(`,"address":` + felt + `,"keys":[["0x1","0x2"],[],["0x3"]],"continuation_token":"8438-0"`), "", 0},
		{"address array (v0.10.3)", filter(`,"address":[` + felt + `,"0x1"]`), "", 0},
		{"block hash", `{"filter":{"from_block":{"block_hash":` + felt + `},"to_block":{"block_hash":"0x0"},"chunk_size":1024}}`, "", 0},
		{"later tags", `{"filter":{"from_block":"l1_accepted","to_block":"pre_confirmed","chunk_size":5}}`, "", 0},
		{"upper-case felt", filter(`,"address":"0xABCDEF"`), "", 0},
		{"16 key positions", filter(`,"keys":[` + strings.Repeat(`[],`, 15) + `[]]`), "", 0},

		{"no params", ``, `invalid params: want an object {filter} or an array, got nothing`, 0},
		{"empty object", `{}`, `invalid params: filter: missing; it is required`, 0},
		{"extra named param", `{"filter":{},"x":1}`, `invalid params: x: unknown field; allowed fields are filter`, 0},
		{"empty array", `[]`, `invalid params: param 1 (filter): missing; want 1 to 1 params [filter], got 0`, 0},
		{"two positional", `[{},{}]`, `invalid params: param 2: too many params: want at most 1 [filter], got 2`, 0},
		{"params a string", `"x"`, `invalid params: want an object {filter} or an array, got string "x"`, 0},
		{"filter not object", `{"filter":[]}`, `invalid params: filter: want an object, got an array`, 0},
		{"unknown filter field", filter(`,"from":1`), `invalid params: filter.from: unknown field; allowed fields are from_block, to_block, address, keys, chunk_size, continuation_token`, 0},
		{"from_block missing", `{"filter":{"to_block":"latest","chunk_size":1}}`, `invalid params: filter.from_block: missing; it is required`, 0},
		{"to_block missing", `[{"from_block":"latest","chunk_size":1}]`, `invalid params: param 1 (filter.to_block): missing; it is required`, 0},
		{"chunk_size missing", `{"filter":{"from_block":"latest","to_block":"latest"}}`, `invalid params: filter.chunk_size: missing; it is required`, 0},
		{"bad tag", `{"filter":{"from_block":"earliest","to_block":"latest","chunk_size":1}}`, `invalid params: filter.from_block: want {"block_hash": felt}, {"block_number": integer} or one of latest, pending, pre_confirmed, l1_accepted, got string "earliest"`, 0},
		{"both hash and number", `{"filter":{"from_block":{"block_hash":"0x1","block_number":1},"to_block":"latest","chunk_size":1}}`, `invalid params: filter.from_block: set exactly one of block_hash and block_number`, 0},
		{"empty block id", `{"filter":{"from_block":{},"to_block":"latest","chunk_size":1}}`, `invalid params: filter.from_block: set exactly one of block_hash and block_number`, 0},
		{"block number string", `{"filter":{"from_block":{"block_number":"1"},"to_block":"latest","chunk_size":1}}`, `invalid params: filter.from_block.block_number: want an integer, got string "1"`, 0},
		{"block number negative", `{"filter":{"from_block":"latest","to_block":{"block_number":-2},"chunk_size":1}}`, `invalid params: filter.to_block.block_number: want a non-negative integer, got number -2`, 0},
		{"block hash not hex", `{"filter":{"from_block":{"block_hash":"0xzz"},"to_block":"latest","chunk_size":1}}`, `invalid params: filter.from_block.block_hash: want a felt, 0x and 1 to 64 hex digits, got string "0xzz"`, 0},
		{"block hash above prime", `{"filter":{"from_block":{"block_hash":"0x800000000000011000000000000000000000000000000000000000000000001"},"to_block":"latest","chunk_size":1}}`, `invalid params: filter.from_block.block_hash: felt is not below the field prime 2^251+17*2^192+1: string "0x800000000000011000000000000000000000000000000000000000000000001"`, 0},
		{"unknown block id field", `{"filter":{"from_block":{"number":1},"to_block":"latest","chunk_size":1}}`, `invalid params: filter.from_block.number: unknown field; allowed fields are block_hash, block_number`, 0},
		{"address number", filter(`,"address":1`), `invalid params: filter.address: want a string, got number 1`, 0},
		{"address bad in array", filter(`,"address":["0x1","x"]`), `invalid params: filter.address[1]: want a felt, 0x and 1 to 64 hex digits, got string "x"`, 0},
		{"keys flat", filter(`,"keys":["0x1"]`), `invalid params: filter.keys[0]: want an array, got string "0x1"`, 0},
		{"key not felt", filter(`,"keys":[[],["0x1","0xg"]]`), `invalid params: filter.keys[1][1]: want a felt, 0x and 1 to 64 hex digits, got string "0xg"`, 0},
		{"too many positions", filter(tooManyPositions), "Too many keys provided in a filter", 34},
		{"too many keys", filter(tooManyKeys), "Too many keys provided in a filter", 34},
		{"chunk_size zero", `{"filter":{"from_block":"latest","to_block":"latest","chunk_size":0}}`, `invalid params: filter.chunk_size: must be at least 1, got 0`, 0},
		{"chunk_size over limit", `{"filter":{"from_block":"latest","to_block":"latest","chunk_size":1025}}`, "Requested page size is too big", 31},
		{"chunk_size fraction", `{"filter":{"from_block":"latest","to_block":"latest","chunk_size":1.5}}`, `invalid params: filter.chunk_size: want an integer, got number 1.5`, 0},
		{"token number", filter(`,"continuation_token":5`), `invalid params: filter.continuation_token: want a string, got number 5`, 0},
		{"token empty", filter(`,"continuation_token":""`), `invalid params: filter.continuation_token: must not be empty; leave it out for the first page`, 0},
	})
}

func TestGetStateUpdateParams(t *testing.T) {
	run(t, starknet.GetStateUpdateParams, []paramsCase{
		{"latest", `{"block_id":"latest"}`, "", 0},
		{"pending", `{"block_id":"pending"}`, "", 0},
		{"pre_confirmed positional", `["pre_confirmed"]`, "", 0},
		{"l1_accepted", `{"block_id":"l1_accepted"}`, "", 0},
		{"by number", `{"block_id":{"block_number":3100000}}`, "", 0},
		{"by hash", `{"block_id":{"block_hash":` + felt + `}}`, "", 0},
		{"contract addresses", `{"block_id":"latest","contract_addresses":["0x1",` + felt + `]}`, "", 0},
		{"positional with addresses", `[{"block_number":0},["0x1"]]`, "", 0},

		{"no params", ``, `invalid params: want an object {block_id, contract_addresses} or an array, got nothing`, 0},
		{"block_id missing", `{}`, `invalid params: block_id: missing; it is required`, 0},
		{"unknown param", `{"block_id":"latest","block":1}`, `invalid params: block: unknown field; allowed fields are block_id, contract_addresses`, 0},
		{"bad tag", `{"block_id":"safe"}`, `invalid params: block_id: want {"block_hash": felt}, {"block_number": integer} or one of latest, pending, pre_confirmed, l1_accepted, got string "safe"`, 0},
		{"positional bad tag", `["safe"]`, `invalid params: param 1 (block_id): want {"block_hash": felt}, {"block_number": integer} or one of latest, pending, pre_confirmed, l1_accepted, got string "safe"`, 0},
		{"number as block id", `{"block_id":5}`, `invalid params: block_id: want {"block_hash": felt}, {"block_number": integer} or one of latest, pending, pre_confirmed, l1_accepted, got number 5`, 0},
		{"both", `{"block_id":{"block_hash":"0x1","block_number":1}}`, `invalid params: block_id: set exactly one of block_hash and block_number`, 0},
		{"hash too long", `{"block_id":{"block_hash":"0x` + strings.Repeat("0", 65) + `"}}`, `invalid params: block_id.block_hash: want a felt, 0x and 1 to 64 hex digits, got string "0x` + strings.Repeat("0", 65) + `"`, 0},
		{"addresses not array", `{"block_id":"latest","contract_addresses":"0x1"}`, `invalid params: contract_addresses: want an array, got string "0x1"`, 0},
		{"bad address", `["latest",["0x1","1"]]`, `invalid params: param 2 (contract_addresses[1]): want a felt, 0x and 1 to 64 hex digits, got string "1"`, 0},
		{"duplicate block_id", `{"block_id":"latest","block_id":"pending"}`, `invalid params: block_id: field appears twice`, 0},
	})
}

func TestTable(t *testing.T) {
	tb := starknet.Table()
	if tb.Methods[0].Cost != 200 || tb.Methods[1].Cost != 80 || tb.AliasPrefixes["rollup_"] != "starknet_" {
		t.Fatalf("%+v", tb)
	}
	// Each rule says, in its one scan of the params, how an answer may be
	// cached and how a tag is pinned to the block the gateway resolves it
	// to, keeping the params' form (named or positional).
	rules := map[string]func(jsontext.Value) (portico.Params, error){}
	for _, m := range append(tb.Methods, tb.Known...) {
		rules[m.Name] = m.Params
	}
	cases := []struct {
		method, params string
		want           portico.Cacheability
		pinned         string // pinned to block 16
	}{
		{"starknet_getStateUpdate", `{"block_id":{"block_hash":"0x1"}}`, portico.Immutable, ""},
		{"starknet_getStateUpdate", `[{"block_hash":"0x1"}]`, portico.Immutable, ""},
		{"starknet_getStateUpdate", `{"block_id":{"block_number":1}}`, portico.ByBlock, ""},
		{"starknet_getStateUpdate", `{"block_id":"latest"}`, portico.ByBlock, `{"block_id":{"block_number":16}}`},
		{"starknet_getStateUpdate", `["latest",["0x1"]]`, portico.ByBlock, `[{"block_number":16},["0x1"]]`},
		{"starknet_getStateUpdate", `{"block_id":"pending"}`, portico.NotCacheable, ""},
		{"starknet_getBlockWithTxHashes", `{"block_id":{"block_hash":"0x1"}}`, portico.Immutable, ""},
		{"starknet_getBlockWithTxHashes", `["l1_accepted"]`, portico.ByBlock, `[{"block_number":16}]`},
		{"starknet_getBlockWithTxHashes", `["pre_confirmed"]`, portico.NotCacheable, ""},
		{"starknet_getNonce", `{"block_id":"latest","contract_address":"0x2"}`, portico.ByBlock, `{"block_id":{"block_number":16},"contract_address":"0x2"}`},
		{"starknet_getStorageAt", `["0x2","0x3",{"block_number":4}]`, portico.ByBlock, ""},
		{"starknet_call", `[{"contract_address":"0x1"},"latest"]`, portico.ByBlock, `[{"contract_address":"0x1"},{"block_number":16}]`},
		{"starknet_getTransactionReceipt", `["0x1"]`, portico.FinalResult, ""},
		{"starknet_chainId", ``, portico.Immutable, ""},
		{"starknet_getEvents", filter(``), portico.ByBlock, `{"filter":{"chunk_size":10,"from_block":{"block_number":0},"to_block":{"block_number":16}}}`},
		{"starknet_getEvents", `{"filter":{"from_block":"latest","to_block":"pending","chunk_size":1}}`, portico.NotCacheable, ""},
		{"starknet_traceBlockTransactions", `{"block_id":"latest"}`, portico.ByBlock, `{"block_id":{"block_number":16}}`},
		{"starknet_traceBlockTransactions", `[{"block_hash":"0x1"}]`, portico.Immutable, ""},
		{"starknet_simulateTransactions", `{"block_id":"latest","transactions":[],"simulation_flags":["SKIP_FEE_CHARGE"]}`, portico.ByBlock,
			`{"block_id":{"block_number":16},"transactions":[],"simulation_flags":["SKIP_FEE_CHARGE"]}`},
		{"starknet_simulateTransactions", `["pre_confirmed",[],[]]`, portico.NotCacheable, ""},
		{"starknet_getCompiledCasm", `{"class_hash":"0x1"}`, portico.Immutable, ""},
	}
	for _, c := range cases {
		var raw jsontext.Value
		if c.params != "" {
			raw = jsontext.Value(c.params)
		}
		p, err := rules[c.method](raw)
		if err != nil || p.Cache != c.want {
			t.Errorf("%s %s: cache %v, %v; want %v", c.method, c.params, p.Cache, err, c.want)
			continue
		}
		var pinned string
		if p.Pin != nil {
			pinned = string(p.Pin(16))
		}
		if pinned != c.pinned {
			t.Errorf("%s %s: pinned to %s, want %s", c.method, c.params, pinned, c.pinned)
		}
	}
}

func fuzzParams(f *testing.F, rule func(jsontext.Value) (portico.Params, error), seeds ...string) {
	decode := send(rule)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !jsontext.Value(s).IsValid() {
			return
		}
		out, err := decode(jsontext.Value(s))
		if err != nil {
			var pe *portico.ParamsError
			var se *starknet.SpecError
			if !errors.As(err, &pe) && !errors.As(err, &se) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		if string(out) != s {
			t.Fatalf("params changed: %s", out)
		}
	})
}

func FuzzGetEventsParams(f *testing.F) {
	fuzzParams(f, starknet.GetEventsParams, filter(`,"keys":[["0x1"],[]],"address":"0x2"`), `[{"from_block":"latest","to_block":"pending","chunk_size":1}]`)
}

func FuzzGetStateUpdateParams(f *testing.F) {
	fuzzParams(f, starknet.GetStateUpdateParams, `{"block_id":{"block_hash":"0x1"}}`, `["latest",["0x1"]]`)
}

func TestNoParams(t *testing.T) {
	run(t, starknet.NoParams, []paramsCase{
		{"absent", ``, "", 0},
		{"empty array", `[]`, "", 0},
		{"empty object", `{}`, "", 0},
		{"one positional", `[1]`, `invalid params: param 1: this method takes no params, got 1`, 0},
		{"named member", `{"x":1}`, `invalid params: this method takes no params, got an object with members`, 0},
		{"string", `"x"`, `invalid params: this method takes no params, got string "x"`, 0},
	})
}

func TestGetBlockParams(t *testing.T) {
	run(t, starknet.GetBlockParams, []paramsCase{
		{"latest", `{"block_id":"latest"}`, "", 0},
		{"pending positional", `["pending"]`, "", 0},
		{"by hash", `{"block_id":{"block_hash":` + felt + `}}`, "", 0},
		{"by number", `[{"block_number":7}]`, "", 0},
		{"missing", `{}`, `invalid params: block_id: missing; it is required`, 0},
		{"unknown member", `{"block_id":"latest","full":true}`, `invalid params: full: unknown field; allowed fields are block_id`, 0},
		{"bad tag", `["earliest"]`, `invalid params: param 1 (block_id): want {"block_hash": felt}, {"block_number": integer} or one of latest, pending, pre_confirmed, l1_accepted, got string "earliest"`, 0},
		{"two positional", `["latest","latest"]`, `invalid params: param 2: too many params: want at most 1 [block_id], got 2`, 0},
	})
}

func TestGetTransactionReceiptParams(t *testing.T) {
	run(t, starknet.GetTransactionReceiptParams, []paramsCase{
		{"named", `{"transaction_hash":` + felt + `}`, "", 0},
		{"positional", `["0x1"]`, "", 0},
		{"missing", `{}`, `invalid params: transaction_hash: missing; it is required`, 0},
		{"not hex", `{"transaction_hash":"0xg"}`, `invalid params: transaction_hash: want a felt, 0x and 1 to 64 hex digits, got string "0xg"`, 0},
		{"number", `[5]`, `invalid params: param 1 (transaction_hash): want a string, got number 5`, 0},
		{"above prime", `["0x800000000000011000000000000000000000000000000000000000000000001"]`, `invalid params: param 1 (transaction_hash): felt is not below the field prime 2^251+17*2^192+1: string "0x800000000000011000000000000000000000000000000000000000000000001"`, 0},
	})
}

func TestTableRows(t *testing.T) {
	tb := starknet.Table()
	rows := map[string]portico.Method{}
	for _, m := range tb.Methods {
		rows[m.Name] = m
	}
	for _, name := range []string{"getEvents", "getStateUpdate", "blockNumber", "blockHashAndNumber", "chainId", "specVersion", "getBlockWithTxHashes", "getTransactionReceipt"} {
		m, ok := rows["starknet_"+name]
		if !ok || m.Params == nil || len(m.Aliases) != 1 || m.Aliases[0] != "rollup_"+name {
			t.Errorf("row starknet_%s: %+v", name, m)
		}
		for _, f := range tb.DefaultAllow {
			if f == "starknet_"+name {
				t.Errorf("%s is both a row and in Forward", f)
			}
		}
	}
}

func FuzzNoParams(f *testing.F) {
	fuzzParams(f, starknet.NoParams, `[]`, `{}`, `[1]`)
}

// FuzzRules feeds any params to every rule of the table: no panic, errors
// carry codes, and pinned params are valid JSON that the rule accepts
// again as a call about that block.
func FuzzRules(f *testing.F) {
	tb := starknet.Table()
	rules := append(tb.Methods, tb.Known...)
	for _, s := range []string{`{"block_id":"latest"}`, `["latest","0x1"]`, filter(``), `[{"block_number":1},"0x2"]`} {
		for i := range rules {
			f.Add(i, s)
		}
	}
	f.Fuzz(func(t *testing.T, i int, s string) {
		if i < 0 || !jsontext.Value(s).IsValid() {
			return
		}
		m := rules[i%len(rules)]
		p, err := m.Params(jsontext.Value(s))
		if err != nil {
			var coded interface{ ErrorCode() int }
			if !errors.As(err, &coded) {
				t.Fatalf("%s: error without a code: %v", m.Name, err)
			}
			return
		}
		if p.Pin == nil {
			return
		}
		pinned := p.Pin(77)
		if !pinned.IsValid() {
			t.Fatalf("%s: pinned %s to invalid JSON %q", m.Name, s, pinned)
		}
		q, err := m.Params(pinned)
		if err != nil || q.Block.Kind != portico.BlockNumber || q.Block.Number != 77 {
			t.Fatalf("%s: pinned %s to %s, read back as %+v, %v", m.Name, s, pinned, q.Block, err)
		}
	})
}
