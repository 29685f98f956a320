package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/chainview"
)

// This file is head tracking: each node's heads and chain, read through
// the family's Chain hooks every PollInterval; the network's heads (the
// best of its nodes'), which tags are resolved against; and the chain
// view, which follows the head of the node that leads by hash and finds
// reorgs by parent links. It is the one source of truth about nodes and
// the chain: routing, the cache, subscriptions and operators all read it.

// identityEvery is how many polls pass between identity checks of a node
// whose chain is known; a node that comes back after a restart may have
// been pointed elsewhere.
const identityEvery = 30

// Start reads every node's chain and heads once, so that a node on the
// wrong chain is refused before the first call and tags resolve from the
// start, then reads each node every PollInterval until Close. Each node is
// read on its own goroutine, one poll at a time: a node that is slow to
// answer, or never answers, holds up no other node's heads. Without a
// Heads hook it does nothing. ctx bounds the first round.
func (p *Pool) Start(ctx context.Context) error {
	if p.chain.Heads == nil || len(p.members) == 0 {
		return nil
	}
	var first sync.WaitGroup
	for _, m := range p.members {
		first.Go(func() { p.pollNode(ctx, m, 0, max(2*p.poll, 5*time.Second)) })
	}
	first.Wait()
	p.follow(ctx)

	run, stop := context.WithCancel(context.Background())
	polled := p.kick
	var tracking sync.WaitGroup
	for _, m := range p.members {
		tracking.Go(func() { p.pollEvery(run, m, polled) })
	}
	tracking.Go(func() {
		for {
			select {
			case <-run.Done():
				return
			case <-polled:
				p.follow(run)
			}
		}
	})
	done := make(chan struct{})
	go func() {
		tracking.Wait()
		close(done)
	}()
	p.mu.Lock()
	p.cancel, p.done = stop, done
	p.mu.Unlock()
	return nil
}

// pollTimeout bounds one poll of one node after the first round.
func (p *Pool) pollTimeout() time.Duration { return max(p.poll, time.Second) }

// pollEvery reads m every PollInterval until ctx ends, and after each
// poll asks for the network's heads to be brought up to date on polled (a
// request already pending covers this one too). A poll that outlasts the
// interval delays only m's next one.
func (p *Pool) pollEvery(ctx context.Context, m *member, polled chan<- struct{}) {
	t := time.NewTicker(p.poll)
	defer t.Stop()
	for round := 1; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.pollNode(ctx, m, round, p.pollTimeout())
		select {
		case polled <- struct{}{}:
		default:
		}
	}
}

// follow brings the network's chain and heads up to date with what its
// nodes said last. It runs on one goroutine at a time (Start's, then the
// tracking goroutine's), so listeners are told in order, one at a time.
func (p *Pool) follow(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, p.pollTimeout())
	defer cancel()
	p.checkChains()
	p.updateHeads(ctx)
}

// pollNode reads one node's chain (at first and every identityEvery
// rounds) and heads, within timeout. A node that does not answer, or not
// in time, is benched like one that fails a call, and its heads age; only
// the end of ctx (Close, or the caller of Start leaving) is no failure.
func (p *Pool) pollNode(ctx context.Context, m *member, round int, timeout time.Duration) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	failed := func(err error) {
		if !isAnswer(err) && ctx.Err() == nil {
			m.fail(p.now(), false)
		}
	}
	m.mu.Lock()
	needID := p.chain.Identity != nil && (m.identity == "" || round%identityEvery == 0)
	m.mu.Unlock()
	if needID {
		id, err := p.chain.Identity(pctx, m.Node)
		if err != nil {
			failed(err)
			return
		}
		m.mu.Lock()
		m.identity = id
		m.mu.Unlock()
	}
	h, err := p.chain.Heads(pctx, m.Node)
	if err != nil {
		failed(err)
		return
	}
	m.mu.Lock()
	m.heads, m.headsAt = h, p.now()
	// A node whose probes had gone unanswered and answer again is back:
	// its bench was that outage, which is over, and so was its slowness
	// (as a suspect node it would get no call to show otherwise). A bench
	// earned by clients' calls alone stands until it ends, and its backoff
	// keeps growing with each failing call after it: a node can answer its
	// head and fail everything else (a proxy in front of it, a method it
	// cannot serve), and probes must not bring it back at every poll. The
	// first call that it answers clears it.
	if m.unreachable {
		m.failures, m.benched = 0, time.Time{}
		m.unreachable, m.slowStreak, m.suspect = false, 0, time.Time{}
	}
	m.mu.Unlock()
}

