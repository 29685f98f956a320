package starknetdevnet

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

type eventJSON struct {
	FromAddress     string   `json:"from_address"`
	Keys            []string `json:"keys"`
	Data            []string `json:"data"`
	BlockHash       *string  `json:"block_hash"`
	BlockNumber     *uint64  `json:"block_number"`
	TransactionHash string   `json:"transaction_hash"`
}

type chunkJSON struct {
	Events []eventJSON `json:"events"`
	Token  *string     `json:"continuation_token"`
}

// addTx appends a transaction with the given events to the pending block.
func addTx(d *Devnet, evs ...event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := starknettx.FeltU64(uint64(0xabc000 + len(d.pending.txs) + int(d.pending.number)<<8))
	d.pending.txs = append(d.pending.txs, &txn{hash: h, kind: kindInvoke, sender: starknettx.FeltU64(1), events: evs})
}

// page fetches every page of a filter (its fields without chunk_size and
// token), checking each against the schema.
func pageAll(t *testing.T, c *client, spec *specSchemas, filter string, chunk int) []eventJSON {
	t.Helper()
	var all []eventJSON
	token := ""
	for pages := 0; ; pages++ {
		f := filter + `"chunk_size":` + itoa(chunk)
		if token != "" {
			f += `,"continuation_token":"` + token + `"`
		}
		res := c.must("starknet_getEvents", `{"filter":{`+f+`}}`)
		if spec != nil {
			spec.validate(t, "starknet_getEvents", res)
		}
		ch := decodeJSON[chunkJSON](t, res)
		if len(ch.Events) > chunk {
			t.Fatalf("page of %d events for chunk_size %d", len(ch.Events), chunk)
		}
		all = append(all, ch.Events...)
		if ch.Token == nil {
			return all
		}
		if len(ch.Events) != chunk {
			t.Fatalf("short page (%d of %d) with a token", len(ch.Events), chunk)
		}
		token = *ch.Token
		if pages > 100_000 {
			t.Fatal("paging does not end")
		}
	}
}

