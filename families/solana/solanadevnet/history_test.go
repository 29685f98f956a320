package solanadevnet

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go/rpc"
)

// TestStartWithHistory: with traffic, Start returns with a finalized block
// that holds votes and traffic, its slots stamped one period apart up to
// now; without traffic, Start produces nothing (tests rely on that); a
// restart on a data directory keeps its history and produces nothing more.
// The slot period is an hour, so no slot comes from the clock during the
// test.
func TestStartWithHistory(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	cfg := Config{SlotPeriod: time.Hour, Traffic: true, Seed: 11, Now: func() time.Time { return now }}
	ctx := context.Background()

	t.Run("traffic", func(t *testing.T) {
		d, c := start(t, cfg)
		slot, err := c.GetSlot(ctx, rpc.CommitmentFinalized)
		if err != nil || slot == 0 {
			t.Fatalf("finalized slot %d, %v", slot, err)
		}
		v0 := uint64(0)
		b, err := c.GetBlockWithOpts(ctx, slot, &rpc.GetBlockOpts{MaxSupportedTransactionVersion: &v0, Commitment: rpc.CommitmentFinalized})
		if err != nil {
			t.Fatal(err)
		}
		votes, other := 0, 0
		for _, tw := range b.Transactions {
			tx, err := tw.GetTransaction()
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(tx.Message.AccountKeys, voteProgram) {
				votes++
			} else {
				other++
			}
		}
		if votes == 0 || other == 0 {
			t.Fatalf("finalized block %d holds %d votes and %d other transactions", slot, votes, other)
		}

		d.mu.RLock()
		defer d.mu.RUnlock()
		n := d.warmUpSlots()
		for s := d.led.first; s <= d.led.slot; s++ {
			blk := d.led.blocks[s]
			if blk == nil {
				continue // skipped
			}
			want := now.Add(-time.Duration(n-min(s, n)) * time.Hour).Unix()
			if blk.Time != want {
				t.Errorf("slot %d stamped %s, want %s", s, time.Unix(blk.Time, 0).UTC(), time.Unix(want, 0).UTC())
			}
		}
		if d.behind != 0 {
			t.Errorf("blocks after the warm-up would be stamped %s early", d.behind)
		}
	})

	t.Run("no traffic", func(t *testing.T) {
		quiet := cfg
		quiet.Traffic = false
		d, _ := start(t, quiet)
		if p, f := d.Slot("processed"), d.Slot("finalized"); p != 0 || f != 0 {
			t.Fatalf("without traffic Start produced slots: processed %d, finalized %d", p, f)
		}
	})

	t.Run("restart", func(t *testing.T) {
		stored := cfg
		stored.DataDir = t.TempDir()
		d, _ := start(t, stored)
		root := d.Slot("finalized")
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		d2, _ := start(t, stored)
		if p, f := d2.Slot("processed"), d2.Slot("finalized"); p != root || f != root {
			t.Fatalf("restart at processed %d, finalized %d; want both at the stored root %d", p, f, root)
		}
	})
}
