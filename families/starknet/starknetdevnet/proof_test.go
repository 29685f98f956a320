package starknetdevnet

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// TestProveShapes checks the nodes prove lists on hand-built tries (those
// of TestPatriciaShapes): the path to a present key, the path that proves
// a key absent, and nothing for an empty trie.
func TestProveShapes(t *testing.T) {
	h := pedersen
	edge := func(child, path Felt, length int) (Felt, trieNode) {
		e := h(&child, &path)
		l := starknettx.FeltU64(uint64(length))
		return *e.Add(&e, &l), trieNode{child: child, path: path, length: length}
	}
	binary := func(l, r Felt) (Felt, trieNode) { return h(&l, &r), trieNode{binary: true, left: l, right: r} }
	entry := func(hash Felt, n trieNode) string { return string(appendProofNode(nil, &hash, &n)) }
	k, v := hexFelt(t, "0x123456789abcdef"), starknettx.FeltU64(7)
	lone, loneNode := edge(v, k, 251)
	two, three := starknettx.FeltU64(2), starknettx.FeltU64(3)
	bin, binNode := binary(two, three)
	low, lowNode := edge(bin, Felt{}, 250)
	cc, dd := starknettx.FeltU64(0xcc), starknettx.FeltU64(0xdd)
	top := hexFelt(t, "0x7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")
	ones := hexFelt(t, "0x3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")
	l, lNode := edge(cc, Felt{}, 250)
	r, rNode := edge(dd, ones, 250)
	split, splitNode := binary(l, r)
	for _, c := range []struct {
		name   string
		leaves [][2]Felt
		key    Felt
		want   []string
	}{
		{"lone leaf", [][2]Felt{{k, v}}, k, []string{entry(lone, loneNode)}},
		{"absent beside a lone leaf", [][2]Felt{{k, v}}, starknettx.FeltU64(5), []string{entry(lone, loneNode)}},
		{"key 1 of 0,1", [][2]Felt{{starknettx.FeltU64(1), three}, {starknettx.FeltU64(0), two}}, starknettx.FeltU64(1), []string{entry(low, lowNode), entry(bin, binNode)}},
		{"absent 2 beside 0,1", [][2]Felt{{starknettx.FeltU64(1), three}, {starknettx.FeltU64(0), two}}, starknettx.FeltU64(2), []string{entry(low, lowNode)}},
		{"top of a split", [][2]Felt{{Felt{}, cc}, {top, dd}}, top, []string{entry(split, splitNode), entry(r, rNode)}},
		{"absent under the split's left", [][2]Felt{{Felt{}, cc}, {top, dd}}, starknettx.FeltU64(9), []string{entry(split, splitNode), entry(l, lNode)}},
		{"empty trie", nil, k, nil},
		{"zero leaves only", [][2]Felt{{k, {}}}, k, nil},
	} {
		nodes := trieNodes{}
		var leaves []trieLeaf
		for _, lv := range c.leaves {
			leaves = append(leaves, trieLeaf{key: lv[0].Bytes(), value: lv[1]})
		}
		root := patriciaRoot(leaves, stateTrieHeight, h, nodes)
		key := c.key.Bytes()
		out, err := nodes.prove([]byte("["), root, &key, stateTrieHeight, map[Felt]bool{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := "[" + strings.Join(c.want, ","); string(out) != want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, out, want)
		}
	}
	// A walk that meets a hash the nodes lack is an error, not a short
	// proof.
	key := k.Bytes()
	if _, err := (trieNodes{}).prove(nil, lone, &key, stateTrieHeight, map[Felt]bool{}); err == nil {
		t.Error("a proof from an unknown root")
	}
}

