package webhook

import (
	"context"
	"time"

	"github.com/porticohq/portico/store"
)

// outbox writes the workers' outbox entries and acknowledgements to the
// store, those that wait together in one transaction (store.WriteOutbox):
// the webhooks that see the same block write it with one commit, and
// acknowledgements of many webhooks go together, where a transaction each
// queued a thousand webhooks behind SQLite's one writer
// (docs/benchmarks.md, issue 38).
type outbox struct {
	st     *store.Store
	writes chan *outboxWrite
}

// outboxWrite is one worker's write, done when done is closed.
type outboxWrite struct {
	store.OutboxWrite
	done chan struct{}
}

// maxOutboxBatch bounds the writes of one transaction.
const maxOutboxBatch = 512

// outboxTimeout bounds one transaction; the writes are the workers', and
// not given up with one worker's context.
const outboxTimeout = 30 * time.Second

func newOutbox(st *store.Store) *outbox {
	return &outbox{st: st, writes: make(chan *outboxWrite, maxOutboxBatch)}
}

// run writes until stop is closed, after the writes sent before it.
func (o *outbox) run(stop <-chan struct{}) {
	batch := make([]*outboxWrite, 0, maxOutboxBatch)
	ws := make([]*store.OutboxWrite, 0, maxOutboxBatch)
	for {
		select {
		case <-stop:
			return
		case w := <-o.writes:
			batch = append(batch[:0], w)
		}
	more:
		for len(batch) < maxOutboxBatch {
			select {
			case w := <-o.writes:
				batch = append(batch, w)
			default:
				break more
			}
		}
		ws = ws[:0]
		for _, w := range batch {
			ws = append(ws, &w.OutboxWrite)
		}
		ctx, cancel := context.WithTimeout(context.Background(), outboxTimeout)
		o.st.WriteOutbox(ctx, ws)
		cancel()
		for _, w := range batch {
			close(w.done)
		}
		clear(batch)
	}
}

// write does w with the writes that come with it and returns its
// outcome; when ctx ends first it returns ctx's error, and w may still be
// written (an entry is known by its id, an acknowledgement is the same
// twice).
func (o *outbox) write(ctx context.Context, w store.OutboxWrite) ([]store.Delivery, error) {
	ow := &outboxWrite{OutboxWrite: w, done: make(chan struct{})}
	select {
	case o.writes <- ow:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-ow.done:
		return ow.Added, ow.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
