package upstream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/porticohq/portico"
)

// learnFor is how long what a node's answers taught the pool (the state
// depth or first block it lacks, a method it does not serve) holds before
// the node is asked again: long enough that a fleet's old reads cost one
// node call each, short enough that a node that caught up or was
// reconfigured is back soon.
const learnFor = 10 * time.Minute

// reach is what the pool knows of what one node keeps and serves: its
// configured portico.Reach, what its answers taught (for learnFor), and
// the bounds of its own rate.
type reach struct {
	cfg     portico.Reach
	limiter *rate.Limiter // nil: no bound per second
	slots   chan struct{} // nil: no bound on calls in flight

	// learned is set once anything was learned or limited: until then the
	// hot path reads the configured reach alone, taking no lock.
	learned atomic.Bool

	mu           sync.Mutex
	stateDepth   uint64        // learned: lacks state this many blocks below its head, and deeper
	stateUntil   time.Time     // when that is forgotten
	okDepth      atomic.Uint64 // 1 + the deepest state it answered for; 0: none (not under mu)
	firstBlock   uint64        // learned: lacks blocks below this one
	firstUntil   time.Time
	okOldest     atomic.Uint64                // 1 + the oldest block it answered for; 0: none (not under mu)
	lacks        map[string]time.Time         // learned: methods it does not serve, until
	limitedUntil time.Time                    // its own rate limit said to wait
	answers      [answerClasses]atomic.Uint64 // not under mu
}

// Answer classes as counted per node: the portico.Answer classes, then a
// result and a transport failure.
const (
	answerResult  = int(portico.AnswerKnown) + 1
	answerFailed  = answerResult + 1
	answerClasses = answerFailed + 1
)

// answerName names a counted class, as metrics and NodeState do.
func answerName(i int) string {
	switch i {
	case answerResult:
		return "result"
	case answerFailed:
		return "failed"
	}
	return portico.Answer(i).String()
}

// minLearnedDepth is the least state depth a node is learned to keep:
// every node software keeps at least this many blocks of state (geth and
// nethermind 128, reth and erigon far more), so a miss deep down does not
// send the reads of the newest blocks elsewhere.
const minLearnedDepth = 8

// maxLearnedMethods bounds the methods a node is remembered to lack.
const maxLearnedMethods = 256

func newReach(cfg portico.Reach) *reach {
	r := &reach{cfg: cfg}
	if cfg.PerSecond > 0 {
		r.limiter = rate.NewLimiter(rate.Limit(cfg.PerSecond), max(1, int(cfg.PerSecond)))
	}
	if cfg.Concurrent > 0 {
		r.slots = make(chan struct{}, cfg.Concurrent)
	}
	return r
}

// target is the block a request reads and what it reads there, with the
// node's head, for judging whether a node keeps it.
type target struct {
	method string
	data   portico.Data
	number uint64
	known  bool // number is a block the call is about
}

// targetOf is what req reads.
func targetOf(req Request) target {
	t := target{method: req.Method, data: req.Data}
	switch {
	case req.Block.Kind == portico.BlockNumber:
		t.number, t.known = req.Block.Number, true
	case req.Block.Kind == portico.BlockTag && req.Block.Tag == "earliest":
		t.known = true
	}
	return t
}

