package webhook

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/porticohq/portico/store"
)

// Manager runs the workers of the webhooks whose leases this instance
// holds.
type Manager struct {
	cfg  Config
	poke chan struct{}
	out  *outbox // the workers' writes to the store

	mu      sync.Mutex
	running map[string]*running
	wg      sync.WaitGroup
}

// running is a worker that runs.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Manager; Run starts it.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Source == nil || cfg.Families == nil || cfg.Instance == "" {
		return nil, errors.New("webhook: Store, Source, Families and Instance are required")
	}
	cfg.defaults()
	return &Manager{cfg: cfg, poke: make(chan struct{}, 1), out: newOutbox(cfg.Store), running: map[string]*running{}}, nil
}

// Poke has the manager look at the store now (a webhook was made or
// changed) rather than at its next scan.
func (m *Manager) Poke() {
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// Running returns how many webhooks this instance delivers now.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.running)
}

// Run takes, renews and lets go of leases every third of LeaseFor (and
// when poked) until ctx ends; then it stops every worker and gives their
// leases back.
func (m *Manager) Run(ctx context.Context) {
	tick := time.NewTicker(m.cfg.LeaseFor / 3)
	defer tick.Stop()
	stop := make(chan struct{})
	go m.out.run(stop)
	for {
		m.scan(ctx)
		select {
		case <-ctx.Done():
			m.mu.Lock()
			for _, r := range m.running {
				r.cancel()
			}
			m.mu.Unlock()
			m.wg.Wait()
			close(stop) // after the workers, whose writes it does
			return
		case <-tick.C:
		case <-m.poke:
		}
	}
}

// leaseTake bounds the leases an instance takes at each scan, so that
// instances starting together share the webhooks.
const leaseTake = 256

// scan renews this instance's leases and takes free ones in one
// transaction, starts a worker for each webhook it holds, and stops
// those it no longer holds (lost, paused, deleted, its key revoked).
func (m *Manager) scan(ctx context.Context) {
	ids, err := m.cfg.Store.LeaseWebhooks(ctx, m.cfg.Instance, time.Now().Add(m.cfg.LeaseFor), leaseTake)
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Logger.Warn("webhook: leases", "err", err)
		}
		return
	}
	held := map[string]bool{}
	for _, id := range ids {
		held[id] = true
	}
	m.mu.Lock()
	var start []string
	for id, r := range m.running {
		if !held[id] {
			r.cancel()
		}
	}
	for _, id := range ids {
		if m.running[id] == nil {
			start = append(start, id)
		}
	}
	m.mu.Unlock()
	for _, id := range start {
		w, err := m.cfg.Store.Webhook(ctx, id)
		if err != nil {
			m.cfg.Logger.Warn("webhook: read", "webhook", id, "err", err)
			continue
		}
		m.start(ctx, w)
	}
}

// start runs a worker for w, whose lease is held.
func (m *Manager) start(ctx context.Context, w store.Webhook) {
	fam, ok := m.cfg.Families(w.Network)
	if !ok {
		// The network left the config: the webhook waits for it.
		_ = m.cfg.Store.ReleaseWebhook(ctx, w.ID, m.cfg.Instance)
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.running[w.ID] = r
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(r.done)
		k := &worker{m: m, w: w, fam: fam, wake: make(chan struct{}, 1), fromStore: true}
		err := k.run(wctx)
		m.cfg.Logger.Debug("webhook: worker stopped", "webhook", w.ID, "err", err)
		m.mu.Lock()
		delete(m.running, w.ID)
		m.mu.Unlock()
		cancel()
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		_ = m.cfg.Store.ReleaseWebhook(rctx, w.ID, m.cfg.Instance)
	}()
}
