package upstream

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/chainview"
)

// PoolConfig configures a Pool.
type PoolConfig struct {
	// Network names the network, for errors and logs.
	Network string
	// Members are the nodes in order of preference: among the nodes that
	// can serve a call, the first gets it.
	Members []Member
	// Timeout bounds a whole call, failovers and hedges included; 0 means
	// 20s.
	Timeout time.Duration
	// AttemptTimeout bounds the call to one node, so a hanging node leaves
	// time for the next; 0 means 10s.
	AttemptTimeout time.Duration
	// Chain are the family's head-tracking hooks; with no Heads hook the
	// pool tracks nothing and routes by health alone.
	Chain portico.Chain
	// ChainID is the chain the network's nodes must be on (what
	// Chain.Identity returns); empty means the one most nodes report.
	ChainID string
	// PollInterval is how often heads are read; 0 means the family's
	// default.
	PollInterval time.Duration
	// MaxLag is how far behind the best head a node may be and still get
	// calls about the newest blocks; 0 means the family's default, and
	// when that is 0 too no node counts as lagging.
	MaxLag uint64
	// ViewDepth is how many headers the network's chain view keeps (back
	// to the finalized block, at most this many); 0 means 256.
	ViewDepth int
	// Hedge configures hedged reads.
	Hedge Hedge
	// Logger receives failover, head and chain events; nil discards them.
	Logger *slog.Logger
	// OnAttempt, when set, is told of every attempt at a node that ended
	// on its own: how long the node took and whether it failed (an
	// attempt cancelled because another node answered first is not
	// reported). It runs on the attempt's goroutine and must be quick.
	OnAttempt func(node string, took time.Duration, failed bool)
	// Tracer, when set, starts a span per attempt, a child of the span in
	// the call's context, and HTTP nodes get the trace context in the
	// traceparent header.
	Tracer trace.Tracer
	// Now is the clock of health and suspicion (not of timeouts); nil means
	// time.Now.
	Now func() time.Time
}

// Hedge configures hedged reads: a read that has no answer after a delay
// is also sent to the next node, and the first good answer wins. The delay
// is the first node's observed p95 latency, within [MinDelay, MaxDelay].
type Hedge struct {
	// Disabled turns hedging off.
	Disabled bool
	// MinDelay and MaxDelay bound the delay; 0 means 20ms and 500ms.
	MinDelay, MaxDelay time.Duration
}

// Request is one call for a pool's nodes.
type Request struct {
	Method string
	Params jsontext.Value
	// Write marks a call that changes state: it is never hedged, and it
	// goes to another node only when the first surely did not get it.
	Write bool
	// Block is the block the call is about, after any tag was pinned: a
	// node that lags gets it only when it has the block.
	Block portico.Block
	// Repin, for a call whose tag was pinned to Block, pins it to another
	// block: when the call must go to a node that does not have Block (the
	// node that had it failed), it is sent about that node's newest block
	// instead of a block the node would answer null for.
	Repin func(n uint64) jsontext.Value
	// Repinned, when not nil, is set to whether the answer is about
	// another block than Block: an answer the cache must not keep as
	// Block's.
	Repinned *bool
	// Served, when not nil, is set to the name of the node whose answer
	// is returned, for logs and traces.
	Served *string
	// MaxResult bounds the call's result in bytes; 0 means the node's
	// own Options.MaxResponseBytes. A larger answer fails the call with a
	// *portico.LimitError (LimitResult) while it is read.
	MaxResult int64
	// Budget, when set, is charged for the node's answer while it is read
	// (see Limits); a Take that fails fails the call with a
	// *portico.LimitError (LimitMemory). Each attempt gives back what it
	// took when it ends: the one whose answer Do returns before Do
	// returns, a hedge that lost when it stops reading.
	Budget MemoryBudget
	// Check, when set, judges each node's result before it is taken (see
	// CheckError): an answer it refuses is the node's fault.
	Check func(node string, res jsontext.Value) error
}

