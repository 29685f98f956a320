package starknetdevnet

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// Transaction statuses, as the devnet reports them. It has no mempool: a
// transaction is executed into the pending block the moment it exists, so
// its first status is ACCEPTED_ON_L2 (as pathfinder, Juno and Madara report
// pending-block transactions in spec 0.8), sealing does not change it, and
// it becomes ACCEPTED_ON_L1 once its block is L1Lag blocks behind the head.
// Every devnet transaction succeeds. RECEIVED and REJECTED never occur.
const (
	statusL2 = "ACCEPTED_ON_L2"
	statusL1 = "ACCEPTED_ON_L1"
)

// pendingTxSub is one subscribePendingTransactions subscription.
type pendingTxSub struct {
	sub     *jsonrpc.Sub
	details bool
	senders []Felt
}

// statusSub is one subscribeTransactionStatus subscription. Its fields
// other than sub and hash are guarded by the hub's lock.
type statusSub struct {
	sub   *jsonrpc.Sub
	hash  Felt
	block uint64 // the transaction's block, once seen
}

// rpcSubscribePendingTransactions serves
// starknet_subscribePendingTransactions: each transaction added to the
// pending block after the call, as its hash or, with transaction_details,
// as a TXN_WITH_HASH, when its sender is in sender_address (or that filter
// is empty). A DEPLOY_ACCOUNT's sender is the account it deploys, as
// pathfinder has it.
func (d *Devnet) rpcSubscribePendingTransactions(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, err := decodePendingTxParams(params)
	if err != nil {
		return nil, err
	}
	return d.subscribe(ctx, func(s *jsonrpc.Sub) error {
		h, ps := d.subs, &pendingTxSub{sub: s, details: p.details, senders: p.senders}
		h.mu.Lock()
		h.pendingTx[ps] = struct{}{}
		h.mu.Unlock()
		s.OnEnd(func() {
			h.mu.Lock()
			delete(h.pendingTx, ps)
			h.mu.Unlock()
		})
		return nil
	})
}

// rpcSubscribeTransactionStatus serves
// starknet_subscribeTransactionStatus: the current status right away when
// the transaction is known, else once it appears; then each change. The
// subscription ends itself after ACCEPTED_ON_L1, which is final on a chain
// that never reorgs (unsubscribe then answers false).
func (d *Devnet) rpcSubscribeTransactionStatus(ctx context.Context, params jsontext.Value) ([]byte, error) {
	hash, err := decodeTxStatusParams(params)
	if err != nil {
		return nil, err
	}
	return d.subscribe(ctx, func(s *jsonrpc.Sub) error {
		block, seen, err := d.txBlock(ctx, hash)
		if err != nil {
			return err
		}
		h, st := d.subs, &statusSub{sub: s, hash: hash, block: block}
		final := seen && int64(block) <= d.l1Head()
		h.mu.Lock()
		switch {
		case !seen:
			w := h.txWait[hash]
			if w == nil {
				w = map[*statusSub]struct{}{}
				h.txWait[hash] = w
			}
			w[st] = struct{}{}
		case !final:
			h.l1Wait[st] = struct{}{}
		}
		h.mu.Unlock()
		s.OnEnd(func() { h.forget(st) })
		switch {
		case final:
			h.finish(st, statusL1)
		case seen:
			s.Notify(notification(notifyTxStatus, s.ID(), appendTxStatus(nil, &hash, statusL2)))
		}
		return nil
	})
}

// txBlock finds a transaction: in the pending block or a sealed one. The
// caller holds the read lock.
func (d *Devnet) txBlock(ctx context.Context, hash Felt) (block uint64, seen bool, err error) {
	for _, t := range d.pending.txs {
		if t.hash.Equal(&hash) {
			return d.pending.number, true, nil
		}
	}
	hb := hash.Bytes()
	err = d.db.QueryRowContext(ctx, `SELECT block FROM txs WHERE hash = ?`, hb[:]).Scan(&block)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return block, err == nil, err
}

