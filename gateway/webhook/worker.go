package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

// pendingBatch is how many outbox entries a worker holds at once.
const pendingBatch = 16

// Bounds of the deliveries a worker's stream hands its delivery in
// memory (worker.ready); beyond them the delivery reads the outbox.
const (
	maxReady      = 32
	maxReadyBytes = 64 << 10
)

// worker delivers one webhook while its manager holds the lease.
type worker struct {
	m    *Manager
	w    store.Webhook
	fam  portico.Webhooks
	wake chan struct{}
	// sent mirrors the store's sent blocks; the stream's goroutine alone
	// uses it.
	sent []store.BlockRef
	// back is how many sent blocks the next stream resumes before the
	// last: a stream that ended before it brought anything resumes one
	// block further back, so that a resume point a reorg dropped and the
	// nodes forgot gives way to one still on the chain (its new branch
	// then takes back the blocks after it). 0 once a stream brings an
	// event.
	back int

	// ready are the deliveries the stream wrote to the outbox that the
	// delivery has not taken yet, in order, held against the key's
	// memory budget: the delivery posts them without reading the store.
	// fromStore says the outbox may hold others (at the start, and after
	// ready overflowed its bounds or the budget): the delivery reads the
	// outbox then, until it has read all of it. dropped counts the
	// overflows.
	mu         sync.Mutex
	ready      []store.Delivery
	readyBytes int64
	fromStore  bool
	dropped    int
	// posted is the seq of the last delivery acknowledged (the delivery
	// goroutine's own).
	posted int64
	// readOutbox reads the outbox (tests: nil is the store's Pending).
	readOutbox func(ctx context.Context) ([]store.Delivery, error)
}

// run streams events into the outbox and delivers the outbox until ctx
// ends or the webhook is paused or its lease lost.
func (k *worker) run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cancel(k.deliver(ctx))
	}()
	k.stream(ctx, cancel)
	<-done
	k.mu.Lock()
	k.dropReadyLocked()
	k.mu.Unlock()
	return context.Cause(ctx)
}

// stream subscribes again whenever the stream ends, resuming after the
// last block sent, with backoff; a stream that fails for RetryFor pauses
// the webhook.
func (k *worker) stream(ctx context.Context, cancel context.CancelCauseFunc) {
	cfg := &k.m.cfg
	backoff := cfg.MinBackoff
	var failingSince time.Time
	for ctx.Err() == nil {
		start := time.Now()
		err := k.streamOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrWebhookNotFound) {
			cancel(err)
			return
		}
		if time.Since(start) > cfg.LeaseFor {
			backoff, failingSince = cfg.MinBackoff, time.Time{}
		}
		if failingSince.IsZero() {
			failingSince = start
		}
		cfg.Logger.Warn("webhook: stream ended", "webhook", k.w.ID, "network", k.w.Network, "err", err)
		if time.Since(failingSince) >= cfg.RetryFor {
			cancel(k.pause(fmt.Sprintf("its events could not be read for %s (since %s): %v", cfg.RetryFor, failingSince.UTC().Format(time.RFC3339), err)))
			return
		}
		if !sleep(ctx, jitter(backoff)) {
			return
		}
		backoff = min(2*backoff, cfg.MaxBackoff)
	}
}

// streamOnce reads the webhook's events from where it was until the
// stream ends.
func (k *worker) streamOnce(ctx context.Context) error {
	cfg := &k.m.cfg
	sent, err := cfg.Store.SentBlocks(ctx, k.w.ID)
	if err != nil {
		return err
	}
	k.sent = sent
	body, perBlock, err := k.fam.Subscribe(k.w.Event, json.RawMessage(k.w.Filter), k.resumePoint())
	if err != nil {
		return err
	}
	key, err := cfg.Store.Get(ctx, k.w.KeyName)
	if err != nil {
		return err
	}
	id := store.Identity(key)
	call := func(ctx context.Context, body []byte) ([]byte, error) {
		return cfg.Source.Call(ctx, id, k.w.Network, body)
	}
	took := false
	err = cfg.Source.Stream(ctx, id, k.w.Network, body, func(result json.RawMessage) error {
		err := k.take(ctx, id, call, perBlock, result)
		if err == nil {
			took, k.back = true, 0
		}
		return err
	})
	if !took && err != nil && ctx.Err() == nil {
		k.back = min(k.back+1, max(len(k.sent)-1, 0))
	}
	return err
}

// resumePoint is the block after which the stream resumes: the last one
// sent, or for events that are items of blocks (logs) the one before it,
// whose items were all written (the last block's items are seen again,
// and known by their ids); k.back blocks further back after streams that
// brought nothing.
func (k *worker) resumePoint() string {
	n := len(k.sent)
	if n == 0 {
		return ""
	}
	i := n - 1 - k.back
	if k.w.Event == EventLogs {
		i--
	}
	return k.sent[max(i, 0)].Hash
}

