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
)

// This file is head tracking: each node's heads and chain, read through
// the family's Chain hooks every PollInterval; the network's heads (the
// best of its nodes'), which tags are resolved against; and reorgs of the
// served chain, which the cache listens for. It is the one source of
// truth about nodes: routing, the cache's finality rules and operators all
// read it.

// identityEvery is how many polls pass between identity checks of a node
// whose chain is known; a node that comes back after a restart may have
// been pointed elsewhere.
const identityEvery = 30

// knownDepth is how many recent block hashes of the served chain are kept
// to find how deep a reorg went.
const knownDepth = 256

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
	polled := make(chan struct{}, 1)
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
// newest of theirs was, finds reorgs of the served chain, and tells the
// listeners.
func (p *Pool) updateHeads(ctx context.Context) {
	now := p.now()
	var best portico.Heads
	var bestNode *member
	var readAt time.Time
	for _, m := range p.members {
		h, at, wrong := m.chainState()
		benched, _, _ := m.state(now)
		if at.IsZero() || wrong || benched {
			continue
		}
		if bestNode == nil || h.Latest > best.Latest {
			best.Latest, best.Hash, bestNode = h.Latest, h.Hash, m
		}
		best.Safe = max(best.Safe, h.Safe)
		best.Finalized = max(best.Finalized, h.Finalized)
		if at.After(readAt) {
			readAt = at
		}
	}
	if bestNode == nil {
		return
	}
	p.mu.Lock()
	prev := p.heads
	best.Finalized = max(best.Finalized, prev.Finalized)
	best.Safe = max(best.Safe, prev.Safe)
	p.heads, p.headsAt = best, readAt
	onHeads, onReorg := p.onHeads, p.onReorg
	p.mu.Unlock()

	if from, ok := p.findReorg(ctx, bestNode, prev, best); ok {
		p.log.Warn("reorg", "network", p.network, "from", from, "head", best.Latest)
		for _, f := range onReorg {
			f(from)
		}
	}
	if best != prev {
		for _, l := range onHeads {
			l.f(best)
		}
	}
}

// findReorg checks that the served chain's previous head is still on the
// best node's chain; when it is not, it walks back to the first block that
// differs. It needs the family's BlockHash hook and block hashes.
func (p *Pool) findReorg(ctx context.Context, node *member, prev, cur portico.Heads) (from uint64, reorg bool) {
	if p.chain.BlockHash == nil || cur.Hash == "" {
		return 0, false
	}
	p.mu.Lock()
	known := p.known
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.known[cur.Latest] = cur.Hash
		for n := range p.known {
			if n+knownDepth < cur.Latest {
				delete(p.known, n)
			}
		}
		p.mu.Unlock()
	}()
	if prev.Hash == "" || (prev.Latest == cur.Latest && prev.Hash == cur.Hash) {
		return 0, false
	}
	check := func(n uint64) (same bool, ok bool) {
		p.mu.Lock()
		want, have := known[n]
		p.mu.Unlock()
		if !have {
			return true, false
		}
		got := cur.Hash
		if n != cur.Latest {
			h, err := p.chain.BlockHash(ctx, node.Node, n)
			if err != nil || h == "" {
				return true, false
			}
			got = h
		}
		return got == want, true
	}
	same, ok := check(min(prev.Latest, cur.Latest))
	if !ok || same {
		return 0, false
	}
	// Walk back to the newest block both chains share, no deeper than
	// finalized blocks, which do not reorg.
	from = min(prev.Latest, cur.Latest)
	for n := from; n > 0 && n > cur.Finalized && from-n < knownDepth; n-- {
		same, ok := check(n - 1)
		if !ok || same {
			break
		}
		from = n - 1
	}
	p.mu.Lock()
	for n := range p.known {
		if n >= from {
			delete(p.known, n)
		}
	}
	p.mu.Unlock()
	return from, true
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
	p.onHeads = append(p.onHeads, headListener{id, f})
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.onHeads = slices.DeleteFunc(p.onHeads, func(l headListener) bool { return l.id == id })
	}
}

// headListener is one OnHeads registration.
type headListener struct {
	id int
	f  func(portico.Heads)
}

// OnReorg registers f to be called when the served chain changed from
// block from on: the blocks from there on are not the ones served before.
func (p *Pool) OnReorg(f func(from uint64)) {
	p.mu.Lock()
	p.onReorg = append(p.onReorg, f)
	p.mu.Unlock()
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
