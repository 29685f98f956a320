package upstream

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
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
	// Answers classifies the nodes' error answers; nil means
	// NewClassifier of Chain.Answers.
	Answers *Classifier
	// Broadcast says where signed transactions go; the zero value sends
	// each to every node that serves the method.
	Broadcast Broadcast
	// OnBroadcast, when not nil, is told how many nodes each broadcast
	// send went to (for metrics).
	OnBroadcast func(nodes int)
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
	// Data is what the call reads at Block: it goes only to nodes that
	// keep that (Member.Reach, and what their answers taught).
	Data portico.Data
	// TxHash, for a Write that sends a signed transaction, is its hash:
	// the send is broadcast (see Broadcast).
	TxHash string
	// TxAnswer and TxResult read and make a send's answer where it is
	// not the hash as a JSON string (portico.Params).
	TxAnswer func(res jsontext.Value) string
	TxResult func(hash string) jsontext.Value
	// Resend marks a send the network makes again of a transaction no
	// node holds any more: it is broadcast even though it was lately.
	Resend bool
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
	served  atomic.Value // string: the chain most nodes report
	poll    time.Duration
	maxLag  uint64
	hedge   Hedge
	log     *slog.Logger
	now     func() time.Time
	observe func(node string, took time.Duration, failed bool)
	tracer  trace.Tracer
	answers *Classifier
	bcast   Broadcast
	onSend  func(nodes int)
	sent    sentTxs // transactions broadcast lately

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
		answers: cfg.Answers, bcast: cfg.Broadcast, onSend: cfg.OnBroadcast,
	}
	if p.answers == nil {
		p.answers = NewClassifier(p.chain.Answers)
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
		p.members = append(p.members, &member{Member: m, index: i, reach: newReach(m.Reach)})
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
	class    int // what the answer was (answerResult, a portico.Answer, answerFailed)
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
// A node's error answer is classified once (Classifier): the client's own
// error is returned as is; a node that lacks the data, or is over its own
// rate, or says it is unhealthy, is passed over for the next node. When
// every node asked lacked the data, or none keeps it by its configured
// reach, Do returns a *portico.MissingError.
//
// When the returned slice is not on dst's array (a hedge answered first)
// or Do returns early because the caller left, an attempt still running
// may yet write past dst's length: dst's array must then not be reused.
func (p *Pool) Do(caller context.Context, req Request, dst []byte) (jsontext.Value, error) {
	if len(p.members) == 0 {
		return nil, &portico.UpstreamError{Network: p.network, Err: portico.ErrNoUpstream}
	}
	if req.Write && req.TxHash != "" && !p.bcast.First {
		return p.broadcast(caller, req, dst)
	}
	order, keptOut := p.order(req)
	if len(order) == 0 {
		if keptOut {
			return nil, portico.Answered(p.missing(req, nil))
		}
		return nil, &portico.UpstreamError{Network: p.network, Err: portico.ErrUpstreamUnavailable}
	}
	deadline := time.Now().Add(p.timeout)
	ctx, cancel := context.WithDeadline(caller, deadline)
	defer cancel() // ends the attempts that lost
	c := &poolCall{p: p, req: req, order: order, dst: dst, ctx: ctx, deadline: deadline, results: make(chan attempt, len(order))}
	c.launch(true)
	var hedge <-chan time.Time
	if !req.Write && !p.hedge.Disabled && len(order) > 1 {
		t := time.NewTimer(order[0].hedgeDelay(p.hedge.MinDelay, p.hedge.MaxDelay))
		defer t.Stop()
		hedge = t.C
	}
	for c.pending > 0 {
		select {
		case a := <-c.results:
			c.pending--
			if res, err, done := c.settle(caller, a); done {
				return res, err
			}
		case <-hedge:
			hedge = nil
			c.hedge()
		case <-caller.Done():
			return nil, caller.Err()
		}
	}
	return c.failed(caller)
}

// poolCall is one call of Do on its way through the nodes.
type poolCall struct {
	p        *Pool
	req      Request
	order    []*member
	dst      []byte
	ctx      context.Context
	deadline time.Time
	results  chan attempt

	next, pending int
	launched      time.Time // when the last attempt was sent, on p.now
	last          error     // the last node's failure
	lastName      string
	lastMissing   *jsonrpc.Error // the last node's answer that it lacks the data
	missingFrom   int            // how many nodes answered that
	lastLimited   *jsonrpc.Error // the last node's answer that it is over its rate
	slow          *member        // the node a hedge was sent past in this call
	slowSent      time.Time      // when the attempt at it was sent
}

// launch sends the call to the next node in order that has room for it
// now; with none, when wait is set, to the next node once it has room
// (its own rate bounds queue the call). It reports whether a node was
// sent the call.
func (c *poolCall) launch(wait bool) bool {
	if c.next >= len(c.order) {
		return false
	}
	pick, release := -1, func() {}
	for j := c.next; j < len(c.order); j++ {
		if rel, ok := c.order[j].reach.take(c.ctx, false); ok {
			pick, release = j, rel
			break
		}
	}
	if pick < 0 {
		if !wait {
			return false
		}
		rel, ok := c.order[c.next].reach.take(c.ctx, true)
		if !ok {
			return false
		}
		pick, release = c.next, rel
	}
	c.order[c.next], c.order[pick] = c.order[pick], c.order[c.next]
	m := c.order[c.next]
	c.launched = c.p.now()
	// Only the first attempt appends to dst's spare capacity: a later
	// one gets a copy of its own, so that two attempts never write the
	// same bytes and an attempt that lost cannot touch the answer.
	buf := c.dst
	if c.next > 0 {
		buf = c.dst[:len(c.dst):len(c.dst)]
	}
	c.next++
	c.pending++
	params, repinned := c.req.Params, false
	if c.req.Repin != nil && c.req.Block.Kind == portico.BlockNumber {
		if h, at, _ := m.chainState(); !at.IsZero() && h.Latest < c.req.Block.Number && h.Latest > 0 {
			params, repinned = c.req.Repin(h.Latest), true
		}
	}
	faults := m.faultCount()
	go func() {
		defer release()
		c.results <- c.p.try(c.ctx, c.deadline, m, c.req, params, buf, repinned, faults)
	}()
	return true
}

// try sends the call to node m and returns its attempt, classified.
func (p *Pool) try(ctx context.Context, deadline time.Time, m *member, req Request, params jsontext.Value, buf []byte, repinned bool, faults uint64) attempt {
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
	class := p.classOf(err)
	failed := class == answerFailed || class == int(portico.AnswerUnhealthy)
	lost := failed && errors.Is(ctx.Err(), context.Canceled) // another node answered, or the caller left
	if span.IsRecording() {
		span.SetAttributes(attribute.String("portico.network", p.network), attribute.String("portico.node", m.Name),
			attribute.String("rpc.method", req.Method), attribute.Bool("portico.repinned", repinned),
			attribute.String("portico.answer", answerName(class)))
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
	return attempt{m: m, res: res, err: err, class: class, start: start, took: took, repinned: repinned, faults: faults}
}

// classOf is the class of an attempt's outcome: a result, a node's
// answer by the classifier, a node over its rate (an HTTP 429), or a
// failure. This process's own bounds (a LimitError) count as a result:
// they are not the node's.
func (p *Pool) classOf(err error) int {
	var rpcErr *jsonrpc.Error
	var limited *LimitedError
	switch {
	case err == nil || isLimit(err):
		return answerResult
	case errors.As(err, &rpcErr):
		return int(p.answers.Classify(rpcErr))
	case errors.As(err, &limited):
		return int(portico.AnswerLimited)
	}
	return answerFailed
}

// settle acts on one attempt's outcome: done says Do returns res and err.
func (c *poolCall) settle(caller context.Context, a attempt) (res jsontext.Value, err error, done bool) {
	p, now := c.p, c.p.now()
	a.m.reach.count(a.class)
	if isLimit(a.err) {
		// Ours, not the node's: its health is untouched.
		return nil, a.err, true
	}
	switch a.class {
	case answerResult, int(portico.AnswerClient), int(portico.AnswerTooLarge), int(portico.AnswerKnown):
		if c.slow != nil && a.m != c.slow {
			c.slow.overtaken(c.slowSent, now)
		}
		a.m.ok(a.took, a.m != c.slow, a.faults)
		if a.class == answerResult && c.req.Data != portico.DataAny {
			a.m.reach.learnHas(targetOf(c.req), a.m.head(p), now)
		}
		if c.req.Repinned != nil {
			*c.req.Repinned = a.repinned
		}
		if c.req.Served != nil {
			*c.req.Served = a.m.Name
		}
		return a.res, a.err, true
	}
	if caller.Err() != nil {
		// The caller gave up (a client went away): not the node's
		// fault, and nobody is waiting for failover.
		return nil, caller.Err(), true
	}
	var rpcErr *jsonrpc.Error
	errors.As(a.err, &rpcErr)
	switch a.class {
	case int(portico.AnswerMissing):
		// Not a fault: the node answered, about data it does not keep.
		a.m.ok(a.took, true, a.faults)
		a.m.reach.learnMissing(targetOf(c.req), a.m.head(p), rpcErr.Code == jsonrpc.CodeMethodNotFound, now)
		c.lastMissing = rpcErr
		c.missingFrom++
	case int(portico.AnswerLimited):
		// Not a fault either: the node is left alone as it asked.
		a.m.reach.limit(now, limitedFor(a.err))
		if rpcErr != nil {
			c.lastLimited = rpcErr
		} else {
			c.last, c.lastName = a.err, a.m.Name
		}
	default:
		if !missing(a.err) {
			a.m.fail(now, true)
		}
		c.last, c.lastName = a.err, a.m.Name
	}
	// A node that lacks old data, or is over its own rate, is the fleet
	// working as configured: not a warning.
	level := slog.LevelWarn
	switch a.class {
	case int(portico.AnswerMissing):
		level = slog.LevelDebug
	case int(portico.AnswerLimited):
		level = slog.LevelInfo
	}
	p.log.Log(context.Background(), level, "upstream failed", "network", p.network, "upstream", a.m.Name, "method", c.req.Method, "answer", answerName(a.class), "err", a.err)
	if c.req.Write && a.class == answerFailed && !undelivered(a.err) {
		// The node may have the transaction: sending it again
		// elsewhere is not ours to decide.
		return nil, &portico.UpstreamError{Network: p.network, Upstream: a.m.Name, Err: a.err}, true
	}
	if time.Now().Before(c.deadline) {
		c.launch(true)
	}
	return nil, nil, false
}

// hedge sends the call to the next node too, when it has room: the
// attempt in flight is late.
func (c *poolCall) hedge() {
	if c.next >= len(c.order) || c.pending == 0 {
		return
	}
	slow, sent := c.order[c.next-1], c.launched
	if !c.launch(false) {
		return
	}
	// The node is suspect only if the hedge answers first: a late answer
	// that still wins was a pause of ours as likely as of the node's.
	c.slow, c.slowSent = slow, sent
	slow.hedgedPast()
	c.p.log.Debug("hedging", "network", c.p.network, "slow", slow.Name, "hedge", c.order[c.next-1].Name, "method", c.req.Method)
}

// failed is Do's answer when no node gave one: a node's answer that it
// lacks the data (as the node wrote it when it was the only node that
// said so, as on a network of one node; else a *portico.MissingError
// naming the data and that no node keeps it), else the last node's
// rate-limit answer, else the last failure.
func (c *poolCall) failed(caller context.Context) (jsontext.Value, error) {
	if caller.Err() != nil {
		return nil, caller.Err()
	}
	switch {
	case c.lastMissing != nil && c.missingFrom == 1:
		return nil, c.lastMissing
	case c.lastMissing != nil:
		return nil, portico.Answered(c.p.missing(c.req, c.lastMissing))
	case c.lastLimited != nil:
		return nil, c.lastLimited
	case c.last == nil:
		c.last = &failure{kind: portico.ErrUpstreamTimeout, cause: context.DeadlineExceeded}
	}
	return nil, &portico.UpstreamError{Network: c.p.network, Upstream: c.lastName, Err: c.last}
}

// missing is the error of a call about data no node keeps: node is the
// last node's answer, nil when no node keeps it by its configured reach.
func (p *Pool) missing(req Request, node *jsonrpc.Error) *portico.MissingError {
	what := "what " + req.Method + " asks for"
	switch {
	case node != nil && node.Code == jsonrpc.CodeMethodNotFound, node == nil && !p.servedAnywhere(req.Method):
		what = "a node that serves " + req.Method
	case req.Block.Kind == portico.BlockNumber && req.Data == portico.DataState:
		what = "the state of block " + strconv.FormatUint(req.Block.Number, 10)
	case req.Block.Kind == portico.BlockNumber:
		what = "block " + strconv.FormatUint(req.Block.Number, 10)
	case req.Block.Kind == portico.BlockTag && req.Data == portico.DataState:
		what = "the state of block " + req.Block.Tag
	}
	e := &portico.MissingError{Network: p.network, What: what}
	if node != nil {
		e.Code, e.Message, e.Node = node.Code, node.Message, node
	}
	return e
}

// servedAnywhere reports whether some node's configured reach serves
// method.
func (p *Pool) servedAnywhere(method string) bool {
	for _, m := range p.members {
		if m.reach.cfg.ServesMethod(method) {
			return true
		}
	}
	return false
}

// isAnswer reports whether err is a node's JSON-RPC error: an answer.
func isAnswer(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}

// Routing classes of Pool.order, best first.
const (
	rankCurrent    = iota // current, has the block, not suspect
	rankSuspect           // current but a hedge overtook it lately
	rankLagging           // lags but has the block
	rankBusy              // one of the above, at its own rate bound
	rankLacking           // lags or lacks the block
	rankBenched           // failed lately
	rankLearnedOut        // its answers said it lacks what the call reads
)

// order ranks the nodes for req (see Pool): nodes whose configured reach
// does not keep what req reads (keptOut reports one), and nodes on the
// wrong chain, are left out.
func (p *Pool) order(req Request) (_ []*member, keptOut bool) {
	now := p.now()
	best := p.Heads().Latest
	t := targetOf(req)
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
		head := h.Latest
		if at.IsZero() {
			head = best
		}
		configured, learned := m.reach.keeps(t, head, now)
		if !configured {
			keptOut = true
			continue // never: it does not keep what the call reads
		}
		var lag uint64
		if !at.IsZero() && best > h.Latest {
			lag = best - h.Latest
		}
		lagging := beyondLag(lag, p.maxLag)
		hasBlock := req.Block.Kind != portico.BlockNumber || at.IsZero() || h.Latest >= req.Block.Number
		r := ranked{m: m, lag: lag}
		switch {
		case !learned:
			r.class = rankLearnedOut
		case benched:
			r.class, r.until = rankBenched, m.benchEnd()
		case !lagging && hasBlock && !suspect:
			r.class = rankCurrent
		case !lagging && hasBlock:
			// Slow but current: better than a node that lacks the block.
			r.class = rankSuspect
		case hasBlock && req.Block.Kind == portico.BlockNumber:
			r.class = rankLagging
		default:
			r.class = rankLacking
		}
		if r.class <= rankLagging && !m.reach.room(now) {
			r.class = rankBusy
		}
		rs = append(rs, r)
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.class != b.class {
			return a.class < b.class
		}
		switch a.class {
		case rankLagging, rankLacking:
			return a.lag < b.lag
		case rankBenched:
			return a.until.Before(b.until)
		}
		return false // configured order
	})
	out := make([]*member, len(rs))
	for i, r := range rs {
		out[i] = r.m
	}
	return out, keptOut
}

// head is the node's newest block as last read, or the network's when it
// was never read.
func (m *member) head(p *Pool) uint64 {
	h, at, _ := m.chainState()
	if at.IsZero() {
		return p.Heads().Latest
	}
	return h.Latest
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