// take writes the events of one notification to the outbox, after the
// removed deliveries of the sent blocks a block event's reorg dropped.
func (k *worker) take(ctx context.Context, _ apikey.Identity, call portico.WebhookCaller, perBlock bool, result json.RawMessage) error {
	evs, err := k.fam.Read(ctx, call, k.w.Event, json.RawMessage(k.w.Filter), result)
	if err != nil {
		return err
	}
	var ds []store.Delivery
	for _, ev := range evs {
		batch := []portico.WebhookEvent{ev}
		if perBlock && !ev.Removed {
			var dup, gap bool
			if batch, dup, gap = k.follow(ev); gap {
				// Written so far stays; the stream resumes after the last
				// block sent, and the resume sends the blocks between.
				return k.enqueue(ctx, ds, fmt.Errorf("%w: block %d %s does not follow the last block sent", errGap, ev.Number, ev.Hash))
			} else if dup {
				continue
			}
		}
		for _, e := range batch {
			d, err := delivery(&k.w, e)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
	}
	return k.enqueue(ctx, ds, nil)
}

// errGap ends a stream whose next block does not link to the last block
// sent (a stream that skipped the blocks between): it is read again from
// the last block sent.
var errGap = errors.New("webhook: a gap in the stream")

// enqueue writes ds to the outbox and wakes the delivery; it returns then
// (or the outbox's error).
func (k *worker) enqueue(ctx context.Context, ds []store.Delivery, then error) error {
	if len(ds) == 0 {
		return then
	}
	added, err := k.m.out.write(ctx, store.OutboxWrite{Webhook: k.w.ID, Owner: k.m.cfg.Instance, Keep: k.m.cfg.Keep, Add: ds})
	if err != nil {
		return err
	}
	if len(added) > 0 {
		k.handOver(added)
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
	return then
}

// handOver adds deliveries written to the outbox to ready, or, beyond its
// bounds, lets ready go and leaves the delivery to read the outbox (until
// a read finds all of it: what was written after that read is ready).
func (k *worker) handOver(added []store.Delivery) {
	var n int64
	for _, d := range added {
		n += int64(len(d.Body))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	// Kept while the delivery reads the outbox too: what is written
	// after its last read is here (next drops what it read).
	if len(k.ready)+len(added) > maxReady || k.readyBytes+n > maxReadyBytes ||
		k.m.cfg.Source.KeyMemory(k.w.KeyName).TakeErr(n) != nil {
		k.dropReadyLocked()
		k.fromStore = true
		k.dropped++
		return
	}
	k.ready = append(k.ready, added...)
	k.readyBytes += n
}

// dropReadyLocked lets go of ready and gives its bytes back. k.mu is held.
func (k *worker) dropReadyLocked() {
	k.m.cfg.Source.KeyMemory(k.w.KeyName).Give(k.readyBytes)
	k.ready, k.readyBytes = nil, 0
}

// next returns the next deliveries to post, in order: those ready, or,
// while the outbox may hold others, up to pendingBatch read from it. A
// read that finds fewer has read all the outbox held: the deliveries
// written after it are ready, and those ready that it found too (or
// that were posted already) are dropped from ready.
func (k *worker) next(ctx context.Context) ([]store.Delivery, error) {
	k.mu.Lock()
	if !k.fromStore {
		n := min(len(k.ready), pendingBatch)
		out := append([]store.Delivery(nil), k.ready[:n]...)
		var bytes int64
		for _, d := range out {
			bytes += int64(len(d.Body))
		}
		k.ready = append(k.ready[:0], k.ready[n:]...)
		k.readyBytes -= bytes
		k.m.cfg.Source.KeyMemory(k.w.KeyName).Give(bytes)
		k.mu.Unlock()
		return out, nil
	}
	dropped := k.dropped
	k.mu.Unlock()
	read := k.readOutbox
	if read == nil {
		read = func(ctx context.Context) ([]store.Delivery, error) {
			return k.m.cfg.Store.Pending(ctx, k.w.ID, pendingBatch)
		}
	}
	pending, err := read(ctx)
	if err != nil || len(pending) == pendingBatch {
		return pending, err
	}
	seen := k.posted
	if n := len(pending); n > 0 {
		seen = max(seen, pending[n-1].Seq)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dropped != dropped {
		return pending, nil // ready overflowed meanwhile: read again
	}
	var bytes int64
	keep := k.ready[:0]
	for _, d := range k.ready {
		if d.Seq > seen {
			keep = append(keep, d)
		} else {
			bytes += int64(len(d.Body))
		}
	}
	k.ready = keep
	k.readyBytes -= bytes
	k.m.cfg.Source.KeyMemory(k.w.KeyName).Give(bytes)
	k.fromStore = false
	return pending, nil
}

// follow places block ev on the sent chain: the blocks it replaces (at
// its height or above, or its parent's height with another hash) are
// taken back, newest first, then ev; dup says ev was sent already, gap
// that ev does not link to what is left of the sent chain (the blocks
// between were not seen): nothing is to be sent for it then, and k.sent
// is to be read again from the store.
func (k *worker) follow(ev portico.WebhookEvent) (out []portico.WebhookEvent, dup, gap bool) {
	for _, b := range k.sent {
		if b.Hash == ev.Hash {
			return nil, true, false
		}
	}
	for n := len(k.sent); n > 0; n = len(k.sent) {
		tip := k.sent[n-1]
		if tip.Number < ev.Number && (tip.Number != ev.Number-1 || ev.ParentHash == "" || tip.Hash == ev.ParentHash) {
			break
		}
		out = append(out, portico.WebhookEvent{Number: tip.Number, Hash: tip.Hash, ParentHash: tip.ParentHash, Removed: true, Quiet: tip.Silent})
		k.sent = k.sent[:n-1]
	}
	if n := len(k.sent); n > 0 && (k.sent[n-1].Number != ev.Number-1 || (ev.ParentHash != "" && k.sent[n-1].Hash != ev.ParentHash)) {
		return nil, false, true
	}
	k.sent = append(k.sent, store.BlockRef{Number: ev.Number, Hash: ev.Hash, ParentHash: ev.ParentHash, Silent: ev.Quiet})
	return append(out, ev), false, false
}

// deliver posts the outbox in order until ctx ends or the webhook is
// paused or its lease lost.
func (k *worker) deliver(ctx context.Context) error {
	cfg := &k.m.cfg
	tick := time.NewTicker(cfg.LeaseFor)
	defer tick.Stop()
	for {
		pending, err := k.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			cfg.Logger.Warn("webhook: outbox", "webhook", k.w.ID, "err", err)
			if !sleep(ctx, cfg.MinBackoff) {
				return ctx.Err()
			}
			continue
		}
		if len(pending) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-k.wake:
			case <-tick.C:
			}
			continue
		}
		if err := k.postAll(ctx, pending); err != nil {
			return err
		}
	}
}

// postAll posts pending in order, holding their bodies against the key's
// memory budget; while the budget is full it waits, holding nothing.
func (k *worker) postAll(ctx context.Context, pending []store.Delivery) error {
	var held int64
	for _, d := range pending {
		held += int64(len(d.Body))
	}
	mem := k.m.cfg.Source.KeyMemory(k.w.KeyName)
	if err := mem.TakeErr(held); err != nil {
		// pending is let go: the next read is the outbox's.
		k.mu.Lock()
		k.dropReadyLocked()
		k.fromStore = true
		k.dropped++
		k.mu.Unlock()
		k.m.cfg.Logger.Warn("webhook: waiting for memory", "webhook", k.w.ID, "err", err)
		if !sleep(ctx, jitter(k.m.cfg.MinBackoff)) {
			return ctx.Err()
		}
		return nil
	}
	defer mem.Give(held)
	for _, d := range pending {
		if err := k.post(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// post sends one delivery until the receiver takes it, retrying with
// backoff; after RetryFor of failures the webhook is paused.
func (k *worker) post(ctx context.Context, d store.Delivery) error {
	cfg := &k.m.cfg
	backoff := cfg.MinBackoff
	var failingSince time.Time
	for {
		err := cfg.Sender.Post(ctx, k.w.URL, k.w.Secret, d.ID, d.Body)
		if err == nil {
			_, err := k.m.out.write(ctx, store.OutboxWrite{Webhook: k.w.ID, Owner: cfg.Instance, Keep: cfg.Keep, Ack: &d})
			if err == nil {
				k.posted = d.Seq
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		now := time.Now()
		if failingSince.IsZero() {
			failingSince = now
		}
		if now.Sub(failingSince) >= cfg.RetryFor {
			return k.pause(fmt.Sprintf("delivery %s failed for %s (since %s): %v", d.ID, cfg.RetryFor, failingSince.UTC().Format(time.RFC3339), redact(err)))
		}
		if !sleep(ctx, jitter(backoff)) {
			return ctx.Err()
		}
		backoff = min(2*backoff, cfg.MaxBackoff)
	}
}

// pause pauses the webhook with reason and returns errPaused.
func (k *worker) pause(reason string) error {
	cfg := &k.m.cfg
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cfg.Store.SetWebhookState(ctx, k.w.ID, store.WebhookPaused, reason); err != nil {
		cfg.Logger.Warn("webhook: pause", "webhook", k.w.ID, "err", err)
	}
	cfg.Logger.Warn("webhook: paused", "webhook", k.w.ID, "reason", reason)
	return errPaused
}

// redact drops the URL from a client error (it may hold a token in its
// path or query); the webhook's URL is known to its owner anyway.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// jitter spreads d over [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
