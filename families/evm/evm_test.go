package evm_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
)

const (
	addr = `"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"`
	hash = `"0xd226371d9d4f0e0d1ba0b6a4bbfa32e0db1c1e2bd04c0c5bd3e5b0fb1e0bdcd7"`
)

type paramsCase struct {
	name   string
	params string
	want   string // forwarded params, or the error message
	err    bool
}

// send adapts a params rule to the params it sends.
func send(rule func(jsontext.Value) (portico.Params, error)) func(jsontext.Value) (jsontext.Value, error) {
	return func(raw jsontext.Value) (jsontext.Value, error) {
		p, err := rule(raw)
		return p.Send, err
	}
}

func run(t *testing.T, rule func(jsontext.Value) (portico.Params, error), cases []paramsCase) {
	f := send(rule)
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var raw jsontext.Value
			if tc.params != "" {
				raw = jsontext.Value(tc.params)
			}
			got, err := f(raw)
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

func TestGetProofParams(t *testing.T) {
	keys := "[" + strings.Repeat(`"0x0",`, 1024) + `"0x1"]`
	run(t, evm.GetProofParams, []paramsCase{
		{"latest", `[` + addr + `,["0x0"],"latest"]`, `[` + addr + `,["0x0"],"latest"]`, false},
		{"block left out: latest sent", `[` + addr + `,[]]`, `[` + addr + `,[],"latest"]`, false},
		{"block left out, spaces", `[ ` + addr + ` , [] ] `, `[ ` + addr + ` , [] ,"latest"]`, false},
		{"every tag", `[` + addr + `,[],"finalized"]`, `[` + addr + `,[],"finalized"]`, false},
		{"earliest", `[` + addr + `,[],"earliest"]`, `[` + addr + `,[],"earliest"]`, false},
		{"pending", `[` + addr + `,[],"pending"]`, `[` + addr + `,[],"pending"]`, false},
		{"safe", `[` + addr + `,[],"safe"]`, `[` + addr + `,[],"safe"]`, false},
		{"hex number", `[` + addr + `,[],"0x1b4"]`, `[` + addr + `,[],"0x1b4"]`, false},
		{"zero", `[` + addr + `,[],"0x0"]`, `[` + addr + `,[],"0x0"]`, false},
		{"block hash", `[` + addr + `,[],` + hash + `]`, `[` + addr + `,[],` + hash + `]`, false},
		{"eip-1898 hash", `[` + addr + `,[],{"blockHash":` + hash + `,"requireCanonical":true}]`, `[` + addr + `,[],{"blockHash":` + hash + `,"requireCanonical":true}]`, false},
		{"eip-1898 number", `[` + addr + `,[],{"blockNumber":"0x10"}]`, `[` + addr + `,[],{"blockNumber":"0x10"}]`, false},
		{"eip-1898 tag", `[` + addr + `,[],{"blockNumber":"safe"}]`, `[` + addr + `,[],{"blockNumber":"safe"}]`, false},
		{"short storage key as geth", `[` + addr + `,["0x00","0x1","0x` + strings.Repeat("ab", 32) + `"],"latest"]`, `[` + addr + `,["0x00","0x1","0x` + strings.Repeat("ab", 32) + `"],"latest"]`, false},
		{"mixed case address", `["0x7DCD17433742f4c0ca53122ab541d0ba67fc27DF",[],"latest"]`, `["0x7DCD17433742f4c0ca53122ab541d0ba67fc27DF",[],"latest"]`, false},

		{"no params", ``, `invalid params: want an array [address, storageKeys, block], got no params`, true},
		{"one param", `[` + addr + `]`, `invalid params: param 2 (storageKeys): missing; want 2 to 3 params [address, storageKeys, block], got 1`, true},
		{"four params", `[` + addr + `,[],"latest",1]`, `invalid params: param 4: too many params: want at most 3 [address, storageKeys, block], got 4`, true},
		{"object params", `{"address":` + addr + `}`, `invalid params: want an array [address, storageKeys, block], got an object`, true},
		{"short address", `["0x7dcd",[],"latest"]`, `invalid params: param 1 (address): want a 20-byte address, 0x and 40 hex digits, got string "0x7dcd"`, true},
		{"address without 0x", `["7dcd17433742f4c0ca53122ab541d0ba67fc27df",[],"latest"]`, `invalid params: param 1 (address): want a 20-byte address, 0x and 40 hex digits, got string "7dcd17433742f4c0ca53122ab541d0ba67fc27df"`, true},
		{"address not hex", `["0x7dcd17433742f4c0ca53122ab541d0ba67fc27dg",[],"latest"]`, `invalid params: param 1 (address): want a 20-byte address, 0x and 40 hex digits, got string "0x7dcd17433742f4c0ca53122ab541d0ba67fc27dg"`, true},
		{"address number", `[1,[],"latest"]`, `invalid params: param 1 (address): want a string, got number 1`, true},
		{"keys not array", `[` + addr + `,"0x0","latest"]`, `invalid params: param 2 (storageKeys): want an array, got string "0x0"`, true},
		{"key too long", `[` + addr + `,["0x` + strings.Repeat("0", 65) + `"],"latest"]`, `invalid params: param 2 (storageKeys[0]): want a storage key of at most 32 bytes, 0x and 1 to 64 hex digits, got string "0x` + strings.Repeat("0", 65) + `"`, true},
		{"key empty", `[` + addr + `,["0x0","0x"],"latest"]`, `invalid params: param 2 (storageKeys[1]): want a storage key of at most 32 bytes, 0x and 1 to 64 hex digits, got string "0x"`, true},
		{"key not hex", `[` + addr + `,["0xzz"],"latest"]`, `invalid params: param 2 (storageKeys[0]): want a storage key of at most 32 bytes, 0x and 1 to 64 hex digits, got string "0xzz"`, true},
		{"key number", `[` + addr + `,[0],"latest"]`, `invalid params: param 2 (storageKeys[0]): want a string, got number 0`, true},
		{"too many keys", `[` + addr + `,` + keys + `,"latest"]`, `invalid params: param 2 (storageKeys): too many keys: at most 1024, got 1025`, true},
		{"bad tag", `[` + addr + `,[],"newest"]`, `invalid params: param 3 (block): want a hex block number, one of latest, earliest, pending, safe, finalized, a 32-byte block hash, or an object with blockNumber or blockHash, got string "newest"`, true},
		{"leading zero", `[` + addr + `,[],"0x01"]`, `invalid params: param 3 (block): hex quantity has leading zero digits: string "0x01"`, true},
		{"empty hex", `[` + addr + `,[],"0x"]`, `invalid params: param 3 (block): want a hex quantity such as "0x1f", got string "0x"`, true},
		{"number above int64", `[` + addr + `,[],"0x8000000000000000"]`, `invalid params: param 3 (block): hex quantity larger than 63 bits: string "0x8000000000000000"`, true},
		{"decimal number", `[` + addr + `,[],10]`, `invalid params: param 3 (block): want a hex block number, one of latest, earliest, pending, safe, finalized, a 32-byte block hash, or an object with blockNumber or blockHash, got number 10`, true},
		{"short hash", `[` + addr + `,[],"0xd226371d9d4f0e0d1ba0b6a4bbfa32e0db1c1e2bd04c0c5bd3e5b0fb1e0bdc"]`, `invalid params: param 3 (block): hex quantity larger than 63 bits: string "0xd226371d9d4f0e0d1ba0b6a4bbfa32e0db1c1e2bd04c0c5bd3e5b0fb1e0bdc"`, true},
		{"both number and hash", `[` + addr + `,[],{"blockNumber":"0x1","blockHash":` + hash + `}]`, `invalid params: param 3 (block): set exactly one of blockNumber and blockHash`, true},
		{"neither", `[` + addr + `,[],{}]`, `invalid params: param 3 (block): set exactly one of blockNumber and blockHash`, true},
		{"bad hash in object", `[` + addr + `,[],{"blockHash":"0x12"}]`, `invalid params: param 3 (block.blockHash): want a 32-byte hash, 0x and 64 hex digits, got string "0x12"`, true},
		{"requireCanonical with number", `[` + addr + `,[],{"blockNumber":"0x1","requireCanonical":true}]`, `invalid params: param 3 (block.requireCanonical): only allowed with blockHash`, true},
		{"requireCanonical not bool", `[` + addr + `,[],{"blockHash":` + hash + `,"requireCanonical":1}]`, `invalid params: param 3 (block.requireCanonical): want a boolean, got number 1`, true},
		{"hash as blockNumber", `[` + addr + `,[],{"blockNumber":` + hash + `}]`, `invalid params: param 3 (block.blockNumber): want a hex block number or a tag, got a hash`, true},
		{"unknown object field", `[` + addr + `,[],{"number":"0x1"}]`, `invalid params: param 3 (block.number): unknown field; allowed fields are blockNumber, blockHash, requireCanonical`, true},
	})
}

func TestGetTransactionByBlockHashAndIndexParams(t *testing.T) {
	run(t, evm.GetTransactionByBlockHashAndIndexParams, []paramsCase{
		{"ok", `[` + hash + `,"0x0"]`, `[` + hash + `,"0x0"]`, false},
		{"large index", `[` + hash + `,"0xffffffffffffffff"]`, `[` + hash + `,"0xffffffffffffffff"]`, false},
		{"upper-case hex", `["0xD226371D9D4F0E0D1BA0B6A4BBFA32E0DB1C1E2BD04C0C5BD3E5B0FB1E0BDCD7","0xA"]`, `["0xD226371D9D4F0E0D1BA0B6A4BBFA32E0DB1C1E2BD04C0C5BD3E5B0FB1E0BDCD7","0xA"]`, false},

		{"no params", ``, `invalid params: want an array [blockHash, index], got no params`, true},
		{"one param", `[` + hash + `]`, `invalid params: param 2 (index): missing; want 2 to 2 params [blockHash, index], got 1`, true},
		{"three params", `[` + hash + `,"0x0",1]`, `invalid params: param 3: too many params: want at most 2 [blockHash, index], got 3`, true},
		{"short hash", `["0xd226","0x0"]`, `invalid params: param 1 (blockHash): want a 32-byte hash, 0x and 64 hex digits, got string "0xd226"`, true},
		{"hash too long", `["0x` + strings.Repeat("a", 66) + `","0x0"]`, `invalid params: param 1 (blockHash): want a 32-byte hash, 0x and 64 hex digits, got string "0x` + strings.Repeat("a", 66) + `"`, true},
		{"hash number", `[1,"0x0"]`, `invalid params: param 1 (blockHash): want a string, got number 1`, true},
		{"block number instead of hash", `["latest","0x0"]`, `invalid params: param 1 (blockHash): want a 32-byte hash, 0x and 64 hex digits, got string "latest"`, true},
		{"index number", `[` + hash + `,0]`, `invalid params: param 2 (index): want a hex quantity such as "0x1f", got number 0`, true},
		{"index leading zero", `[` + hash + `,"0x00"]`, `invalid params: param 2 (index): hex quantity has leading zero digits: string "0x00"`, true},
		{"index decimal string", `[` + hash + `,"12"]`, `invalid params: param 2 (index): want a hex quantity such as "0x1f", got string "12"`, true},
		{"index too big", `[` + hash + `,"0x10000000000000000"]`, `invalid params: param 2 (index): hex quantity larger than 64 bits: string "0x10000000000000000"`, true},
		{"index null", `[` + hash + `,null]`, `invalid params: param 2 (index): want a hex quantity such as "0x1f", got null`, true},
	})
}

// TestCacheability: each rule says, in its one scan of the params, what
// block a call is about, how its answer may be cached, and how a tag is
// pinned to the block the gateway resolves it to.
func TestCacheability(t *testing.T) {
	tb := evm.Table()
	rules := map[string]func(jsontext.Value) (portico.Params, error){}
	for _, m := range append(tb.Methods, tb.Known...) {
		rules[m.Name] = m.Params
	}
	const tx = `"0x88df016429689c079f3b2f6ad39fa052532c56795b733da78a91ebe6a713944b"`
	cases := []struct {
		method, params string
		cache          portico.Cacheability
		block          string // kind:number or kind:tag
		pinned         string // the params pinned to block 0x10, when a tag can be
	}{
		{"eth_getProof", `[` + addr + `,[],` + hash + `]`, portico.Immutable, "hash", ""},
		{"eth_getProof", `[` + addr + `,[],{"blockHash":` + hash + `}]`, portico.Immutable, "hash", ""},
		{"eth_getProof", `[` + addr + `,[],"latest"]`, portico.ByBlock, "tag:latest", `[` + addr + `,[],"0x10"]`},
		{"eth_getProof", `[` + addr + `,[],"0x1"]`, portico.ByBlock, "number:1", ""},
		{"eth_getProof", `[` + addr + `,[]]`, portico.ByBlock, "tag:latest", `[` + addr + `,[],"0x10"]`},
		{"eth_getProof", `[` + addr + `,[],"pending"]`, portico.NotCacheable, "tag:pending", ""},
		{"eth_getTransactionByBlockHashAndIndex", `[` + hash + `,"0x0"]`, portico.Immutable, "hash", ""},
		{"eth_getBalance", `[` + addr + `,"finalized"]`, portico.ByBlock, "tag:finalized", `[` + addr + `,"0x10"]`},
		{"eth_getBalance", `[` + addr + `,{"blockNumber":"safe"}]`, portico.ByBlock, "tag:safe", `[` + addr + `,"0x10"]`},
		{"eth_getBalance", `[` + addr + `]`, portico.NotCacheable, "none", ""},
		{"eth_getBalance", `[` + addr + `,"earliest"]`, portico.ByBlock, "number:0", ""},
		{"eth_call", `[{"to":` + addr + `},"latest",{}]`, portico.ByBlock, "tag:latest", `[{"to":` + addr + `},"0x10",{}]`},
		{"eth_getStorageAt", `[` + addr + `,"0x0","0x2"]`, portico.ByBlock, "number:2", ""},
		{"eth_getBlockByNumber", `["latest",false]`, portico.ByBlock, "tag:latest", `["0x10",false]`},
		{"eth_getBlockByNumber", `["pending",true]`, portico.NotCacheable, "tag:pending", ""},
		{"eth_getBlockByHash", `[` + hash + `,true]`, portico.Immutable, "hash", ""},
		{"eth_getBlockReceipts", `[` + hash + `]`, portico.Immutable, "hash", ""},
		{"eth_feeHistory", `["0x4","latest",[25,75]]`, portico.ByBlock, "tag:latest", `["0x4","0x10",[25,75]]`},
		{"eth_getTransactionByHash", `[` + tx + `]`, portico.FinalResult, "hash", ""},
		{"eth_getTransactionReceipt", `[` + tx + `]`, portico.FinalResult, "hash", ""},
		{"eth_getLogs", `[{"blockHash":` + hash + `}]`, portico.Immutable, "hash", ""},
		{"eth_getLogs", `[{"fromBlock":"0x1","toBlock":"0x5"}]`, portico.ByBlock, "number:5", ""},
		{"eth_getLogs", `[{"fromBlock":"0x1","address":` + addr + `}]`, portico.ByBlock, "tag:latest", `[{"address":` + addr + `,"fromBlock":"0x1","toBlock":"0x10"}]`},
		{"eth_getLogs", `[{}]`, portico.ByBlock, "tag:latest", `[{"fromBlock":"0x10","toBlock":"0x10"}]`},
		{"eth_getLogs", `[{"fromBlock":"latest","toBlock":"pending"}]`, portico.NotCacheable, "tag:pending", ""},
		{"eth_getLogs", `[{"fromBlock":"safe","toBlock":"latest"}]`, portico.NotCacheable, "tag:latest", ""},
		// Filters the node refuses itself go to it, uncached.
		{"eth_getLogs", `[{"fromBlock":"0x5","toBlock":"0x1"}]`, portico.NotCacheable, "none", ""},
		{"eth_getLogs", `[{"blockHash":` + hash + `,"toBlock":"0x1"}]`, portico.NotCacheable, "none", ""},
		{"eth_chainId", ``, portico.Immutable, "none", ""},
		{"eth_gasPrice", `[]`, portico.PerHead, "none", ""},
		{"eth_blockNumber", `[]`, portico.NotCacheable, "none", ""},
	}
	for _, c := range cases {
		rule := rules[c.method]
		if rule == nil {
			t.Fatalf("no rule for %s", c.method)
		}
		var raw jsontext.Value
		if c.params != "" {
			raw = jsontext.Value(c.params)
		}
		p, err := rule(raw)
		if err != nil {
			t.Errorf("%s %s: %v", c.method, c.params, err)
			continue
		}
		block := "none"
		switch p.Block.Kind {
		case portico.BlockHash:
			block = "hash"
		case portico.BlockNumber:
			block = "number:" + strconv.FormatUint(p.Block.Number, 10)
		case portico.BlockTag:
			block = "tag:" + p.Block.Tag
		}
		if p.Cache != c.cache || block != c.block {
			t.Errorf("%s %s: cache %v, block %s; want %v, %s", c.method, c.params, p.Cache, block, c.cache, c.block)
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
			if !errors.As(err, &pe) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		if !out.IsValid() {
			t.Fatalf("forwarded invalid JSON %q", out)
		}
		if _, err := decode(out); err != nil {
			t.Fatalf("forwarded params %s refused: %v", out, err)
		}
	})
}

func FuzzGetProofParams(f *testing.F) {
	fuzzParams(f, evm.GetProofParams, `[`+addr+`,["0x0"],"latest"]`, `[`+addr+`,[]]`, `[`+addr+`,[],{"blockHash":`+hash+`}]`)
}

func FuzzGetTransactionByBlockHashAndIndexParams(f *testing.F) {
	fuzzParams(f, evm.GetTransactionByBlockHashAndIndexParams, `[`+hash+`,"0x0"]`, `[`+hash+`,"0x00"]`)
}

// FuzzRules feeds any params to every rule of the table: no panic, errors
// are params errors, and pinned params are valid JSON that the rule
// accepts again as a call about that block.
func FuzzRules(f *testing.F) {
	tb := evm.Table()
	rules := append(tb.Methods, tb.Known...)
	for _, s := range []string{`["latest",false]`, `[{"fromBlock":"0x1"}]`, `[` + addr + `,"safe"]`, `[{"to":"0x1"},{"blockNumber":"latest"}]`} {
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
			var pe *portico.ParamsError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: error of the wrong kind: %v", m.Name, err)
			}
			return
		}
		if p.Pin == nil {
			return
		}
		pinned := p.Pin(0x1234)
		if !pinned.IsValid() {
			t.Fatalf("%s: pinned %s to invalid JSON %q", m.Name, s, pinned)
		}
		q, err := m.Params(pinned)
		if err == nil && m.Name == "eth_getLogs" && q.Block.Kind == portico.BlockNone && q.Cache == portico.NotCacheable {
			// A fromBlock above the pinned head: a range the node refuses,
			// as it refuses the same filter with the tag.
			return
		}
		if err != nil || q.Block.Kind != portico.BlockNumber || q.Block.Number != 0x1234 {
			t.Fatalf("%s: pinned %s to %s, read back as %+v, %v", m.Name, s, pinned, q.Block, err)
		}
	})
}