// Pool sends each call to the best node of a network for that call, hedges
// reads that take too long, and fails over on transport failures (refused,
// reset, timeout, 5xx): any error that is not a *jsonrpc.Error. A JSON-RPC
// error from a node is an answer, not a failure: it is returned as is.
//
// Which node is best: nodes on the wrong chain never get calls; then come
// nodes that are neither benched (they failed) nor suspect (a hedge had to
// overtake them) nor lagging (more than MaxLag behind the best head) and
// have the call's block, in configured order; then suspect nodes that are
// current; then lagging nodes that have the call's block, least behind
// first; then the other nodes that lag or lack the block, least behind
// first; then benched nodes by how soon their bench ends, so a network
// with one node never refuses a call because of its past.
type Pool struct {
	network string
	members []*member
	timeout time.Duration
	attempt time.Duration
	chain   portico.Chain
	chainID string
	poll    time.Duration
	maxLag  uint64
	hedge   Hedge
	log     *slog.Logger
	now     func() time.Time
	observe func(node string, took time.Duration, failed bool)
	tracer  trace.Tracer

	view    *chainview.View // the served chain, by hash
	kick    chan struct{}   // a node's heads changed: follow now
	leader  *member         // the node whose head the view follows
	leading sync.Mutex      // guards leader; held by follow alone

	mu           sync.Mutex
	heads        portico.Heads // the network's: the best of its nodes
	headsAt      time.Time
	onHeads      []headListener
	nextListener int
	cancel       context.CancelFunc
	done         chan struct{}
	closeOnce    sync.Once
}

// NewPool builds a pool. It starts nothing: Start begins head tracking.
func NewPool(cfg PoolConfig) *Pool {
	p := &Pool{
		network: cfg.Network, timeout: cfg.Timeout, attempt: cfg.AttemptTimeout, chain: cfg.Chain,
		chainID: cfg.ChainID, poll: cfg.PollInterval, maxLag: cfg.MaxLag, hedge: cfg.Hedge,
		log: cfg.Logger, now: cfg.Now, observe: cfg.OnAttempt, tracer: cfg.Tracer,
	}
	depth := cfg.ViewDepth
	if depth <= 0 {
		depth = 256
	}
	p.view = chainview.New(depth)
	p.kick = make(chan struct{}, 1)
	if p.timeout <= 0 {
		p.timeout = 20 * time.Second
	}
	if p.attempt <= 0 {
		p.attempt = 10 * time.Second
	}
	if p.poll <= 0 {
		p.poll = max(p.chain.PollInterval, 100*time.Millisecond)
		if p.chain.PollInterval == 0 {
			p.poll = 2 * time.Second
		}
	}
	if p.maxLag == 0 {
		p.maxLag = p.chain.MaxLag
	}
	if p.hedge.MinDelay <= 0 {
		p.hedge.MinDelay = 20 * time.Millisecond
	}
	if p.hedge.MaxDelay <= 0 {
		p.hedge.MaxDelay = 500 * time.Millisecond
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.tracer == nil {
		p.tracer = noop.NewTracerProvider().Tracer("")
	}
	for i, m := range cfg.Members {
		p.members = append(p.members, &member{Member: m, index: i})
	}
	return p
}

// Len returns the number of nodes.
func (p *Pool) Len() int { return len(p.members) }

// Call sends a read about no block in particular; see Do.
func (p *Pool) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	return p.Do(ctx, Request{Method: method, Params: params}, dst)
}

// attempt is the outcome of one node's try at a call.
type attempt struct {
	m        *member
	res      jsontext.Value
	err      error
	start    time.Time
	took     time.Duration
	repinned bool
	faults   uint64 // the node's failures when the attempt was sent
}

