package upstream

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// Member is one node of a pool with the name it is logged under.
type Member struct {
	// Name identifies the node in logs and errors: a configured label or
	// the redacted URL, never the raw URL.
	Name string
	Node Node
}

// PoolConfig configures a Pool.
type PoolConfig struct {
	// Network names the network, for errors and logs.
	Network string
	// Members are the nodes in order of preference: the first healthy one
	// gets each call, the next ones take over when it fails.
	Members []Member
	// Timeout bounds a whole call, failovers included; 0 means 20s.
	Timeout time.Duration
	// AttemptTimeout bounds the call to one node, so a hanging node leaves
	// time for the next; 0 means 10s.
	AttemptTimeout time.Duration
	// Logger receives failover events; nil discards them.
	Logger *slog.Logger
	// Now is the clock for health backoff (not for timeouts); nil means
	// time.Now.
	Now func() time.Time
}

// Pool sends each call to the first healthy node of a network and fails
// over to the next on a transport failure (refused, reset, timeout, 5xx):
// any error that is not a *jsonrpc.Error. A JSON-RPC error from a node is an
// answer, not a failure: it is returned as is, with no failover.
//
// A node that fails is benched for a backoff that doubles with each
// consecutive failure (1s up to 30s); benched nodes are tried only when no
// other node is left, so a network with one node never refuses a call
// because of its past.
type Pool struct {
	network string
	members []*member
	timeout time.Duration
	attempt time.Duration
	log     *slog.Logger
	now     func() time.Time
}

type member struct {
	Member
	mu       sync.Mutex
	failures int
	benched  time.Time // zero when healthy
}

// NewPool builds a pool. It starts no goroutines.
func NewPool(cfg PoolConfig) *Pool {
	p := &Pool{
		network: cfg.Network,
		timeout: cfg.Timeout,
		attempt: cfg.AttemptTimeout,
		log:     cfg.Logger,
		now:     cfg.Now,
	}
	if p.timeout <= 0 {
		p.timeout = 20 * time.Second
	}
	if p.attempt <= 0 {
		p.attempt = 10 * time.Second
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	for _, m := range cfg.Members {
		p.members = append(p.members, &member{Member: m})
	}
	return p
}

// Len returns the number of nodes.
func (p *Pool) Len() int { return len(p.members) }

// Call sends a call to the pool's nodes until one answers, and appends the
// result to dst (see Node). Errors other than a node's JSON-RPC error are
// *portico.UpstreamError.
func (p *Pool) Call(caller context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	if len(p.members) == 0 {
		return nil, &portico.UpstreamError{Network: p.network, Err: portico.ErrNoUpstream}
	}
	// One deadline per attempt: the sooner of the call's and the node's.
	deadline := time.Now().Add(p.timeout)
	var last error
	var lastName string
	for _, m := range p.order() {
		if caller.Err() != nil || !time.Now().Before(deadline) {
			break
		}
		actx, acancel := context.WithDeadline(caller, minTime(deadline, time.Now().Add(p.attempt)))
		res, err := m.Node.Call(actx, method, params, dst)
		var rpcErr *jsonrpc.Error
		if err == nil || errors.As(err, &rpcErr) {
			acancel()
			m.ok()
			return res, err
		}
		err = classify(actx, err)
		acancel()
		if caller.Err() != nil {
			// The caller gave up (a client went away): not the node's
			// fault, and nobody is waiting for failover.
			return nil, caller.Err()
		}
		m.fail(p.now())
		p.log.Warn("upstream failed", "network", p.network, "upstream", m.Name, "method", method, "err", err)
		last, lastName = err, m.Name
	}
	if caller.Err() != nil {
		return nil, caller.Err()
	}
	if last == nil {
		last = &failure{kind: portico.ErrUpstreamTimeout, cause: context.DeadlineExceeded}
	}
	return nil, &portico.UpstreamError{Network: p.network, Upstream: lastName, Err: last}
}

// order lists healthy nodes first, in configured order, then benched ones by
// how soon their bench ends.
func (p *Pool) order() []*member {
	now := p.now()
	healthy := make([]*member, 0, len(p.members))
	var benched []*member
	for _, m := range p.members {
		if m.healthy(now) {
			healthy = append(healthy, m)
		} else {
			benched = append(benched, m)
		}
	}
	for i := 1; i < len(benched); i++ {
		for j := i; j > 0 && benched[j].until().Before(benched[j-1].until()); j-- {
			benched[j], benched[j-1] = benched[j-1], benched[j]
		}
	}
	return append(healthy, benched...)
}

func (m *member) healthy(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.benched.IsZero() || !now.Before(m.benched)
}

func (m *member) until() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.benched
}

func (m *member) ok() {
	m.mu.Lock()
	m.failures = 0
	m.benched = time.Time{}
	m.mu.Unlock()
}

func (m *member) fail(now time.Time) {
	m.mu.Lock()
	m.failures++
	backoff := time.Second << min(m.failures-1, 5)
	m.benched = now.Add(min(backoff, 30*time.Second))
	m.mu.Unlock()
}

// Close closes every node.
func (p *Pool) Close() error {
	var errs []error
	for _, m := range p.members {
		errs = append(errs, m.Node.Close())
	}
	return errors.Join(errs...)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
