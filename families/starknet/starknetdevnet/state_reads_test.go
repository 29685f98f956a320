package starknetdevnet

import (
	"context"
	"strings"
	"testing"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// TestStateReads reads every contract's class hash and every slot of the
// latest and the pending state, by named and positional params, and
// checks them against the state itself (the latest as loaded from the
// database, the pending as the devnet holds it).
func TestStateReads(t *testing.T) {
	spec := loadSpec(t)
	d, c := startDevnet(t, Config{})
	buildChain(t, d, 3, 2)
	if err := d.GenerateTraffic(); err != nil {
		t.Fatal(err)
	}
	latest, err := loadState(context.Background(), d.db)
	if err != nil {
		t.Fatal(err)
	}
	check := func(method, params, want string) {
		t.Helper()
		res := c.must(method, params)
		spec.validate(t, method, res)
		if string(res) != `"`+want+`"` {
			t.Fatalf("%s %s = %s, want %s", method, params, res, want)
		}
	}
	differ := 0
	for _, at := range []struct {
		tag string
		w   *worldState
	}{{`"latest"`, latest}, {`"pending"`, d.world}, {`"pre_confirmed"`, d.world}, {`{"block_number":3}`, latest}} {
		for a, ct := range at.w.contracts {
			addr := feltFromKey(a[:])
			check("starknet_getClassHashAt", `{"block_id":`+at.tag+`,"contract_address":"`+starknettx.Hex(&addr)+`"}`, starknettx.Hex(&ct.classHash))
			check("rollup_getClassHashAt", `[`+at.tag+`,"`+starknettx.Hex(&addr)+`"]`, starknettx.Hex(&ct.classHash))
			for k, v := range ct.storage {
				key := feltFromKey(k[:])
				check("starknet_getStorageAt", `{"contract_address":"`+starknettx.Hex(&addr)+`","key":"`+starknettx.Hex(&key)+`","block_id":`+at.tag+`}`, starknettx.Hex(&v))
				check("starknet_getStorageAt", `["`+starknettx.Hex(&addr)+`","`+starknettx.Hex(&key)+`",`+at.tag+`]`, starknettx.Hex(&v))
				if at.w == d.world && latest.storageAt(addr, key) != v {
					differ++
				}
			}
			check("starknet_getStorageAt", `["`+starknettx.Hex(&addr)+`","0xdead",`+at.tag+`]`, "0x0")
		}
	}
	if differ == 0 {
		t.Fatal("the pending state equals the latest: the test reads nothing the pending block changed")
	}
}

// TestStateReadErrors: the spec's errors, and -32602 naming the field.
func TestStateReadErrors(t *testing.T) {
	d, c := startDevnet(t, Config{})
	buildChain(t, d, 2, 1)
	token := starknettx.Hex(&tokenAddress)
	for _, tc := range []struct {
		method, params string
		code           int
		field          string // in the message, for -32602
	}{
		{"starknet_getStorageAt", `["0x5eed","0x1","latest"]`, 20, ""},
		{"starknet_getStorageAt", `{"contract_address":"0x5eed","key":"0x1","block_id":"pending"}`, 20, ""},
		{"starknet_getClassHashAt", `["latest","0x5eed"]`, 20, ""},
		{"starknet_getClassHashAt", `{"block_id":"pending","contract_address":"0x5eed"}`, 20, ""},
		{"starknet_getStorageAt", `["` + token + `","0x1",{"block_number":99}]`, 24, ""},
		{"starknet_getClassHashAt", `[{"block_hash":"0x123"},"` + token + `"]`, 24, ""},
		{"starknet_getStorageAt", `["` + token + `","0x1",{"block_number":1}]`, -32602, "block_id"},
		{"starknet_getClassHashAt", `{"block_id":{"block_number":0},"contract_address":"` + token + `"}`, -32602, "block_id"},
		{"starknet_getStorageAt", `["` + token + `","0x800000000000000000000000000000000000000000000000000000000000000","latest"]`, -32602, "key"},
		{"starknet_getStorageAt", `["` + token + `","latest"]`, -32602, "block_id"},
		{"starknet_getStorageAt", `{"contract_address":"` + token + `","block_id":"latest"}`, -32602, "key"},
		{"starknet_getStorageAt", `["zz","0x1","latest"]`, -32602, "contract_address"},
		{"starknet_getClassHashAt", `["latest",7]`, -32602, "contract_address"},
		{"starknet_getClassHashAt", `["soon","` + token + `"]`, -32602, "block_id"},
	} {
		_, err := c.call(tc.method, tc.params)
		if err == nil || err.Code != tc.code || (tc.field != "" && !strings.Contains(err.Message, tc.field)) {
			t.Errorf("%s %s: %v, want %d naming %q", tc.method, tc.params, err, tc.code, tc.field)
		}
	}
}