// Do sends a call to the pool's nodes until one answers, and appends the
// result to dst (see Node). Errors other than a node's JSON-RPC error are
// *portico.UpstreamError, or the *portico.LimitError of an answer that
// passed req's bounds: that is returned as is, at once, and neither fails
// over (another node would send the same answer) nor counts against the
// node.
//
// When the returned slice is not on dst's array (a hedge answered first)
// or Do returns early because the caller left, an attempt still running
// may yet write past dst's length: dst's array must then not be reused.
func (p *Pool) Do(caller context.Context, req Request, dst []byte) (jsontext.Value, error) {
	if len(p.members) == 0 {
		return nil, &portico.UpstreamError{Network: p.network, Err: portico.ErrNoUpstream}
	}
	order := p.order(req)
	deadline := time.Now().Add(p.timeout)
	ctx, cancel := context.WithDeadline(caller, deadline)
	defer cancel() // ends the attempts that lost
	results := make(chan attempt, len(order))
	next, pending := 0, 0
	var launched time.Time // when the last attempt was sent, on p.now
	launch := func() {
		m := order[next]
		launched = p.now()
		// Only the first attempt appends to dst's spare capacity: a later
		// one gets a copy of its own, so that two attempts never write the
		// same bytes and an attempt that lost cannot touch the answer.
		buf := dst
		if next > 0 {
			buf = dst[:len(dst):len(dst)]
		}
		next++
		pending++
		params, repinned := req.Params, false
		if req.Repin != nil && req.Block.Kind == portico.BlockNumber {
			if h, at, _ := m.chainState(); !at.IsZero() && h.Latest < req.Block.Number && h.Latest > 0 {
				params, repinned = req.Repin(h.Latest), true
			}
		}
		faults := m.faultCount()
		go func() {
			actx, acancel := context.WithDeadline(ctx, minTime(deadline, time.Now().Add(p.attempt)))
			defer acancel()
			actx, span := p.tracer.Start(actx, "upstream "+req.Method, trace.WithSpanKind(trace.SpanKindClient))
			start := time.Now()
			res, err := m.Node.Send(actx, req.Method, params, Limits{MaxResult: req.MaxResult, Budget: req.Budget}, buf)
			if err != nil && !isAnswer(err) && !isLimit(err) {
				err = classify(actx, err)
			}
			if err == nil && req.Check != nil {
				err = check(req.Check, m.Name, res)
			}
			took := time.Since(start)
			failed := err != nil && !isAnswer(err) && !isLimit(err)
			lost := failed && errors.Is(ctx.Err(), context.Canceled) // another node answered, or the caller left
			if span.IsRecording() {
				span.SetAttributes(attribute.String("portico.network", p.network), attribute.String("portico.node", m.Name),
					attribute.String("rpc.method", req.Method), attribute.Bool("portico.repinned", repinned))
				switch {
				case lost:
					span.SetAttributes(attribute.Bool("portico.cancelled", true))
				case failed:
					span.SetStatus(codes.Error, err.Error())
				case isLimit(err):
					span.SetAttributes(attribute.String("portico.limit", err.Error()))
				case err != nil:
					span.SetAttributes(attribute.String("portico.node_error", err.Error()))
				}
			}
			span.End()
			if p.observe != nil && !lost {
				p.observe(m.Name, took, failed)
			}
			results <- attempt{m: m, res: res, err: err, start: start, took: took, repinned: repinned, faults: faults}
		}()
	}
	launch()
	var hedge <-chan time.Time
	if !req.Write && !p.hedge.Disabled && len(order) > 1 {
		t := time.NewTimer(order[0].hedgeDelay(p.hedge.MinDelay, p.hedge.MaxDelay))
		defer t.Stop()
		hedge = t.C
	}
	var (
		last     error
		lastName string
		slow     *member   // the node a hedge was sent past in this call
		slowSent time.Time // when the attempt at it was sent
	)
	for pending > 0 {
		select {
		case a := <-results:
			pending--
			if isLimit(a.err) {
				// Ours, not the node's: its health is untouched.
				return nil, a.err
			}
			if a.err == nil || isAnswer(a.err) {
				if slow != nil && a.m != slow {
					slow.overtaken(slowSent, p.now())
				}
				a.m.ok(a.took, a.m != slow, a.faults)
				if req.Repinned != nil {
					*req.Repinned = a.repinned
				}
				if req.Served != nil {
					*req.Served = a.m.Name
				}
				return a.res, a.err
			}
			if caller.Err() != nil {
				// The caller gave up (a client went away): not the node's
				// fault, and nobody is waiting for failover.
				return nil, caller.Err()
			}
			if !missing(a.err) {
				a.m.fail(p.now(), true)
			}
			p.log.Warn("upstream failed", "network", p.network, "upstream", a.m.Name, "method", req.Method, "err", a.err)
			last, lastName = a.err, a.m.Name
			if req.Write && !undelivered(a.err) {
				// The node may have the transaction: sending it again
				// elsewhere is not ours to decide.
				return nil, &portico.UpstreamError{Network: p.network, Upstream: a.m.Name, Err: a.err}
			}
			if next < len(order) && time.Now().Before(deadline) {
				launch()
			}
		case <-hedge:
			hedge = nil
			if next < len(order) && pending > 0 {
				// The node is suspect only if the hedge answers first: a
				// late answer that still wins was a pause of ours as
				// likely as of the node's.
				slow, slowSent = order[next-1], launched
				slow.hedgedPast()
				p.log.Debug("hedging", "network", p.network, "slow", order[next-1].Name, "hedge", order[next].Name, "method", req.Method)
				launch()
			}
		case <-caller.Done():
			return nil, caller.Err()
		}
	}
	if caller.Err() != nil {
		return nil, caller.Err()
	}
	if last == nil {
		last = &failure{kind: portico.ErrUpstreamTimeout, cause: context.DeadlineExceeded}
	}
	return nil, &portico.UpstreamError{Network: p.network, Upstream: lastName, Err: last}
}