// TestStorageProofRPC: the answer's shape is the spec's, the same for
// latest, the head's number and its hash, of the sealed state whatever
// the pending block holds, and of the new head once it moves, while the
// old head's proof stays the same; blocks before the first one asked and
// beyond the window are 42, pending ones and oversized requests -32602
// naming the field.
func TestStorageProofRPC(t *testing.T) {
	spec := loadSpec(t)
	d, c := startDevnet(t, Config{})
	buildChain(t, d, 3, 2)
	token := starknettx.Hex(&tokenAddress)
	slot := mapSlot(varBalances, sequencerAddr)
	params := func(block string) string {
		return `{"block_id":` + block + `,"class_hashes":["` + starknettx.Hex(&accountClass) + `","0xc1a55"],"contract_addresses":["` + token + `","0x5eed"],` +
			`"contracts_storage_keys":[{"contract_address":"` + token + `","storage_keys":["` + starknettx.Hex(&slot) + `","0xdead"]}]}`
	}
	type proofJSON struct {
		Classes   []json.RawMessage `json:"classes_proof"`
		Contracts struct {
			Nodes  []json.RawMessage `json:"nodes"`
			Leaves []struct {
				Nonce, ClassHash, StorageRoot string
			} `json:"contract_leaves_data"`
		} `json:"contracts_proof"`
		Storage [][]json.RawMessage `json:"contracts_storage_proofs"`
		Roots   struct {
			BlockHash string `json:"block_hash"`
		} `json:"global_roots"`
	}
	latest := c.must("starknet_getStorageProof", params(`"latest"`))
	tries := func() *stateTries { // the head's
		d.proofMu.Lock()
		defer d.proofMu.Unlock()
		for _, t := range d.proofs {
			if t.block.Equal(&d.head.hash) {
				return t
			}
		}
		return nil
	}
	built := tries()
	spec.validate(t, "starknet_getStorageProof", latest)
	p := decodeJSON[proofJSON](t, latest)
	if len(p.Classes) == 0 || len(p.Contracts.Nodes) == 0 || len(p.Contracts.Leaves) != 2 || len(p.Storage) != 1 || len(p.Storage[0]) == 0 ||
		p.Roots.BlockHash != starknettx.Hex(&d.head.hash) {
		t.Fatalf("proof %s", latest)
	}
	if err := d.GenerateTraffic(); err != nil { // the pending block changes the token's state
		t.Fatal(err)
	}
	for _, id := range []string{`{"block_number":3}`, `{"block_hash":"` + starknettx.Hex(&d.head.hash) + `"}`} {
		if got := c.must("starknet_getStorageProof", params(id)); string(got) != string(latest) {
			t.Fatalf("proof at %s\n%s\nwant the latest's\n%s", id, got, latest)
		}
	}
	positional := `["latest",[],["` + token + `"]]`
	spec.validate(t, "starknet_getStorageProof", c.must("rollup_getStorageProof", positional))
	if tries() != built {
		t.Fatal("the tries were rebuilt for the same head")
	}

	seal(t, d)
	moved := decodeJSON[proofJSON](t, c.must("starknet_getStorageProof", params(`"latest"`)))
	if moved.Roots.BlockHash != starknettx.Hex(&d.head.hash) || moved.Roots.BlockHash == p.Roots.BlockHash {
		t.Fatalf("after a seal the proof is of block %s, the head is %s", moved.Roots.BlockHash, starknettx.Hex(&d.head.hash))
	}
	// The seal built the new head's tries; the old head is still proven,
	// as before.
	if built == nil || tries() == built || !built.block.Equal(&d.head.parent) {
		t.Fatal("the tries were not built when the head moved")
	}
	again := tries()
	c.must("starknet_getStorageProof", params(`"latest"`))
	if tries() != again {
		t.Fatal("the tries were rebuilt for the same head")
	}
	if old := c.must("starknet_getStorageProof", params(`{"block_number":3}`)); string(old) != string(latest) {
		t.Fatalf("the old head's proof changed after a seal:\n%s\nwant\n%s", old, latest)
	}
	for range proofWindow {
		seal(t, d)
	}
	// l1_accepted names a block four behind the head: in the window.
	if _, err := c.call("starknet_getStorageProof", params(`"l1_accepted"`)); err != nil {
		t.Fatalf("l1_accepted: %v", err)
	}
	oldest := d.head.number - proofWindow + 1
	if _, err := c.call("starknet_getStorageProof", params(`{"block_number":`+strconv.FormatUint(oldest, 10)+`}`)); err != nil {
		t.Fatalf("block %d, the oldest in the window: %v", oldest, err)
	}
	if _, err := c.call("starknet_getStorageProof", params(`{"block_number":`+strconv.FormatUint(oldest-1, 10)+`}`)); err == nil || err.Code != 42 {
		t.Fatalf("block %d, out of the window: %v, want 42", oldest-1, err)
	}

	many := func(n int, item string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = strings.ReplaceAll(item, "N", strconv.Itoa(i+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	keys := many(1000, `"0xN"`)
	for _, tc := range []struct {
		params string
		code   int
		field  string
	}{
		{params(`{"block_number":1}`), 42, ""},
		{params(`{"block_number":99}`), 24, ""},
		{params(`{"block_hash":"0x123"}`), 24, ""},
		{params(`"pending"`), -32602, "block_id"},
		{params(`"pre_confirmed"`), -32602, "block_id"},
		{`{"class_hashes":[]}`, -32602, "block_id"},
		{`{"block_id":"latest","class_hashes":` + many(65, `"0xN"`) + `}`, -32602, "class_hashes"},
		{`{"block_id":"latest","contract_addresses":` + many(65, `"0xN"`) + `}`, -32602, "contract_addresses"},
		{`{"block_id":"latest","contracts_storage_keys":` + many(65, `{"contract_address":"0xN","storage_keys":[]}`) + `}`, -32602, "contracts_storage_keys"},
		{`{"block_id":"latest","contracts_storage_keys":[{"contract_address":"0x1","storage_keys":` + keys + `},{"contract_address":"0x2","storage_keys":` + keys + `}]}`, -32602, "contracts_storage_keys"},
		{`{"block_id":"latest","contracts_storage_keys":[{"contract_address":"0x1","storage_keys":["0x800000000000000000000000000000000000000000000000000000000000000"]}]}`, -32602, "contracts_storage_keys[0].storage_keys[0]"},
		{`{"block_id":"latest","contracts_storage_keys":[{"contract_address":"0x1"}]}`, -32602, "contracts_storage_keys[0].storage_keys"},
		{`{"block_id":"latest","contracts_storage_keys":[{"contract_address":"0x1","storage_keys":[],"extra":1}]}`, -32602, "contracts_storage_keys[0]"},
		{`{"block_id":"latest","contract_addresses":["0x800000000000000000000000000000000000000000000000000000000000000"]}`, -32602, "contract_addresses[0]"},
		{`{"block_id":"latest","class_hashes":"0x1"}`, -32602, "class_hashes"},
	} {
		_, err := c.call("starknet_getStorageProof", tc.params)
		if err == nil || err.Code != tc.code || (tc.field != "" && !strings.Contains(err.Message, tc.field)) {
			t.Errorf("%.120s: %v, want %d naming %q", tc.params, err, tc.code, tc.field)
		}
	}
}
