// Package network serves one network's calls and subscriptions once the
// gateway has checked and charged them. It is the call path: answers from
// the tracked heads, tags pinned to the chain view's blocks, the
// finality-aware cache (and its shared Redis layer), coalescing of
// identical reads in flight, the node pool; log queries bounded and split
// (network/logsplit) and log filters kept by the network and read as log
// queries; on a network with verify: on or strict, the family's verifier
// (network/verify, built by the family) answering the methods it checks,
// its node calls charged to the calling key as they are made. It holds
// the network's subscription topics (network/topics) and charges their
// notifications. The gateway keeps the transports, the key and limit
// checks and the metering of calls.
//
// Everything here reads the one chain view: tag resolution pins a tag to
// the view's head, the cache keeps an answer about an unfinal block only
// while that block is on the served chain, and heads subscriptions are
// sent from the view's switches, so that a reorg reaches every client as
// a node would send it.
package network

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/topics"
	"github.com/porticohq/portico/network/txs"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// Upstream answers a network's calls and tells its heads; *upstream.Pool
// is one.
type Upstream interface {
	// Do sends a call to a node and appends its result to dst.
	Do(ctx context.Context, req upstream.Request, dst []byte) (jsontext.Value, error)
	// HeadsFresh returns the network's tracked heads, and whether they
	// are fresh enough to answer from.
	HeadsFresh() (portico.Heads, bool)
	// OnHeads registers a listener of new heads.
	OnHeads(func(portico.Heads)) (stop func())
	// View is the network's chain view: the served chain by hash, whose
	// switches (reorgs) the cache and subscriptions follow.
	View() *chainview.View
	// Subscribe opens a subscription on a node that can hold one.
	Subscribe(ctx context.Context, req upstream.SubRequest, notify func(method string, result jsontext.Value), ended func(error)) (cancel func(), node string, err error)
	// CanSubscribe reports whether any node can hold subscriptions.
	CanSubscribe() bool
	// Observe tells head tracking of a head a node sent on its own (a
	// heads notification), so that the chain view follows it at once;
	// Poke has it catch up with the nodes now rather than at the next
	// poll.
	Observe(node string, h portico.Header)
	Poke()
	// Header reads the header of the block with hash (number when known)
	// from the nodes: a resumed subscription's walk past the view.
	Header(ctx context.Context, number uint64, hash string) (portico.Header, error)
}

var _ Upstream = (*upstream.Pool)(nil)

// Meter is metering's one interface to the bounds on a key's credits
// (metering.Meter), under the name the network's callers already use: the
// network charges through it for notifications and a verification's node
// calls, and gives back what was paid for and not used.
type Meter = metering.Meter

// Config is what a Network needs. Name and Upstream are required.
type Config struct {
	// Name identifies the network in logs, metrics and cache keys.
	Name string
	// Upstream answers the calls and holds the upstream subscriptions.
	Upstream Upstream
	// Tags are the family's block tags and the heads they name (the
	// family table's Chain.Tags): a call about a tag is pinned to the
	// block the tag names on the served chain.
	Tags map[string]portico.Head
	// KeyForm is how the family's params are made canonical for cache and
	// coalescing keys (the family table's KeyForm).
	KeyForm portico.KeyForm
	// Subs are the family's subscription rules.
	Subs portico.Subscriptions
	// Cache holds answers the family's rules say may be cached; it may be
	// shared by many networks. nil caches nothing.
	Cache *Cache
	// NoCoalesce sends every read to a node on its own, even when an
	// identical one is on its way.
	NoCoalesce bool
	// Meter charges the keys of clients for their notifications; nil
	// charges nothing.
	Meter Meter
	// Logger receives the network's events; nil discards them.
	Logger *slog.Logger
	// Metrics records coalesced reads, subscriptions and notifications;
	// nil records nothing.
	Metrics *metrics.Metrics
	// Logs bounds, splits and prices the network's log queries
	// (docs/logs.md); the zero value bounds nothing and never splits.
	Logs portico.LogSettings

	// Txs are the family's rules for following sent transactions (the
	// table's Txs) and TxSettings the network's settings for them.
	Txs        portico.TxRules
	TxSettings txs.Settings
	// TxMemory is the budget the transactions kept for resending are
	// counted in (the process's); nil bounds them only per key.
	TxMemory *membudget.Budget

	// Verify, when its mode is on or strict, checks answers against
	// trusted headers with the family's verifier (docs/verify.md). The
	// Upstream must then be a VerifyUpstream.
	Verify VerifyConfig
}