// isAnswer reports whether err is a node's JSON-RPC error: an answer.
func isAnswer(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}

// order ranks the nodes for req (see Pool).
func (p *Pool) order(req Request) []*member {
	now := p.now()
	best := p.Heads().Latest
	type ranked struct {
		m     *member
		class int
		lag   uint64
		until time.Time
	}
	rs := make([]ranked, 0, len(p.members))
	for _, m := range p.members {
		benched, suspect, wrong := m.state(now)
		if wrong {
			continue // never: its answers are about another chain
		}
		h, at, _ := m.chainState()
		var lag uint64
		if !at.IsZero() && best > h.Latest {
			lag = best - h.Latest
		}
		lagging := beyondLag(lag, p.maxLag)
		hasBlock := req.Block.Kind != portico.BlockNumber || at.IsZero() || h.Latest >= req.Block.Number
		r := ranked{m: m, lag: lag}
		switch {
		case benched:
			r.class, r.until = 4, m.benchEnd()
		case !lagging && hasBlock && !suspect:
			r.class = 0
		case !lagging && hasBlock:
			// Slow but current: better than a node that lacks the block.
			r.class = 1
		case hasBlock && req.Block.Kind == portico.BlockNumber:
			r.class = 2
		default:
			r.class = 3
		}
		rs = append(rs, r)
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.class != b.class {
			return a.class < b.class
		}
		switch a.class {
		case 2, 3:
			return a.lag < b.lag
		case 4:
			return a.until.Before(b.until)
		}
		return false // configured order
	})
	out := make([]*member, len(rs))
	for i, r := range rs {
		out[i] = r.m
	}
	return out
}

func (m *member) benchEnd() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.benched
}

// Nodes returns the state of every node, in configured order.
func (p *Pool) Nodes() []NodeState {
	now := p.now()
	best := p.Heads().Latest
	out := make([]NodeState, len(p.members))
	for i, m := range p.members {
		out[i] = m.snapshot(now, best, p.maxLag)
	}
	return out
}

// Close stops head tracking and closes every node.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		cancel, done := p.cancel, p.done
		p.mu.Unlock()
		if cancel != nil {
			cancel()
			<-done
		}
	})
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
