// Package metering holds every bound a key or a call has: the credits a
// call is charged against its key's daily balance and rate limit, and
// given back when it did not cost them (Meter, the one interface the
// gateway and the networks charge through; Ledger is the one that keeps
// per-day, per-method usage history); a key's bounds on calls in flight
// and per second, WebSocket connections and subscriptions (Bounds: Calls
// in this process, SharedBounds across instances in Redis); what log
// queries cost (LogPrice); and the prepaid credits of notifications
// (Prepaid).
//
// A charge goes through three parts:
//
//   - the Counter decides, exactly and atomically, whether the call fits the
//     balance and the rate limit (in memory for one instance, in Redis for
//     several, where each instance takes credits in leases: lease.go);
//   - the journal records it on disk before the call is forwarded, so a
//     crash cannot lose it;
//   - a flusher sums journal records into the store's usage table every
//     FlushInterval, in one transaction with a checkpoint.
//
// Refunds go the same way with a negative amount.
package metering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

// Config configures a Ledger.
type Config struct {
	// Counter holds balances and rate budgets; required.
	Counter Counter
	// Store receives usage history; required.
	Store *store.Store
	// JournalDir keeps the journal. Empty means no journal: charges made
	// since the last flush are lost if the process dies (fine for an
	// in-memory store, which loses everything anyway).
	JournalDir string
	// Instance names this instance's checkpoint in the store. Instances
	// sharing a store need different names; required with JournalDir.
	Instance string
	// FlushInterval is how often usage reaches the store; 0 means 1s.
	FlushInterval time.Duration
	// Clock tells the UTC day; nil means time.Now.
	Clock func() time.Time
	// Logger receives flush errors; nil discards them.
	Logger *slog.Logger
}

// Item is one call to charge.
type Item struct {
	Method string
	Cost   int64
}

// Bill is the outcome of a charge: what was charged and the balance after.
type Bill struct {
	KeyID int64
	// Day is the UTC day charged, YYYY-MM-DD.
	Day string
	// Daily is the key's daily balance.
	Daily int64
	// Charged is what the calls cost, less refunds.
	Charged int64
	// Used is what the key has spent today, this charge included.
	Used int64
	// ResetAt is the next 00:00 UTC.
	ResetAt time.Time
}

// Remaining is what is left of today's balance.
func (b *Bill) Remaining() int64 { return max(0, b.Daily-b.Used) }

type usageKey struct {
	day    string
	keyID  int64
	method string
}

type delta struct{ calls, credits int64 }