// forget drops an ended status subscription.
func (h *hub) forget(st *statusSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.l1Wait, st)
	if w := h.txWait[st.hash]; w != nil {
		delete(w, st)
		if len(w) == 0 {
			delete(h.txWait, st.hash)
		}
	}
}

// finish sends the final status and ends the subscription (after the
// answer with its id, when that is not out yet: jsonrpc.Sub.NotifyLast).
func (h *hub) finish(st *statusSub, status string) {
	st.sub.NotifyLast(notification(notifyTxStatus, st.sub.ID(), appendTxStatus(nil, &st.hash, status)))
}

// seenLocked moves the status subscriptions waiting for these transactions
// to waiting for L1, and returns them; the caller holds the hub's lock.
func (h *hub) seenLocked(block uint64, txs []*txn) []*statusSub {
	if len(h.txWait) == 0 {
		return nil
	}
	var out []*statusSub
	for _, t := range txs {
		w := h.txWait[t.hash]
		if w == nil {
			continue
		}
		delete(h.txWait, t.hash)
		for st := range w {
			st.block = block
			h.l1Wait[st] = struct{}{}
			out = append(out, st)
		}
	}
	return out
}

// pendingAdded fans transactions just added to the pending block out to
// the pending-transaction subscriptions they match and to the status
// subscriptions waiting for them. The caller holds the devnet's write
// lock, which orders these notifications with the sealer's.
func (h *hub) pendingAdded(block uint64, txs []*txn) {
	h.mu.Lock()
	subs := slices.Collect(maps.Keys(h.pendingTx))
	seen := h.seenLocked(block, txs)
	h.mu.Unlock()
	for _, t := range txs {
		var hash, full []byte
		for _, s := range subs {
			if len(s.senders) > 0 && !containsFelt(s.senders, &t.sender) {
				continue
			}
			if s.details {
				if full == nil {
					full = appendTxWithHash(nil, t)
				}
				s.sub.Notify(notification(notifyPendingTx, s.sub.ID(), full))
				continue
			}
			if hash == nil {
				hash = appendFeltJSON(nil, &t.hash)
			}
			s.sub.Notify(notification(notifyPendingTx, s.sub.ID(), hash))
		}
	}
	h.sendSeen(seen)
}

// included tells the status subscriptions waiting for a sealed block's
// transactions that were never pending here (SeedEvents' blocks, or
// transactions put in the pending block without traffic).
func (h *hub) included(block uint64, txs []*txn) {
	h.mu.Lock()
	seen := h.seenLocked(block, txs)
	h.mu.Unlock()
	h.sendSeen(seen)
}

// waitingForTxs reports whether any status subscription waits for a
// transaction to appear.
func (h *hub) waitingForTxs() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.txWait) > 0
}

func (h *hub) sendSeen(seen []*statusSub) {
	for _, st := range seen {
		st.sub.Notify(notification(notifyTxStatus, st.sub.ID(), appendTxStatus(nil, &st.hash, statusL2)))
	}
}

// advanced publishes a new sealed head: it wakes the followers and sends
// ACCEPTED_ON_L1 to the statuses whose block is now at or below l1Head.
// The caller holds the devnet's write lock.
func (h *hub) advanced(head uint64, l1Head int64) {
	h.head.Store(head)
	var final []*statusSub
	h.mu.Lock()
	for f := range h.followers {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	for st := range h.l1Wait {
		if int64(st.block) <= l1Head {
			delete(h.l1Wait, st)
			final = append(final, st)
		}
	}
	h.mu.Unlock()
	for _, st := range final {
		h.finish(st, statusL1)
	}
}

// appendTxStatus renders a NEW_TXN_STATUS.
func appendTxStatus(b []byte, hash *Felt, finality string) []byte {
	b = append(b, `{"transaction_hash":`...)
	b = appendFeltJSON(b, hash)
	b = append(b, `,"status":{"finality_status":"`...)
	b = append(b, finality...)
	return append(b, `","execution_status":"SUCCEEDED"}}`...)
}
