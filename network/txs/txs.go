// Package txs follows the signed transactions a network sends for its
// clients until they land: it waits for one to be in a block of the
// served chain (eth_sendRawTransactionSync), reading the chain view, so
// that a receipt in a block a reorg dropped is no confirmation; and it
// keeps the transactions it was given, per key and bounded, and sends one
// again when no node holds it any more (a node that took it and dropped
// it leaves a nonce gap nothing else closes).
//
// What a transaction's receipt looks like and how a node is asked about
// it are the family's (portico.TxRules); this package only follows the
// answers on the chain view.
package txs

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/upstream"
)

// Defaults of Settings.
const (
	// DefaultWait is how long a sync send waits when its client names no
	// timeout.
	DefaultWait = 20 * time.Second
	// DefaultMaxWait bounds the wait a client may ask for: below the
	// gateway's default write timeout (60 s), so the answer is still
	// written.
	DefaultMaxWait = 50 * time.Second
)

// Upstream is what the tracker needs of a network's nodes;
// *upstream.Pool is one.
type Upstream interface {
	// Do sends a call to a node and appends its result to dst.
	Do(ctx context.Context, req upstream.Request, dst []byte) (jsontext.Value, error)
	// View is the served chain.
	View() *chainview.View
	// Poke has head tracking catch up with the nodes now.
	Poke()
}

// Settings are a network's settings for the transactions it follows.
type Settings struct {
	// Wait is a sync send's wait when its client names none, MaxWait the
	// longest a client may ask for; 0 takes DefaultWait and
	// DefaultMaxWait.
	Wait, MaxWait time.Duration
	// ResendAfter is how long a kept transaction goes unchecked before it
	// is sent again if no node holds it; 0 takes DefaultResendAfter.
	ResendAfter time.Duration
}