// keeps reports whether the node keeps what t reads, with its head at
// head, by its configured reach (configured false: the config does not
// rule it out) and by what it was learned to lack (learned false).
func (r *reach) keeps(t target, head uint64, now time.Time) (configured, learned bool) {
	if !r.cfg.ServesMethod(t.method) {
		return false, true
	}
	configured, learned = true, true
	if !r.learned.Load() && r.cfg.StateBlocks == 0 && r.cfg.FirstBlock == 0 {
		return configured, learned
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if until, ok := r.lacks[t.method]; ok && now.Before(until) {
		learned = false
	}
	if !t.known {
		return configured, learned
	}
	switch t.data {
	case portico.DataState:
		if head >= t.number {
			depth := head - t.number
			if !r.cfg.Archive && r.cfg.StateBlocks > 0 && depth >= r.cfg.StateBlocks {
				configured = false
			}
			if !r.cfg.Archive && r.stateDepth > 0 && depth >= r.stateDepth && now.Before(r.stateUntil) {
				learned = false
			}
		}
		if r.cfg.FirstBlock > 0 && t.number < r.cfg.FirstBlock {
			configured = false
		}
	case portico.DataHistory:
		if r.cfg.FirstBlock > 0 && t.number < r.cfg.FirstBlock {
			configured = false
		}
		if r.firstBlock > 0 && t.number < r.firstBlock && now.Before(r.firstUntil) {
			learned = false
		}
	}
	return configured, learned
}

// learnMissing records the node's answer that it lacks what t reads,
// with its head at head: a method it does not serve (lacksMethod), the
// blocks up to t's, or state: a node that lacks the state d blocks deep
// is taken to lack all state deeper than the deepest it answered for
// (learnHas), so that a run of old reads asks it once, not once per block
// nearer the head. A node configured as an archive is not learned to lack
// state: its answer is taken as being about that call alone.
func (r *reach) learnMissing(t target, head uint64, lacksMethod bool, now time.Time) {
	r.learned.Store(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case lacksMethod:
		if r.lacks == nil {
			r.lacks = map[string]time.Time{}
		}
		if len(r.lacks) >= maxLearnedMethods {
			for m, until := range r.lacks {
				if !now.Before(until) {
					delete(r.lacks, m)
				}
			}
			if len(r.lacks) >= maxLearnedMethods {
				return
			}
		}
		r.lacks[t.method] = now.Add(learnFor)
	case !t.known:
	case t.data == portico.DataState && !r.cfg.Archive && head > t.number:
		// A block at the head may be one the node has not yet got: only
		// depth is learned.
		d := head - t.number
		known := r.okDepth.Load() // the first depth not known to be kept
		if known > d {
			// It answered as deep before: it pruned since.
			r.okDepth.Store(d)
			known = d
		}
		depth := min(d, max(known, minLearnedDepth))
		if r.stateDepth == 0 || depth < r.stateDepth || !now.Before(r.stateUntil) {
			r.stateDepth = depth
		}
		r.stateUntil = now.Add(learnFor)
	case t.data == portico.DataHistory && head > t.number:
		// As for state: everything older than the oldest block it
		// answered for (or than its newest few) is taken as gone.
		first := head - min(head, minLearnedDepth)
		if o := r.okOldest.Load(); o > 0 {
			if o-1 <= t.number {
				// It answered for as old a block before: it pruned since.
				r.okOldest.Store(0)
			} else {
				first = min(first, o-1)
			}
		}
		first = max(first, t.number+1)
		if first > r.firstBlock || !now.Before(r.firstUntil) {
			r.firstBlock = first
		}
		r.firstUntil = now.Add(learnFor)
	}
}

// learnHas records that the node answered a read of what t reads with
// its head at head: it keeps state that deep, or that block.
//
// It is on the path of every answered read: until anything was learned
// it takes no lock.
func (r *reach) learnHas(t target, head uint64, now time.Time) {
	if !t.known || head < t.number {
		return
	}
	depth := head - t.number
	switch t.data {
	case portico.DataState:
		atomicMax(&r.okDepth, depth+1)
	case portico.DataHistory:
		atomicMinSet(&r.okOldest, t.number+1)
	default:
		return
	}
	if !r.learned.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case t.data == portico.DataHistory && now.Before(r.firstUntil) && t.number < r.firstBlock:
		r.firstBlock = t.number
	case t.data == portico.DataState && now.Before(r.stateUntil) && r.stateDepth <= depth:
		r.stateDepth = depth + 1
	}
}

