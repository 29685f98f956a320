package starknetdevnet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/porticohq/portico/jsonrpc"
)

// notifyReorg sends starknet_subscriptionReorg, with blocks from..to as
// the orphaned chain, to every newHeads, events and transactionStatus
// subscription (the ones the spec sends reorgs to). The devnet never
// reorgs by itself, so nothing calls this outside the tests; it is the
// path a reorg would be announced on, and the tests check its
// notification against the spec. Followers send it in their stream's
// order.
func (d *Devnet) notifyReorg(ctx context.Context, from, to uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil || d.closed {
		return errNotRunning
	}
	if from > to || to > d.head.number {
		return fmt.Errorf("starknetdevnet: reorg of blocks %d..%d: not sealed blocks in order", from, to)
	}
	var first, last []byte
	for n, h := range map[uint64]*[]byte{from: &first, to: &last} {
		err := d.db.QueryRowContext(ctx, `SELECT hash FROM blocks WHERE number = ?`, n).Scan(h)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrBlockNotFound
		}
		if err != nil {
			return err
		}
	}
	fh, lh := feltFromKey(first), feltFromKey(last)
	r := append([]byte(`{"starting_block_hash":`), appendFeltJSON(nil, &fh)...)
	r = append(r, `,"starting_block_number":`...)
	r = appendUint(r, from)
	r = append(r, `,"ending_block_hash":`...)
	r = appendFeltJSON(r, &lh)
	r = append(r, `,"ending_block_number":`...)
	r = appendUint(r, to)
	d.subs.reorg(append(r, '}'))
	return nil
}

// reorg queues a REORG_DATA result on the followers and sends it to the
// status subscriptions.
func (h *hub) reorg(result []byte) {
	var statuses []*jsonrpc.Sub
	h.mu.Lock()
	for f := range h.followers {
		f.mu.Lock()
		f.reorgs = append(f.reorgs, result)
		f.mu.Unlock()
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	for _, w := range h.txWait {
		for st := range w {
			statuses = append(statuses, st.sub)
		}
	}
	for st := range h.l1Wait {
		statuses = append(statuses, st.sub)
	}
	h.mu.Unlock()
	for _, s := range statuses {
		s.Notify(notification(notifyReorg, s.ID(), result))
	}
}