// Chain is the identity of the chain the network serves (the
// configured ChainID, or the chain most nodes report), "" before any node
// said.
func (p *Pool) Chain() string {
	if p.chainID != "" {
		return p.chainID
	}
	s, _ := p.served.Load().(string)
	return s
}

// checkChains marks the nodes that are not on the network's chain: the
// configured ChainID, or else the chain most nodes report (the first in
// configured order on a tie). A node that changes side is logged.
func (p *Pool) checkChains() {
	if p.chain.Identity == nil {
		return
	}
	want := p.chainID
	if want == "" {
		counts := map[string]int{}
		best := 0
		for _, m := range p.members {
			m.mu.Lock()
			id := m.identity
			m.mu.Unlock()
			if id == "" {
				continue
			}
			if counts[id]++; counts[id] > best {
				want, best = id, counts[id]
			}
		}
	}
	p.served.Store(want)
	for _, m := range p.members {
		m.mu.Lock()
		id, was := m.identity, m.wrong
		m.wrong = id != "" && id != want
		now := m.wrong
		m.mu.Unlock()
		switch {
		case now && !was:
			p.log.Error("node is on another chain: it gets no calls until it is back", "network", p.network, "upstream", m.Name, "chain", id, "want", want)
		case was && !now:
			p.log.Info("node is back on the network's chain", "network", p.network, "upstream", m.Name, "chain", id)
		}
	}
}

// updateHeads sets the network's heads to the best of the nodes that are
// on its chain and not benched (finalized never goes back), read when the
// newest of theirs was, has the chain view follow the leading node's head
// (which finds reorgs), and tells the listeners.
func (p *Pool) updateHeads(ctx context.Context) {
	now := p.now()
	var best portico.Heads
	var readAt time.Time
	var eligible []*member
	for _, m := range p.members {
		h, at, wrong := m.chainState()
		benched, _, _ := m.state(now)
		if at.IsZero() || wrong || benched {
			continue
		}
		eligible = append(eligible, m)
		best.Latest = max(best.Latest, h.Latest)
		best.Safe = max(best.Safe, h.Safe)
		best.Finalized = max(best.Finalized, h.Finalized)
		if at.After(readAt) {
			readAt = at
		}
	}
	if len(eligible) == 0 {
		return
	}
	p.followLeader(ctx, eligible, best)
	if head, ok := p.view.Head(); ok {
		best.Head = head
	}
	p.mu.Lock()
	prev := p.heads
	best.Finalized = max(best.Finalized, prev.Finalized)
	best.Safe = max(best.Safe, prev.Safe)
	p.heads, p.headsAt = best, readAt
	onHeads := p.onHeads
	p.mu.Unlock()
	if best != prev {
		for _, l := range onHeads {
			l.f(best)
		}
	}
}

// followLeader has the chain view follow the head of the leading node:
// the one with the highest head block, the current leader on a tie, so
// that the view does not swing between nodes that agree on the height but
// not on the block. A reorg at the same height on the leader (anvil_reorg,
// a node that switched branch) is followed like any new head. The view
// fetches missing parents from the leader itself.
func (p *Pool) followLeader(ctx context.Context, eligible []*member, best portico.Heads) {
	if p.chain.Header == nil {
		return
	}
	p.leading.Lock()
	defer p.leading.Unlock()
	var lead *member
	var head portico.Header
	for _, m := range eligible {
		h, _, _ := m.chainState()
		if h.Head.Hash == "" {
			continue
		}
		if lead == nil || h.Head.Number > head.Number || (h.Head.Number == head.Number && m == p.leader) {
			lead, head = m, h.Head
		}
	}
	if lead == nil {
		return
	}
	if lead != p.leader {
		p.log.Debug("chain view follows another node", "network", p.network, "upstream", lead.Name, "head", head.Number)
		p.leader = lead
	}
	// A leader behind the view on the same chain (the node ahead of it
	// died or froze) is no reorg: the blocks after its head are still the
	// chain, and the view keeps them until a node passes them or shows
	// another branch. Going back would send clients blocks they have.
	if cur, ok := p.view.Head(); ok && head.Number < cur.Number && p.view.OnChain(head.Hash) {
		p.view.SetMarks(best.Safe, best.Finalized)
		return
	}
	sw, err := p.view.Follow(ctx, head, func(ctx context.Context, n uint64, hash string) (portico.Header, error) {
		return p.chain.Header(ctx, lead.Node, n, hash)
	})
	switch {
	case errors.Is(err, chainview.ErrBelowFinal):
		p.log.Error("a node's head leaves the chain below its finalized block: not followed", "network", p.network, "upstream", lead.Name, "head", head.Number, "hash", head.Hash)
		p.leader = nil
	case err != nil:
		p.log.Warn("chain view: the head could not be linked this round", "network", p.network, "upstream", lead.Name, "head", head.Number, "err", err)
	case sw.Reorg():
		p.log.Warn("reorg", "network", p.network, "ancestor", sw.Ancestor.Number, "dropped", len(sw.Dropped), "added", len(sw.Added), "head", head.Number, "upstream", lead.Name)
	case sw.Reset && len(sw.Dropped) > 0:
		p.log.Warn("chain view reset: the new head is too far ahead to link", "network", p.network, "head", head.Number, "upstream", lead.Name)
	}
	p.view.SetMarks(best.Safe, best.Finalized)
}

