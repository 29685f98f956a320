package starknetdevnet

import (
	"context"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// TestPersistence restarts a devnet on the same DataDir: the chain, its
// state root and its events survive, and new blocks chain onto the old.
func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	d1, c1 := startDevnet(t, Config{DataDir: dir})
	buildChain(t, d1, 5, 3)
	before := c1.must("starknet_getStateUpdate", `{"block_id":"latest"}`)
	events := c1.must("starknet_getEvents", `{"filter":{"chunk_size":1024}}`)
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}

	d2, c2 := startDevnet(t, Config{DataDir: dir})
	if got := c2.must("starknet_getStateUpdate", `{"block_id":"latest"}`); string(got) != string(before) {
		t.Fatalf("after restart latest state update\n%s\nwant\n%s", got, before)
	}
	if got := c2.must("starknet_getEvents", `{"filter":{"chunk_size":1024}}`); string(got) != string(events) {
		t.Fatal("events changed across restart")
	}
	buildChain(t, d2, 1, 2)
	su := decodeJSON[stateUpdateJSON](t, c2.must("starknet_getStateUpdate", `{"block_id":{"block_number":6}}`))
	prev := decodeJSON[stateUpdateJSON](t, before)
	if su.OldRoot != *prev.NewRoot {
		t.Fatalf("block 6 old_root %s, block 5 new_root %s", su.OldRoot, *prev.NewRoot)
	}
	if n := decodeJSON[int](t, c2.must("starknet_blockNumber", "")); n != 6 {
		t.Fatalf("blockNumber %d", n)
	}

	// Without a DataDir every start is fresh.
	_, c3 := startDevnet(t, Config{})
	if n := decodeJSON[int](t, c3.must("starknet_blockNumber", "")); n != 0 {
		t.Fatalf("fresh devnet at block %d", n)
	}
	if _, err := New(Config{DataDir: dir, ChainID: "SN_OTHER"}); err != nil {
		t.Fatal(err)
	}
	other, _ := New(Config{DataDir: dir, ChainID: "SN_OTHER", BlockPeriod: -1})
	if err := other.Start(context.Background()); err == nil {
		t.Fatal("a DataDir of another chain id was accepted")
	}
	other.Close()
}

// TestBackgroundProduction runs the devnet on its own timer with traffic:
// blocks appear, the pending block fills, and Close stops everything
// (goleak, in TestMain, checks that no goroutine is left).
func TestBackgroundProduction(t *testing.T) {
	d, c := startDevnet(t, Config{BlockPeriod: 40 * time.Millisecond, Traffic: true})
	waitFor(t, "three blocks", func() bool {
		return decodeJSON[int](t, c.must("rollup_blockNumber", "")) >= 3
	})
	var prev string
	for n := 0; n <= 3; n++ {
		su := decodeJSON[stateUpdateJSON](t, c.must("starknet_getStateUpdate", `{"block_id":{"block_number":`+itoa(n)+`}}`))
		if n > 0 && su.OldRoot != prev {
			t.Fatalf("block %d old_root %s != %s", n, su.OldRoot, prev)
		}
		prev = *su.NewRoot
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SealBlock(context.Background()); err == nil {
		t.Fatal("SealBlock after Close succeeded")
	}
}

func TestNewValidates(t *testing.T) {
	for name, cfg := range map[string]Config{
		"bad listen":        {Listen: "nope"},
		"traffic no period": {Traffic: true, BlockPeriod: -1},
		"tiny period":       {BlockPeriod: time.Millisecond},
		"long chain id":     {ChainID: "SN_0123456789012345678901234567890"},
		"non-ascii id":      {ChainID: "SN_é"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d.HTTPURL() != "" || d.Close() != nil {
		t.Fatal("an unstarted devnet has a URL or fails to close")
	}
}

// TestSchemaRejects makes sure the schema check can fail.
func TestSchemaRejects(t *testing.T) {
	spec := loadSpec(t)
	for method, bad := range map[string]string{
		"starknet_getEvents":      `{"events":[{"keys":[],"data":[]}]}`,
		"starknet_getStateUpdate": `{"old_root":"0x1","new_root":"0x2","state_diff":{}}`,
		"starknet_blockNumber":    `-1`,
	} {
		if err := spec.check(method, []byte(bad)); err == nil {
			t.Errorf("%s accepted %s", method, bad)
		}
	}
}

func FuzzDecodeEventsParams(f *testing.F) {
	for _, s := range []string{
		`{"filter":{"from_block":{"block_number":0},"to_block":"latest","chunk_size":10,"keys":[["0x1"],[]],"address":"0x2"}}`,
		`[{"from_block":"pending","chunk_size":1,"continuation_token":"AQEBAAAAAA"}]`,
		`{"filter":{"chunk_size":1024,"address":["0x1","0x2"],"to_block":{"block_hash":"0x3"}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !jsontext.Value(s).IsValid() {
			return
		}
		flt, err := decodeEventsParams(jsontext.Value(s))
		if err != nil {
			var coded interface{ ErrorCode() int }
			if !asCoded(err, &coded) {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		if flt.chunkSize < 1 || flt.chunkSize > MaxChunkSize || len(flt.keys) > MaxKeyPositions {
			t.Fatalf("accepted out-of-range filter %+v", flt)
		}
		if flt.hasToken {
			decodeToken(flt.token, flt.fingerprnt) // must not panic
		}
	})
}

// TestEveryBlockHasTraffic: with Traffic, every block holds its four
// rounds of transactions however late the devnet's ticks come. The
// shortest period, 10 ms (a traffic tick every 2.5 ms), makes ticks late
// on any machine, as a loaded one made them at 150 ms: before, the seal's
// tick could win over the traffic's and seal blocks short of their
// rounds, or empty.
func TestEveryBlockHasTraffic(t *testing.T) {
	_, c := startDevnet(t, Config{BlockPeriod: 10 * time.Millisecond, Traffic: true})
	const blocks = 40
	waitFor(t, "40 blocks", func() bool {
		return decodeJSON[int](t, c.must("starknet_blockNumber", "")) >= blocks
	})
	for n := 1; n <= blocks; n++ {
		b := decodeJSON[struct {
			Transactions []string `json:"transactions"`
		}](t, c.must("starknet_getBlockWithTxHashes", `{"block_id":{"block_number":`+itoa(n)+`}}`))
		if len(b.Transactions) < trafficRounds {
			t.Fatalf("block %d has %d transactions, want a round's at least for each of %d rounds", n, len(b.Transactions), trafficRounds)
		}
	}
}