// Network is one served network.
type Network struct {
	name    string
	up      Upstream
	tags    map[string]portico.Head
	keyForm portico.KeyForm
	cache   *Cache
	flights *flights // nil when coalescing is off
	hub     *topics.Hub
	txs     *txs.Tracker
	log     *slog.Logger
	metrics *metrics.Metrics
	stops   []func()
	// logs are the settings of log queries; nodeRange the widest range
	// sent to a node, lowered when a node says it takes less.
	logs      portico.LogSettings
	nodeRange atomic.Uint64

	// verifier is nil when the network does not verify; verifyMode is
	// then off.
	verifier   verify.Verifier
	verifyMode VerifyMode

	// meter charges keys for what they use besides their calls'
	// charges (notifications, a verification's node calls); nil charges
	// nothing. verifyPrice is what one node call of a verification
	// costs (VerifyConfig.CallCost).
	meter       Meter
	verifyPrice atomic.Int64

	// filters are the log filters the network keeps (filters.go).
	filters filterTable
	now     func() time.Time
}

// New builds a network; its cache follows the upstream's heads and chain
// view from now on. It starts nothing else.
func New(cfg Config) *Network {
	n := &Network{name: cfg.Name, up: cfg.Upstream, tags: cfg.Tags, keyForm: cfg.KeyForm, cache: cfg.Cache, log: cfg.Logger, metrics: cfg.Metrics,
		now: time.Now}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	n.logs = cfg.Logs
	n.meter = cfg.Meter
	n.verifyPrice.Store(int64(cfg.Verify.CallCost))
	n.nodeRange.Store(cfg.Logs.NodeRange)
	if !cfg.NoCoalesce {
		n.flights = &flights{}
	}
	if cfg.Verify.Mode != VerifyOff {
		n.verifier, n.verifyMode = newFamilyVerifier(n.name, n.up, cfg.Verify, n.nodeRange.Load, n.log, n.metrics)
		n.stops = append(n.stops, followHeads(n.verifier, n.up))
	}
	n.txs = txs.New(txs.Config{Network: n.name, Upstream: n.up, Rules: cfg.Txs, Settings: cfg.TxSettings, Logger: n.log, Memory: cfg.TxMemory, Metrics: cfg.Metrics})
	n.hub = topics.New(topics.Config{Network: n.name, Upstream: n.up, Subs: cfg.Subs,
		Accounts: notifyAccounts{acc: newAccountsRef(cfg.Meter, n)}, Logger: n.log, Metrics: n.metrics})
	if c := n.cache; c != nil {
		name := n.name
		n.stops = append(n.stops,
			n.up.OnHeads(func(h portico.Heads) { c.heads(name, h) }),
			n.up.View().OnSwitch(func(sw chainview.Switch) { c.switched(name, sw) }))
		if h, ok := n.up.HeadsFresh(); ok {
			c.heads(name, h)
		}
	}
	return n
}

// SetVerifyCallCost changes what each node call of a verification costs
// (VerifyConfig.CallCost), as a config reload that changes the network's
// default_cost does.
func (n *Network) SetVerifyCallCost(credits int) { n.verifyPrice.Store(int64(credits)) }

// Name returns the network's name.
func (n *Network) Name() string { return n.name }

// Upstream returns the network's nodes.
func (n *Network) Upstream() Upstream { return n.up }

// Close stops following the upstream; subscriptions end with their
// clients' connections.
func (n *Network) Close() {
	for _, stop := range n.stops {
		stop()
	}
	n.txs.Close()
}