// Observe records a head a node told of on its own (a heads
// subscription's notification) as if a poll had read it, and has the
// chain view follow at once rather than at the next poll.
func (p *Pool) Observe(node string, h portico.Header) {
	for _, m := range p.members {
		if m.Name != node {
			continue
		}
		m.mu.Lock()
		if h.Number >= m.heads.Head.Number && h.Number >= m.heads.Latest && !m.headsAt.IsZero() {
			m.heads.Head, m.heads.Latest, m.headsAt = h, h.Number, p.now()
		}
		m.mu.Unlock()
		p.Poke()
		return
	}
}

// Poke has the network's heads and chain view brought up to date with
// what the nodes said last, now rather than after the next poll.
func (p *Pool) Poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// View returns the network's chain view: the served chain by hash.
func (p *Pool) View() *chainview.View { return p.view }

// ErrNoHeaders is Header's error on a network whose family's blocks have
// no hashes to follow.
var ErrNoHeaders = errors.New("upstream: this network's blocks have no headers by hash")

// Header reads the header of the block with hash (whose number is
// number, when known) from the nodes, as the chain view links its heads:
// for a resumed subscription that starts before the view's oldest block.
func (p *Pool) Header(ctx context.Context, number uint64, hash string) (portico.Header, error) {
	if p.chain.Header == nil {
		return portico.Header{}, ErrNoHeaders
	}
	return p.chain.Header(ctx, p, number, hash)
}

// Heads returns the network's heads: the best of its nodes'.
func (p *Pool) Heads() portico.Heads {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heads
}

// HeadsFresh returns the network's heads and whether they were read within
// the last two poll intervals, so that an answer made from them is no
// staler than one a node would give.
func (p *Pool) HeadsFresh() (portico.Heads, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heads, !p.headsAt.IsZero() && p.now().Sub(p.headsAt) <= 2*p.poll+time.Second
}

// MaxLag returns the lag beyond which a node gets no calls about the
// newest blocks.
func (p *Pool) MaxLag() uint64 { return p.maxLag }

// OnHeads registers f to be called (on the tracking goroutine) whenever
// the network's heads change, until the returned function is called.
func (p *Pool) OnHeads(f func(portico.Heads)) (stop func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextListener++
	id := p.nextListener
	// A new slice each time: updateHeads calls the listeners of a copy
	// of the slice header, outside the lock.
	p.onHeads = append(slices.Clip(p.onHeads), headListener{id, f})
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.onHeads = slices.DeleteFunc(slices.Clone(p.onHeads), func(l headListener) bool { return l.id == id })
	}
}

// headListener is one OnHeads registration.
type headListener struct {
	id int
	f  func(portico.Heads)
}

// Ready reports whether the network can serve calls: some node is on the
// network's chain, not benched, and (when heads are tracked) had its heads
// read within the last three poll intervals. The error says why not.
func (p *Pool) Ready() error {
	if len(p.members) == 0 {
		return portico.ErrNoUpstream
	}
	fresh := 3*p.poll + time.Second
	var reasons []string
	for _, n := range p.Nodes() {
		switch {
		case n.WrongChain:
			reasons = append(reasons, n.Name+": on another chain")
		case n.Benched:
			reasons = append(reasons, n.Name+": benched after failures")
		case p.chain.Heads != nil && n.HeadsAge < 0:
			reasons = append(reasons, n.Name+": heads never read")
		case p.chain.Heads != nil && n.HeadsAge > fresh:
			reasons = append(reasons, fmt.Sprintf("%s: heads last read %s ago", n.Name, n.HeadsAge.Round(time.Second)))
		default:
			return nil
		}
	}
	return errors.New("no usable node: " + strings.Join(reasons, "; "))
}