// Pinger is a Counter that can say whether its backend answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Ping checks that the meter can charge: its counter's backend (Redis)
// and the store that receives usage answer.
func (m *Ledger) Ping(ctx context.Context) error {
	if p, ok := m.counter.(Pinger); ok {
		if err := p.Ping(ctx); err != nil {
			return fmt.Errorf("counter: %w", err)
		}
	}
	if err := m.store.Ping(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Meter is every bound on a key's credits the gateway and the networks
// charge through: a call's charge against the key's daily balance and
// rate, a refund of what it did not cost, the balance, and whether calls
// may run while their charge is on its way. *Ledger is one.
type Meter interface {
	// Charge charges items as one unit, or refuses them all.
	Charge(ctx context.Context, id apikey.Identity, items []Item) (Bill, error)
	// Refund gives back it of the charge b tells, and updates b.
	Refund(ctx context.Context, b *Bill, it Item) error
	// Balance is the key's balance today, without a charge.
	Balance(ctx context.Context, id apikey.Identity) (Bill, error)
	// Speculate reports whether calls costing cost may run while their
	// charge is in flight; their answers are released only once it
	// succeeded.
	Speculate(id apikey.Identity, cost int64) bool
}

var _ Meter = (*Ledger)(nil)

// Ledger charges calls: the counter, the journal and the usage history
// (see the package comment). It is safe for concurrent use.
type Ledger struct {
	counter  Counter
	store    *store.Store
	instance string
	interval time.Duration
	clock    func() time.Time
	log      *slog.Logger

	mu      sync.Mutex // guards the fields below and journal writes
	seq     int64
	deltas  map[usageKey]delta
	journal *journal
	recs    []record

	flushMu sync.Mutex // one flush at a time
	covered []string   // segments in the store, not yet removed

	stop    chan struct{}
	done    chan struct{}
	running atomic.Bool

	// remote is set for counters across the network (Redis); last holds
	// each key's remaining balance after its latest charge, for Speculate.
	remote bool
	last   sync.Map // key id → int64

	today atomic.Pointer[dayRange] // the billing day of the latest charge
}

// New builds a meter and, when there is a journal, replays into the store
// whatever a previous run journaled but did not flush. It starts nothing;
// call Run.
func New(ctx context.Context, cfg Config) (*Ledger, error) {
	if cfg.Counter == nil || cfg.Store == nil {
		return nil, errors.New("metering: Counter and Store are required")
	}
	if cfg.JournalDir != "" && cfg.Instance == "" {
		return nil, errors.New("metering: Instance is required with JournalDir")
	}
	m := &Ledger{
		counter: cfg.Counter, store: cfg.Store, instance: cfg.Instance, interval: cfg.FlushInterval,
		clock: cfg.Clock, log: cfg.Logger, deltas: map[usageKey]delta{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if m.interval <= 0 {
		m.interval = time.Second
	}
	_, m.remote = cfg.Counter.(*Redis)
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if cfg.JournalDir == "" {
		return m, nil
	}
	if err := m.recover(ctx, cfg.JournalDir); err != nil {
		return nil, err
	}
	return m, nil
}

// recover replays journal records past the store's checkpoint, writes them
// to the store and starts a fresh segment.
func (m *Ledger) recover(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("metering: journal: %w", err)
	}
	checkpoint, err := m.store.Checkpoint(ctx, m.instance)
	if err != nil {
		return err
	}
	replayed := 0
	maxSeq, err := replay(dir, func(r record) {
		if r.seq > checkpoint {
			m.add(r)
			replayed++
		}
	})
	if err != nil {
		return err
	}
	m.seq = max(checkpoint, maxSeq)
	old, err := segments(dir)
	if err != nil {
		return err
	}
	if replayed > 0 {
		m.log.Info("metering: replayed journal records a previous run had not flushed", "records", replayed)
	}
	if err := m.store.AddUsage(ctx, m.rows(), m.instance, m.seq); err != nil {
		return err
	}
	m.deltas = map[usageKey]delta{}
	if m.journal, err = openJournal(dir, m.seq+1); err != nil {
		return err
	}
	return m.journal.remove(old)
}

// add sums a record into the pending deltas.
func (m *Ledger) add(r record) {
	k := usageKey{r.day, r.keyID, r.method}
	d := m.deltas[k]
	if r.refund {
		d.calls--
		d.credits -= r.credits
	} else {
		d.calls++
		d.credits += r.credits
	}
	m.deltas[k] = d
}

// rows returns the pending deltas as store rows.
func (m *Ledger) rows() []store.Usage {
	rows := make([]store.Usage, 0, len(m.deltas))
	for k, d := range m.deltas {
		if d.calls != 0 || d.credits != 0 {
			rows = append(rows, store.Usage{Day: k.day, KeyID: k.keyID, Method: k.method, Calls: d.calls, Credits: d.credits})
		}
	}
	return rows
}

// BillingDay returns the billing day of t, the UTC date as 2006-01-02
// (the day a balance and the usage history are kept under), and the
// following midnight, when that day's balance is refilled.
func BillingDay(t time.Time) (day string, resetAt time.Time) {
	t = t.UTC()
	y, mo, d := t.Date()
	return t.Format(time.DateOnly), time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
}

// billingDay is BillingDay, with the day's name kept until its end rather
// than formatted for every charge.
func (m *Ledger) billingDay(t time.Time) (string, time.Time) {
	if d := m.today.Load(); d != nil && t.Before(d.reset) && !t.Before(d.start) {
		return d.day, d.reset
	}
	day, reset := BillingDay(t)
	m.today.Store(&dayRange{day: day, start: reset.AddDate(0, 0, -1), reset: reset})
	return day, reset
}

// dayRange is one billing day: its name and when it starts and ends.
type dayRange struct {
	day          string
	start, reset time.Time
}

// Charge charges items to the key as one unit: all of them fit the
// balance and the rate limit, or none is charged and the error is a
// *portico.QuotaError. A counter or journal failure refuses the calls too
// (portico.ErrMeteringUnavailable): nothing is served unbilled.
func (m *Ledger) Charge(ctx context.Context, id apikey.Identity, items []Item) (Bill, error) {
	day, reset := m.billingDay(m.clock())
	b := Bill{KeyID: id.ID, Day: day, Daily: id.DailyCredits, ResetAt: reset}
	var total int64
	for _, it := range items {
		total += it.Cost
	}
	if total == 0 {
		used, err := m.counter.Used(ctx, id.ID, day)
		if err == nil && len(items) > 0 {
			err = m.record(day, id.ID, items, false) // free calls are history too
		}
		if err != nil {
			return b, m.unavailable(ctx, err)
		}
		b.Used = used
		return b, nil
	}
	used, ok, err := m.counter.Reserve(ctx, id.ID, day, total, id.DailyCredits)
	if err != nil {
		return b, m.unavailable(ctx, err)
	}
	b.Used = used
	if !ok {
		return b, &portico.QuotaError{Limit: portico.QuotaDaily, Key: id.Name, Cost: total,
			Remaining: b.Remaining(), Daily: id.DailyCredits, ResetAt: reset, RetryAfter: reset.Sub(m.clock())}
	}
	if id.RatePerSecond > 0 {
		wait, ok, err := m.counter.Allow(ctx, id.ID, id.RatePerSecond, max(id.RatePerSecond, total), total)
		if err == nil && !ok {
			err = &portico.QuotaError{Limit: portico.QuotaRate, Key: id.Name, Cost: total, Rate: id.RatePerSecond, RetryAfter: wait}
		}
		if err != nil {
			if rerr := m.counter.Refund(ctx, id.ID, day, total); rerr != nil {
				m.log.Error("metering: refund after a refused rate check failed", "key", id.Name, "err", rerr)
			}
			var q *portico.QuotaError
			if errors.As(err, &q) {
				b.Used -= total
				return b, err
			}
			return b, m.unavailable(ctx, err)
		}
	}
	if err := m.record(day, id.ID, items, false); err != nil {
		if rerr := m.counter.Refund(ctx, id.ID, day, total); rerr != nil {
			m.log.Error("metering: refund after a journal failure failed", "key", id.Name, "err", rerr)
		}
		return b, m.unavailable(ctx, err)
	}
	b.Charged = total
	if m.remote {
		m.last.Store(id.ID, b.Remaining())
	}
	return b, nil
}

// speculateMargin is how many times a call's cost must remain for
// Speculate to say yes.
const speculateMargin = 16

// Speculate reports whether the calls may be sent upstream while their
// charge is still on its way, with their answers held back until it
// succeeds. It says yes only with a remote counter, for keys without a
// rate limit whose last charge left at least 16 times this cost: then the
// charge almost surely passes, and the round trip to Redis overlaps the
// one to the node instead of adding to it. If the charge fails after all,
// the answers are dropped and the calls get the charge's error; nothing is
// overspent, the node just did the work for nothing.
func (m *Ledger) Speculate(id apikey.Identity, cost int64) bool {
	if !m.remote || id.RatePerSecond > 0 {
		return false
	}
	v, ok := m.last.Load(id.ID)
	return ok && v.(int64) >= speculateMargin*cost
}

// Refund gives back what it charged for a call that failed through no fault
// of the caller, and updates b.
func (m *Ledger) Refund(ctx context.Context, b *Bill, it Item) error {
	if it.Cost == 0 {
		return nil
	}
	if err := m.counter.Refund(ctx, b.KeyID, b.Day, it.Cost); err != nil {
		return err
	}
	b.Used -= it.Cost
	b.Charged -= it.Cost
	return m.record(b.Day, b.KeyID, []Item{it}, true)
}

// Balance returns the key's balance today without charging anything.
func (m *Ledger) Balance(ctx context.Context, id apikey.Identity) (Bill, error) {
	return m.Charge(ctx, id, nil)
}

// record journals items and adds them to the pending deltas.
func (m *Ledger) record(day string, keyID int64, items []Item, refund bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = m.recs[:0]
	for _, it := range items {
		m.seq++
		m.recs = append(m.recs, record{seq: m.seq, refund: refund, day: day, keyID: keyID, credits: it.Cost, method: it.Method})
	}
	if m.journal != nil {
		if err := m.journal.write(m.recs); err != nil {
			m.seq -= int64(len(m.recs))
			return err
		}
	}
	for _, r := range m.recs {
		m.add(r)
	}
	return nil
}

// unavailable logs a counter or journal failure and wraps it as
// ErrMeteringUnavailable, so the call is refused rather than served unbilled.
func (m *Ledger) unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		// The caller went away while the counter was asked; the counter
		// itself is fine.
		return fmt.Errorf("%w: %w", portico.ErrMeteringUnavailable, ctx.Err())
	}
	m.log.Error("metering unavailable: calls are refused", "err", err)
	return fmt.Errorf("%w: %w", portico.ErrMeteringUnavailable, err)
}

// Flush writes pending usage to the store now.
func (m *Ledger) Flush(ctx context.Context) error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	if len(m.deltas) == 0 {
		m.mu.Unlock()
		return nil
	}
	rows, seq := m.rows(), m.seq
	pending := m.deltas
	m.deltas = map[usageKey]delta{}
	var old []string
	if m.journal != nil {
		var err error
		if old, err = m.journal.rotate(seq + 1); err != nil {
			m.deltas = pending
			m.mu.Unlock()
			return err
		}
	}
	m.mu.Unlock()

	if err := m.store.AddUsage(ctx, rows, m.instance, seq); err != nil {
		// Put the deltas back; their journal lines stay on disk until a
		// later flush covers them.
		m.mu.Lock()
		for k, d := range pending {
			cur := m.deltas[k]
			m.deltas[k] = delta{cur.calls + d.calls, cur.credits + d.credits}
		}
		m.mu.Unlock()
		m.covered = append(m.covered, old...)
		return err
	}
	if m.journal != nil {
		if err := m.journal.remove(append(m.covered, old...)); err != nil {
			return err
		}
		m.covered = nil
	}
	return nil
}

// Run flushes every FlushInterval until Close.
func (m *Ledger) Run() {
	if !m.running.CompareAndSwap(false, true) {
		return
	}
	defer close(m.done)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := m.Flush(ctx); err != nil {
				m.log.Error("metering: flush failed; will retry", "err", err)
			}
			cancel()
		}
	}
}

// Close stops Run (if it runs), flushes what is pending and closes the
// journal.
func (m *Ledger) Close() error {
	select {
	case <-m.stop:
		return nil
	default:
	}
	close(m.stop)
	if !m.running.CompareAndSwap(false, true) {
		<-m.done // Run is running: wait for it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.Flush(ctx)
	if m.journal != nil {
		err = errors.Join(err, m.journal.close())
	}
	return err
}