func TestEventFilters(t *testing.T) {
	spec := loadSpec(t)
	d, c := startDevnet(t, Config{})
	A, B := starknettx.FeltU64(0xa), starknettx.FeltU64(0xb)
	K1, K2, X, Y, Z := starknettx.FeltU64(0x11), starknettx.FeltU64(0x12), starknettx.FeltU64(0x21), starknettx.FeltU64(0x22), starknettx.FeltU64(0x23)
	ev := func(from Felt, keys ...Felt) event {
		return event{from: from, keys: keys, data: []Felt{starknettx.FeltU64(7)}}
	}
	all := []event{ev(A, K1), ev(A, K1, X), ev(B, K2, X), ev(B, K2, Y, Z), ev(A), ev(A, K1, Y), ev(B, K1)}
	addTx(d, all[0], all[1])
	addTx(d, all[2], all[3], all[4])
	if _, err := d.SealBlock(context.Background()); err != nil { // block 1
		t.Fatal(err)
	}
	addTx(d, all[5])
	if _, err := d.SealBlock(context.Background()); err != nil { // block 2
		t.Fatal(err)
	}
	addTx(d, all[6]) // pending block 3
	block2 := decodeJSON[struct {
		BlockHash string `json:"block_hash"`
	}](t, c.must("starknet_getBlockWithTxHashes", `{"block_id":{"block_number":2}}`)).BlockHash

	h := func(f Felt) string { return `"` + starknettx.Hex(&f) + `"` }
	id := func(e eventJSON) string { return e.FromAddress + ":" + strings.Join(e.Keys, ",") }
	cases := []struct {
		name   string
		filter string
		want   []int
	}{
		{"everything", ``, []int{0, 1, 2, 3, 4, 5, 6}},
		{"one key", `"keys":[[` + h(K1) + `]],`, []int{0, 1, 5, 6}},
		{"OR within a position", `"keys":[[` + h(K1) + `,` + h(K2) + `]],`, []int{0, 1, 2, 3, 5, 6}},
		{"AND across positions", `"keys":[[` + h(K1) + `],[` + h(X) + `]],`, []int{1}},
		{"empty position is a wildcard", `"keys":[[],[` + h(X) + `]],`, []int{1, 2}},
		{"wildcard then OR", `"keys":[[],[` + h(X) + `,` + h(Y) + `]],`, []int{1, 2, 3, 5}},
		{"third position", `"keys":[[` + h(K2) + `],[],[` + h(Z) + `]],`, []int{3}},
		{"trailing empty positions are dropped", `"keys":[[` + h(K1) + `],[]],`, []int{0, 1, 5, 6}},
		{"all positions empty", `"keys":[[],[]],`, []int{0, 1, 2, 3, 4, 5, 6}},
		{"no such key", `"keys":[[` + h(Z) + `]],`, nil},
		{"address", `"address":` + h(B) + `,`, []int{2, 3, 6}},
		{"address array", `"address":[` + h(A) + `,` + h(B) + `],`, []int{0, 1, 2, 3, 4, 5, 6}},
		{"address and key", `"address":` + h(A) + `,"keys":[[` + h(K1) + `]],`, []int{0, 1, 5}},
		{"from block 2", `"from_block":{"block_number":2},`, []int{5, 6}},
		{"to latest excludes pending", `"to_block":"latest",`, []int{0, 1, 2, 3, 4, 5}},
		{"pending only", `"from_block":"pending","to_block":"pending",`, []int{6}},
		{"pre_confirmed only", `"from_block":"pre_confirmed",`, []int{6}},
		{"from hash", `"from_block":{"block_hash":"` + block2 + `"},"to_block":"latest",`, []int{5}},
		{"to block 1", `"to_block":{"block_number":1},`, []int{0, 1, 2, 3, 4}},
		{"latest only", `"from_block":"latest","to_block":"latest",`, []int{5}},
		{"beyond the chain", `"from_block":{"block_number":9},`, nil},
		{"from after to", `"from_block":{"block_number":2},"to_block":{"block_number":1},`, nil},
		{"l1_accepted before any", `"to_block":"l1_accepted",`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{1, 2, 1024} {
				got := pageAll(t, c, spec, tc.filter, chunk)
				var gotIDs, wantIDs []string
				for _, e := range got {
					gotIDs = append(gotIDs, id(e))
				}
				for _, i := range tc.want {
					e := all[i]
					ids := make([]string, len(e.keys))
					for j := range e.keys {
						ids[j] = starknettx.Hex(&e.keys[j])
					}
					wantIDs = append(wantIDs, starknettx.Hex(&e.from)+":"+strings.Join(ids, ","))
				}
				if !slices.Equal(gotIDs, wantIDs) {
					t.Fatalf("chunk %d: got %v\nwant %v", chunk, gotIDs, wantIDs)
				}
				for _, e := range got {
					if pending := *e.BlockNumber == 3; pending != (e.BlockHash == nil) {
						t.Fatalf("block %d event with block_hash %v", *e.BlockNumber, e.BlockHash)
					}
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	d, c := startDevnet(t, Config{})
	buildChain(t, d, 2, 2)
	res := c.must("starknet_getEvents", `{"filter":{"chunk_size":2}}`)
	token := *decodeJSON[chunkJSON](t, res).Token
	cases := []struct {
		name, method, params string
		code                 int
		msg                  string
	}{
		{"page too big", "starknet_getEvents", `{"filter":{"chunk_size":1025}}`, 31, "Requested page size is too big"},
		{"too many positions", "rollup_getEvents", `{"filter":{"chunk_size":1,"keys":[` + strings.Repeat(`[],`, 16) + `[]]}}`, 34, "Too many keys provided in a filter"},
		{"too many keys", "rollup_getEvents", `{"filter":{"chunk_size":1,"keys":[[` + strings.Repeat(`"0x1",`, 256) + `"0x1"]]}}`, 34, "Too many keys provided in a filter"},
		{"garbage token", "starknet_getEvents", `{"filter":{"chunk_size":1,"continuation_token":"nope"}}`, 33, "The supplied continuation token is invalid or unknown"},
		{"token of another filter", "starknet_getEvents", `{"filter":{"chunk_size":2,"address":"0x1","continuation_token":"` + token + `"}}`, 33, "The supplied continuation token is invalid or unknown"},
		{"token past the chain", "starknet_getEvents", `{"filter":{"chunk_size":2,"continuation_token":"` + encodeToken(position{99, 0}, (&eventFilter{}).fingerprint()) + `"}}`, 33, "The supplied continuation token is invalid or unknown"},
		{"unknown from hash", "starknet_getEvents", `{"filter":{"chunk_size":1,"from_block":{"block_hash":"0x1234"}}}`, 24, "Block not found"},
		{"unknown to hash", "starknet_getEvents", `[{"chunk_size":1,"to_block":{"block_hash":"0x1234"}}]`, 24, "Block not found"},
		{"bad tag", "starknet_getEvents", `{"filter":{"chunk_size":1,"from_block":"earliest"}}`, -32602, `invalid params: filter.from_block: want {"block_hash": felt}, {"block_number": integer} or one of latest, pending, pre_confirmed, l1_accepted, got string "earliest"`},
		{"chunk missing", "starknet_getEvents", `{"filter":{}}`, -32602, "invalid params: filter.chunk_size: missing; it is required"},
		{"chunk zero", "starknet_getEvents", `{"filter":{"chunk_size":0}}`, -32602, "invalid params: filter.chunk_size: must be at least 1, got 0"},
		{"bad key", "starknet_getEvents", `{"filter":{"chunk_size":1,"keys":[["0xzz"]]}}`, -32602, `invalid params: filter.keys[0][0]: want a felt, 0x and 1 to 64 hex digits below the Stark prime, got string "0xzz"`},
		{"state update unknown number", "starknet_getStateUpdate", `{"block_id":{"block_number":99}}`, 24, "Block not found"},
		{"state update unknown hash", "rollup_getStateUpdate", `{"block_id":{"block_hash":"0x99"}}`, 24, "Block not found"},
		{"state update no params", "starknet_getStateUpdate", ``, -32602, "invalid params: want an object {block_id, contract_addresses} or an array, got nothing"},
		{"block unknown", "starknet_getBlockWithTxHashes", `{"block_id":{"block_number":99}}`, 24, "Block not found"},
		{"receipt unknown", "rollup_getTransactionReceipt", `{"transaction_hash":"0x5"}`, 29, "Transaction hash not found"},
		{"receipt bad hash", "starknet_getTransactionReceipt", `["5"]`, -32602, `invalid params: param 1 (transaction_hash): want a felt, 0x and 1 to 64 hex digits below the Stark prime, got string "5"`},
		{"params to blockNumber", "starknet_blockNumber", `[1]`, -32602, "invalid params: this method takes no params, got an array"},
		{"unknown method", "starknet_getClass", `[]`, -32601, "method not found: starknet_getClass"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.call(tc.method, tc.params)
			if err == nil || err.Code != tc.code || err.Message != tc.msg {
				t.Fatalf("got %v, want %d %s", err, tc.code, tc.msg)
			}
		})
	}
	// A batch mixes results and errors, in order.
	var batch []rpcResponse
	c.post(`[{"jsonrpc":"2.0","id":"a","method":"starknet_blockNumber"},{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"2.0","method":"starknet_chainId"}]`, &batch)
	if len(batch) != 2 || string(batch[0].ID) != `"a"` || string(batch[0].Result) != "2" || batch[1].Error == nil || batch[1].Error.Code != -32601 {
		t.Fatalf("batch: %+v", batch)
	}
}

// TestPaging100k pages through 100,000 events with chunk_size 1000 and
// then random filters and chunk sizes, comparing each union of pages with
// a brute-force filter of the seeded events.
func TestPaging100k(t *testing.T) {
	const blocks, perBlock, seed = 100, 1000, 42
	d, c := startDevnet(t, Config{})
	start := time.Now()
	if err := d.SeedEvents(context.Background(), blocks, perBlock, seed); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d events in %v", blocks*perBlock, time.Since(start))

	type ref struct {
		block uint64
		tx    Felt
		ev    event
	}
	var want []ref
	for b := uint64(1); b <= blocks; b++ {
		for _, tx := range seededTxs(seed, b, perBlock) {
			for _, e := range tx.events {
				want = append(want, ref{b, tx.hash, e})
			}
		}
	}
	key := func(block uint64, tx string, from string, keys []string) string {
		return fmt.Sprint(block, tx, from, keys)
	}
	refKey := func(r ref) string {
		ks := make([]string, len(r.ev.keys))
		for i := range r.ev.keys {
			ks[i] = starknettx.Hex(&r.ev.keys[i])
		}
		return key(r.block, starknettx.Hex(&r.tx), starknettx.Hex(&r.ev.from), ks)
	}
	compare := func(name string, got []eventJSON, exp []ref) {
		t.Helper()
		if len(got) != len(exp) {
			t.Fatalf("%s: %d events, want %d", name, len(got), len(exp))
		}
		for i := range got {
			if g, w := key(*got[i].BlockNumber, got[i].TransactionHash, got[i].FromAddress, got[i].Keys), refKey(exp[i]); g != w {
				t.Fatalf("%s: event %d is %s, want %s", name, i, g, w)
			}
		}
	}
	compare("all, chunk 1000", pageAll(t, c, nil, "", 1000), want)

	rseed := uint64(time.Now().UnixNano())
	t.Logf("random filter seed %d", rseed)
	rng := rand.New(rand.NewPCG(rseed, 7))
	addrs := []Felt{tokenAddress, starknettx.FeltU64(0x1001), starknettx.FeltU64(0x1002), starknettx.FeltU64(0x1003), starknettx.FeltU64(0x9999)}
	sels := []Felt{selTransfer, selApproval, selRare}
	for iter := range 25 {
		from := 1 + rng.Uint64N(blocks)
		to := from + rng.Uint64N(blocks-from+1)
		f := &eventFilter{}
		var sb strings.Builder
		fmt.Fprintf(&sb, `"from_block":{"block_number":%d},"to_block":{"block_number":%d},`, from, to)
		if rng.IntN(2) == 0 {
			for range 1 + rng.IntN(2) {
				f.addresses = append(f.addresses, addrs[rng.IntN(len(addrs))])
			}
			sb.WriteString(`"address":[`)
			for i := range f.addresses {
				if i > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString(`"` + starknettx.Hex(&f.addresses[i]) + `"`)
			}
			sb.WriteString(`],`)
		}
		if rng.IntN(3) > 0 {
			f.keys = make([][]Felt, 1+rng.IntN(3))
			for i := range f.keys {
				for range rng.IntN(3) {
					if i == 0 {
						f.keys[i] = append(f.keys[i], sels[rng.IntN(len(sels))])
					} else {
						f.keys[i] = append(f.keys[i], starknettx.FeltU64(0x2000+rng.Uint64N(9)))
					}
				}
			}
			sb.WriteString(`"keys":[`)
			for i, pos := range f.keys {
				if i > 0 {
					sb.WriteByte(',')
				}
				sb.WriteByte('[')
				for j := range pos {
					if j > 0 {
						sb.WriteByte(',')
					}
					sb.WriteString(`"` + starknettx.Hex(&pos[j]) + `"`)
				}
				sb.WriteByte(']')
			}
			sb.WriteString(`],`)
			for len(f.keys) > 0 && len(f.keys[len(f.keys)-1]) == 0 {
				f.keys = f.keys[:len(f.keys)-1]
			}
		}
		var exp []ref
		for _, r := range want {
			if r.block >= from && r.block <= to && f.matches(&r.ev.from, r.ev.keys) {
				exp = append(exp, r)
			}
		}
		chunk := 1 + rng.IntN(MaxChunkSize)
		chunk = max(chunk, len(exp)/200+1)
		compare(fmt.Sprintf("iteration %d: %s chunk %d", iter, sb.String(), chunk), pageAll(t, c, nil, sb.String(), chunk), exp)
	}
}

var _ = json.Marshal