// atomicMax raises a to v.
func atomicMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// atomicMinSet lowers a to v, or sets it when it is 0 (none).
func atomicMinSet(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if (old != 0 && old <= v) || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// limit leaves the node alone until now+d: its own rate limit said so.
func (r *reach) limit(now time.Time, d time.Duration) {
	r.learned.Store(true)
	r.mu.Lock()
	if until := now.Add(d); until.After(r.limitedUntil) {
		r.limitedUntil = until
	}
	r.mu.Unlock()
}

// room reports whether the node may be sent a call now without waiting:
// its rate limit has passed, and its own bounds have room.
func (r *reach) room(now time.Time) bool {
	if r.learned.Load() {
		r.mu.Lock()
		limited := now.Before(r.limitedUntil)
		r.mu.Unlock()
		if limited {
			return false
		}
	}
	if r.slots != nil && len(r.slots) >= cap(r.slots) {
		return false
	}
	return r.limiter == nil || r.limiter.TokensAt(now) >= 1
}

// take claims room for one call at the node: at once, or, when wait is
// set, waiting until there is room (its own bounds queue the call) or ctx
// ends. release gives the room back when the call ends.
func (r *reach) take(ctx context.Context, wait bool) (release func(), ok bool) {
	if r.slots == nil && r.limiter == nil {
		return noRelease, true
	}
	if r.slots != nil {
		select {
		case r.slots <- struct{}{}:
		default:
			if !wait {
				return nil, false
			}
			select {
			case r.slots <- struct{}{}:
			case <-ctx.Done():
				return nil, false
			}
		}
	}
	release = func() {
		if r.slots != nil {
			<-r.slots
		}
	}
	if r.limiter != nil {
		if wait {
			if err := r.limiter.Wait(ctx); err != nil {
				release()
				return nil, false
			}
		} else if !r.limiter.Allow() {
			release()
			return nil, false
		}
	}
	return release, true
}

// noRelease gives back nothing: a node with no bounds of its own.
func noRelease() {}

// count records one answer of class i.
func (r *reach) count(i int) {
	r.answers[i].Add(1)
}

// Keeps describes what a node keeps, for operators: the configured reach,
// or what was learned where the config says nothing.
type Keeps struct {
	// State is "archive", "last N blocks" or "unknown"; Learned says it
	// was learned from the node's answers.
	State   string `json:"state"`
	Learned bool   `json:"learned,omitempty"`
	// StateBlocks is the blocks of state it keeps (0: all or unknown).
	StateBlocks uint64 `json:"stateBlocks,omitempty"`
	// FirstBlock is the first block it has (0: all or unknown).
	FirstBlock uint64 `json:"firstBlock,omitempty"`
	// Lacks are the methods and namespaces it does not serve (configured,
	// then learned).
	Lacks []string `json:"lacks,omitempty"`
	// Serves, when set, are the only methods it serves.
	Serves []string `json:"serves,omitempty"`
}

// snapshot describes the node's reach and use at now: what it keeps, its
// own rate bounds and use, and its answers by class.
func (r *reach) snapshot(now time.Time) (k Keeps, rateUse RateUse, answers map[string]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k = Keeps{State: "unknown", FirstBlock: r.cfg.FirstBlock, Serves: r.cfg.Serves, Lacks: append([]string(nil), r.cfg.Lacks...)}
	switch {
	case r.cfg.Archive:
		k.State = "archive"
	case r.cfg.StateBlocks > 0:
		k.State, k.StateBlocks = fmt.Sprintf("last %d blocks", r.cfg.StateBlocks), r.cfg.StateBlocks
	case r.stateDepth > 0 && now.Before(r.stateUntil):
		k.State, k.StateBlocks, k.Learned = fmt.Sprintf("fewer than %d blocks", r.stateDepth), r.stateDepth, true
	}
	if r.cfg.FirstBlock == 0 && r.firstBlock > 0 && now.Before(r.firstUntil) {
		k.FirstBlock, k.Learned = r.firstBlock, true
	}
	for m, until := range r.lacks {
		if now.Before(until) {
			k.Lacks = append(k.Lacks, m)
			k.Learned = true
		}
	}
	rateUse = RateUse{PerSecond: r.cfg.PerSecond, Concurrent: r.cfg.Concurrent}
	if r.slots != nil {
		rateUse.InFlight = len(r.slots)
	}
	if now.Before(r.limitedUntil) {
		rateUse.LimitedUntil = r.limitedUntil
	}
	answers = make(map[string]uint64, answerClasses)
	for i := range r.answers {
		if n := r.answers[i].Load(); n > 0 {
			answers[answerName(i)] = n
		}
	}
	return k, rateUse, answers
}

// RateUse is a node's own rate bounds and their use at a moment.
type RateUse struct {
	PerSecond  float64 `json:"perSecond,omitempty"`
	Concurrent int     `json:"concurrent,omitempty"`
	// InFlight is the calls in flight, counted where Concurrent bounds
	// them.
	InFlight int `json:"inFlight,omitempty"`
	// LimitedUntil is when the node's own rate limit (a 429) ends.
	LimitedUntil time.Time `json:"limitedUntil,omitzero"`
}
