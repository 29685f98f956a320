package starknetdevnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// seedEventsPerTx is how many events each seeded transaction emits.
const seedEventsPerTx = 4

// Selectors of seeded events: most are transfers, a tenth approvals and
// one in a hundred a rare event, so filters of every selectivity exist.
var selRare = starknettx.Selector("RareEvent")

// seededTxs returns the synthetic transactions of seeded block n: events
// whose emitter, selector and indexed keys are drawn from small sets, so
// that any filter matches a predictable share.
func seededTxs(seed, block uint64, events int) []*txn {
	rng := rand.New(rand.NewPCG(seed, block))
	emitters := []Felt{tokenAddress, starknettx.FeltU64(0x1001), starknettx.FeltU64(0x1002), starknettx.FeltU64(0x1003)}
	var txs []*txn
	for i := 0; i < events; i += seedEventsPerTx {
		b, idx := starknettx.FeltU64(block), starknettx.FeltU64(uint64(len(txs)))
		t := &txn{hash: pedersen(&b, &idx), kind: kindInvoke, sender: starknettx.FeltU64(0x2000 + rng.Uint64N(8)), fee: feeAmount, l2Gas: 1000}
		for range min(seedEventsPerTx, events-i) {
			sel := selTransfer
			switch r := rng.IntN(100); {
			case r == 0:
				sel = selRare
			case r < 11:
				sel = selApproval
			}
			keys := []Felt{sel, starknettx.FeltU64(0x2000 + rng.Uint64N(8)), starknettx.FeltU64(0x2000 + rng.Uint64N(8))}
			t.events = append(t.events, event{
				from: emitters[rng.IntN(len(emitters))],
				keys: keys[:1+rng.IntN(3)],
				data: []Felt{starknettx.FeltU64(rng.Uint64N(1 << 40)), {}},
			})
		}
		txs = append(txs, t)
	}
	return txs
}

// SeedEvents appends blocks of synthetic transactions, each block with
// eventsPerBlock events (four per transaction), in one database
// transaction; seed makes them reproducible. It is meant for tests and
// benchmarks of getEvents: the seeded blocks change no state (their old
// and new roots are the head's root and their state diffs are empty) and
// their hashes are Poseidon over number, root and parent rather than the
// full block-hash layout: their headers carry the counts but zero
// commitments, and do not hash to their block_hash. The pending block must
// be empty.
func (d *Devnet) SeedEvents(ctx context.Context, blocks, eventsPerBlock int, seed uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil || d.closed {
		return errNotRunning
	}
	if len(d.pending.txs) > 0 {
		return errors.New("starknetdevnet: SeedEvents needs an empty pending block; seal it first")
	}
	if blocks < 0 || eventsPerBlock < 0 {
		return fmt.Errorf("starknetdevnet: SeedEvents(%d, %d): negative count", blocks, eventsPerBlock)
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	insTx, err := tx.PrepareContext(ctx, `INSERT INTO txs VALUES(?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer insTx.Close()
	insEv, err := tx.PrepareContext(ctx, `INSERT INTO events VALUES(?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer insEv.Close()
	emptyDiff := string(appendStateDiff(nil, newStateDiff()))
	head := *d.head
	// Status subscriptions waiting for a seeded transaction learn of it
	// after the commit; the transactions are kept only when one waits.
	track := d.subs.waitingForTxs()
	var seeded [][]*txn
	for range blocks {
		n := head.number + 1
		txs := seededTxs(seed, n, eventsPerBlock)
		b := blockRow{number: n, parent: head.hash, oldRoot: head.newRoot, newRoot: head.newRoot,
			timestamp: head.timestamp, stateDiff: emptyDiff,
			commit: commitments{txCount: uint64(len(txs)), eventCount: uint64(eventsPerBlock)}}
		b.hash = poseidonMany(starknettx.ShortString("PORTICO_SEEDED_BLOCK"), starknettx.FeltU64(n), b.newRoot, b.parent)
		if err := insertBlock(ctx, tx, &b); err != nil {
			return err
		}
		pos := 0
		if track {
			seeded = append(seeded, txs)
		}
		for i, t := range txs {
			th, s := t.hash.Bytes(), t.sender.Bytes()
			if _, err := insTx.ExecContext(ctx, th[:], n, i, t.kind, s[:], t.fee, t.l1Gas, t.dataGas, t.l2Gas, false); err != nil {
				return err
			}
			for _, e := range t.events {
				if err := insertEvent(ctx, insEv, n, pos, i, &e); err != nil {
					return err
				}
				pos++
			}
		}
		head = b
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	first := d.head.number + 1
	d.head = &head
	d.openPending()
	for i, txs := range seeded {
		d.subs.included(first+uint64(i), txs)
	}
	d.subs.advanced(head.number, d.l1Head())
	return nil
}