// Config is what a Tracker needs. Upstream is required; a zero Rules
// (a family whose sends are not followed) follows nothing.
type Config struct {
	Network  string
	Upstream Upstream
	Rules    portico.TxRules
	Settings Settings
	Logger   *slog.Logger
	// Memory is the budget the kept transactions' bytes are taken from
	// (the process's, or one under it); nil bounds them only per key.
	Memory *membudget.Budget
	// Metrics records sent, landed, resent and dropped transactions; nil
	// records nothing.
	Metrics *metrics.Metrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Tracker follows one network's sent transactions.
type Tracker struct {
	network string
	up      Upstream
	rules   portico.TxRules
	set     Settings
	log     *slog.Logger
	metrics *metrics.Metrics
	now     func() time.Time

	kept      keptTxs
	counts    counters
	start     sync.Once // the resend loop, at the first kept transaction
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New returns a tracker; it starts nothing.
func New(cfg Config) *Tracker {
	t := &Tracker{network: cfg.Network, up: cfg.Upstream, rules: cfg.Rules, set: cfg.Settings, log: cfg.Logger, metrics: cfg.Metrics,
		now: cfg.Now, done: make(chan struct{})}
	t.kept.mem = cfg.Memory
	if t.set.ResendAfter <= 0 {
		t.set.ResendAfter = DefaultResendAfter
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.set.Wait <= 0 {
		t.set.Wait = DefaultWait
	}
	if t.set.MaxWait <= 0 {
		t.set.MaxWait = DefaultMaxWait
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	return t
}

// Follows reports whether the tracker can follow the family's
// transactions.
func (t *Tracker) Follows() bool { return t.rules.Landed != nil && t.rules.Where != nil }

// WaitFor is how long a sync send that asked for asked waits: the
// default for 0, else asked up to MaxWait.
func (t *Tracker) WaitFor(asked time.Duration) time.Duration {
	if asked <= 0 {
		return min(t.set.Wait, t.set.MaxWait)
	}
	return min(asked, t.set.MaxWait)
}

// Wait waits up to wait for the transaction with hash to be in a block
// of the served chain, and returns the answer that says so (the
// receipt). A receipt in a block the chain view does not hold (a branch
// a reorg dropped, or one a node has and the view not yet) is no answer:
// the transaction is asked about again at every change of the served
// chain. When the wait runs out the error is a *portico.TxTimeoutError;
// when ctx ends first, ctx's error.
func (t *Tracker) Wait(ctx context.Context, hash string, wait time.Duration) (jsontext.Value, error) {
	view := t.up.View()
	kick := make(chan struct{}, 1)
	stop := view.OnSwitch(func(chainview.Switch) {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if res, ok := t.landed(ctx, hash); ok {
			return res, nil
		}
		select {
		case <-kick:
		case <-timer.C:
			return nil, &portico.TxTimeoutError{Hash: hash, Waited: wait}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// landed asks a node where the transaction is, and returns the answer
// when that is a block of the served chain. A block the view has not
// reached yet has head tracking catch up now.
func (t *Tracker) landed(ctx context.Context, hash string) (jsontext.Value, bool) {
	method, params := t.rules.Landed(hash)
	res, err := t.up.Do(ctx, upstream.Request{Method: method, Params: params}, nil)
	if err != nil {
		return nil, false
	}
	at, ok := t.rules.Where(res)
	if !ok {
		return nil, false
	}
	view := t.up.View()
	head, tracked := view.Head()
	switch {
	case !tracked || at.Hash == "":
		// No chain to check it against, or a family whose landed
		// transactions do not reorg (the slot chain's confirmed).
		return res, true
	case view.OnChain(at.Hash):
		return res, true
	case at.Number > head.Number:
		t.up.Poke()
	}
	return nil, false
}

// Counts are what happened to the transactions a tracker followed since
// it started, for the admin API and the dashboard.
type Counts struct {
	// Kept is how many are kept now.
	Kept int `json:"kept"`
	// Sent, Landed, Resent, Expired, Refused and Unkept count events as
	// portico_transactions_total does.
	Sent    uint64 `json:"sent"`
	Landed  uint64 `json:"landed"`
	Resent  uint64 `json:"resent"`
	Expired uint64 `json:"expired"`
	Refused uint64 `json:"refused"`
	Unkept  uint64 `json:"unkept"`
	// InclusionMeanNs is the mean time from a landed transaction's first
	// send to Portico finding it on the served chain.
	InclusionMeanNs int64 `json:"inclusionMeanNs"`
}

// counters are a tracker's Counts as they grow.
type counters struct {
	sent, landed, resent, expired, refused, unkept atomic.Uint64
	inclusion                                      atomic.Int64 // ns, summed over landed
}

// event counts one event (a metrics.Tx* name) and records it.
func (t *Tracker) event(name string) {
	t.metrics.TxEvent(t.network, name)
	switch name {
	case metrics.TxSent:
		t.counts.sent.Add(1)
	case metrics.TxResent:
		t.counts.resent.Add(1)
	case metrics.TxExpired:
		t.counts.expired.Add(1)
	case metrics.TxRefused:
		t.counts.refused.Add(1)
	case metrics.TxNotKept:
		t.counts.unkept.Add(1)
	}
}

// landedAfter counts and records a kept transaction found landed.
func (t *Tracker) landedAfter(took time.Duration) {
	t.metrics.TxLanded(t.network, took)
	t.counts.landed.Add(1)
	t.counts.inclusion.Add(int64(took))
}

// Counts returns what happened to the tracker's transactions so far.
func (t *Tracker) Counts() Counts {
	c := Counts{Kept: t.kept.len(), Sent: t.counts.sent.Load(), Landed: t.counts.landed.Load(), Resent: t.counts.resent.Load(),
		Expired: t.counts.expired.Load(), Refused: t.counts.refused.Load(), Unkept: t.counts.unkept.Load()}
	if c.Landed > 0 {
		c.InclusionMeanNs = t.counts.inclusion.Load() / int64(c.Landed)
	}
	return c
}
