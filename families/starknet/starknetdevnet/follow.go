package starknetdevnet

import (
	"context"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// followBatch is how many headers or events a follower reads from the
// database at once, before sending them.
const followBatch = 256

// follower feeds one newHeads or events subscription. Its cursor is the
// first block (newHeads) or event position (events) not sent yet; it sends
// what the database holds from there up to the sealed head, then waits for
// the sealer to wake it. A subscription that starts in the past therefore
// replays and then follows through the same code, with no gap and no
// duplicate, whatever the sealer does meanwhile.
type follower struct {
	d      *Devnet
	sub    *jsonrpc.Sub
	id     jsontext.Value
	filter *eventFilter // nil for newHeads
	wake   chan struct{}
	next   position // only the follower's goroutine touches it once started

	mu     sync.Mutex
	reorgs [][]byte // REORG_DATA results to send before the stream goes on
}

// rpcSubscribeNewHeads serves starknet_subscribeNewHeads: the headers from
// block_id (default latest) up to the head, then each new one.
func (d *Devnet) rpcSubscribeNewHeads(ctx context.Context, params jsontext.Value) ([]byte, error) {
	ref, err := decodeNewHeadsParams(params)
	if err != nil {
		return nil, err
	}
	start, err := d.subscriptionStart(ctx, ref)
	if err != nil {
		return nil, err
	}
	return d.subscribe(ctx, func(s *jsonrpc.Sub) error {
		d.follow(ctx, s, start, nil)
		return nil
	})
}

// rpcSubscribeEvents serves starknet_subscribeEvents: the matching events
// of the blocks from block_id (default latest) up to the head, then those
// of each new block. Events of the pending block are not sent: in spec 0.8
// an EMITTED_EVENT carries no finality, so a client could not tell them
// from the same events sent again once sealed.
func (d *Devnet) rpcSubscribeEvents(ctx context.Context, params jsontext.Value) ([]byte, error) {
	f, ref, err := decodeSubscribeEventsParams(params)
	if err != nil {
		return nil, err
	}
	start, err := d.subscriptionStart(ctx, ref)
	if err != nil {
		return nil, err
	}
	return d.subscribe(ctx, func(s *jsonrpc.Sub) error {
		d.follow(ctx, s, start, f)
		return nil
	})
}

// subscriptionStart resolves a SUBSCRIPTION_BLOCK_ID (nil: latest) to a
// sealed block at most MaxBlocksBack behind the head. The caller holds the
// read lock.
func (d *Devnet) subscriptionStart(ctx context.Context, ref *blockRef) (uint64, error) {
	if ref == nil || ref.tag == "latest" {
		return d.head.number, nil
	}
	n, err := d.resolve(ctx, ref)
	if err != nil {
		return 0, err
	}
	if n < 0 || uint64(n) > d.head.number {
		return 0, ErrBlockNotFound
	}
	if d.head.number-uint64(n) > MaxBlocksBack {
		return 0, ErrTooManyBlocksBack
	}
	return uint64(n), nil
}

// follow registers a follower from block start; its goroutine starts once
// the subscription's id has been answered. The caller holds the read lock,
// so no block is sealed between the start and the registration.
func (d *Devnet) follow(ctx context.Context, s *jsonrpc.Sub, start uint64, f *eventFilter) {
	h := d.subs
	fl := &follower{d: d, sub: s, id: s.ID(), filter: f, wake: make(chan struct{}, 1), next: position{block: start}}
	h.mu.Lock()
	h.followers[fl] = struct{}{}
	h.mu.Unlock()
	s.OnEnd(func() {
		h.mu.Lock()
		delete(h.followers, fl)
		h.mu.Unlock()
	})
	afterAnswer(ctx, func() {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return
		}
		h.wg.Add(1)
		h.mu.Unlock()
		go fl.run()
	})
}

// run sends until the subscription or the devnet ends.
func (f *follower) run() {
	h := f.d.subs
	defer h.wg.Done()
	for {
		if !f.sendReorgs() {
			return
		}
		for head := h.head.Load(); f.next.block <= head; {
			ok, err := f.step(head)
			if err != nil {
				if h.ctx.Err() == nil {
					// The stream cannot go on without a gap: end it.
					h.log.Error("starknet devnet: subscription stream", "subscription", string(f.id), "err", err)
					f.sub.End()
				}
				return
			}
			if !ok {
				return
			}
		}
		select {
		case <-f.wake:
		case <-f.sub.Done():
			return
		case <-h.ctx.Done():
			return
		}
	}
}

// send paces and sends one notification; false once the subscription or
// the devnet has ended.
func (f *follower) send(method string, result []byte) bool {
	return f.d.subs.room(f.sub) && f.sub.Notify(notification(method, f.id, result))
}

// sendReorgs sends the reorg notifications queued for this subscription.
func (f *follower) sendReorgs() bool {
	f.mu.Lock()
	rs := f.reorgs
	f.reorgs = nil
	f.mu.Unlock()
	for _, r := range rs {
		if !f.send(notifyReorg, r) {
			return false
		}
	}
	return true
}

// step sends the next batch up to head and moves the cursor past it.
func (f *follower) step(head uint64) (bool, error) {
	ctx := f.d.subs.ctx
	if f.filter == nil {
		rows, err := f.d.headers(ctx, f.next.block, min(head, f.next.block+followBatch-1))
		if err != nil {
			return false, err
		}
		for i := range rows {
			if !f.send(notifyNewHeads, appendHeader(nil, &rows[i])) {
				return false, nil
			}
			f.next = position{block: rows[i].number + 1}
		}
		if len(rows) == 0 { // cannot happen below the head; never spin
			f.next = position{block: head + 1}
		}
		return true, nil
	}
	evs, err := f.d.scanDB(ctx, f.filter, f.next, head, followBatch)
	if err != nil {
		return false, err
	}
	for i := range evs {
		if !f.send(notifyEvents, appendEmitted(nil, &evs[i])) {
			return false, nil
		}
	}
	if len(evs) < followBatch {
		f.next = position{block: head + 1}
	} else {
		last := evs[len(evs)-1].at
		f.next = position{block: last.block, pos: last.pos + 1}
	}
	return true, nil
}

// headers reads the headers of blocks from..to, which are sealed.
func (d *Devnet) headers(ctx context.Context, from, to uint64) ([]blockRow, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT `+headerColumns+` FROM blocks WHERE number BETWEEN ? AND ? ORDER BY number`, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []blockRow
	for rows.Next() {
		b, err := scanBlock(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *b)
	}
	return out, rows.Err()
}

// appendHeader renders a sealed block's BLOCK_HEADER.
func appendHeader(b []byte, r *blockRow) []byte {
	b = append(b, '{')
	b = appendSealedHeader(b, r)
	return append(b, '}')
}
