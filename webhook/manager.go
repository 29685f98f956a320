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
	return &Manager{cfg: cfg, poke: make(chan struct{}, 1), running: map[string]*running{}}, nil
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
			return
		case <-tick.C:
		case <-m.poke:
		}
	}
}

// scan starts a worker for each active webhook whose lease it takes,
// renews the leases of those running, and stops those it lost or that
// were paused or deleted.
func (m *Manager) scan(ctx context.Context) {
	list, err := m.cfg.Store.Webhooks(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Logger.Warn("webhook: list", "err", err)
		}
		return
	}
	active := map[string]bool{}
	for _, w := range list {
		active[w.ID] = w.State == store.WebhookActive
	}
	m.mu.Lock()
	for id, r := range m.running {
		if !active[id] {
			r.cancel()
		}
	}
	m.mu.Unlock()
	until := time.Now().Add(m.cfg.LeaseFor)
	for _, w := range list {
		if w.State != store.WebhookActive {
			continue
		}
		ok, err := m.cfg.Store.LeaseWebhook(ctx, w.ID, m.cfg.Instance, until)
		if err != nil {
			m.cfg.Logger.Warn("webhook: lease", "webhook", w.ID, "err", err)
			continue
		}
		m.mu.Lock()
		r := m.running[w.ID]
		m.mu.Unlock()
		switch {
		case r != nil && !ok:
			r.cancel()
		case r == nil && ok:
			m.start(ctx, w)
		}
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
		k := &worker{m: m, w: w, fam: fam, wake: make(chan struct{}, 1)}
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
