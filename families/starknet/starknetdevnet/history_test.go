package starknetdevnet

import (
	"encoding/json"
	"testing"
	"time"
)

// TestStartWithTraffic: with traffic, Start returns with block 1 sealed
// holding a period's traffic, so the README's getEvents (block 0 to latest)
// finds events at once; without traffic Start seals nothing after the
// genesis; a restart on a data directory that has transactions seals
// nothing more. The period is an hour, so no block comes from the timer
// during the test.
func TestStartWithTraffic(t *testing.T) {
	const events = `{"filter":{"from_block":{"block_number":0},"to_block":"latest","chunk_size":10}}`
	type page struct {
		Events []json.RawMessage `json:"events"`
	}

	t.Run("traffic", func(t *testing.T) {
		_, c := startDevnet(t, Config{BlockPeriod: time.Hour, Traffic: true})
		if n := decodeJSON[int](t, c.must("starknet_blockNumber", "")); n != 1 {
			t.Fatalf("latest block %d, want 1", n)
		}
		if p := decodeJSON[page](t, c.must("starknet_getEvents", events)); len(p.Events) == 0 {
			t.Fatal("no events right after Start")
		}
		su := decodeJSON[stateUpdateJSON](t, c.must("starknet_getStateUpdate", `{"block_id":"latest"}`))
		if su.NewRoot == nil || su.OldRoot == *su.NewRoot {
			t.Fatalf("block 1's state update does not change the root: %+v", su)
		}
	})

	t.Run("no traffic", func(t *testing.T) {
		_, c := startDevnet(t, Config{BlockPeriod: time.Hour})
		if n := decodeJSON[int](t, c.must("starknet_blockNumber", "")); n != 0 {
			t.Fatalf("without traffic Start sealed up to block %d", n)
		}
	})

	t.Run("restart", func(t *testing.T) {
		cfg := Config{BlockPeriod: time.Hour, Traffic: true, DataDir: t.TempDir()}
		d1, _ := startDevnet(t, cfg)
		if err := d1.Close(); err != nil {
			t.Fatal(err)
		}
		_, c := startDevnet(t, cfg)
		if n := decodeJSON[int](t, c.must("starknet_blockNumber", "")); n != 1 {
			t.Fatalf("after a restart the latest block is %d, want the first run's block 1", n)
		}
	})
}
