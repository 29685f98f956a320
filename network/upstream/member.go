package upstream

import (
	"slices"
	"sync"
	"time"

	"github.com/porticohq/portico"
)

// Member is one node of a pool with the name it is logged under.
type Member struct {
	// Name identifies the node in logs and errors: a configured label or
	// the redacted URL, never the raw URL.
	Name string
	Node Node
	// Subs opens subscriptions on the node; nil when the node speaks HTTP
	// only (a WebSocket Node subscribes itself).
	Subs Subscriber
	// Reach is what the node keeps and serves, and its own rate bounds,
	// as configured; the zero value says nothing, and the pool learns
	// what it can from the node's answers.
	Reach portico.Reach
}

// member is a Member and everything the pool knows of it. One mutex guards
// the state; the hot path takes it a few times per call.
type member struct {
	Member
	index int    // position in the configured order
	reach *reach // what it keeps, serves and takes

	mu sync.Mutex
	// Health: consecutive failures and the bench they earned; unreachable
	// when head tracking failed to read the node since it last could.
	failures    int
	benched     time.Time // zero when not benched
	faults      uint64    // failures ever: an answer to a call sent before the latest does not clear it
	unreachable bool
	// Slowness: a node that a hedge overtook is suspect for a while, so
	// that new calls go elsewhere first; a timely answer clears it.
	// slowStreak counts slow episodes in a row, not overtaken calls.
	slowStreak int
	suspect    time.Time // when the latest suspicion ends; zero when none
	// Chain: what the node says of its chain.
	heads    portico.Heads
	headsAt  time.Time // when heads were last read; zero when never
	identity string
	wrong    bool // on another chain than the network's
	// Numbers for operators.
	calls, errs, hedged uint64
	lat                 latencyWindow
}

// latencyWindow keeps the durations of a node's last answers, for its
// quantiles.
type latencyWindow struct {
	d    [128]time.Duration
	n    int // answers recorded, up to len(d)
	next int
	p95  time.Duration // cached; recomputed every 16 answers
	p50  time.Duration
}

func (w *latencyWindow) add(d time.Duration) {
	w.d[w.next] = d
	w.next = (w.next + 1) % len(w.d)
	if w.n < len(w.d) {
		w.n++
	}
	if w.n < 16 || w.next%16 == 0 {
		s := slices.Clone(w.d[:w.n])
		slices.Sort(s)
		w.p50, w.p95 = s[len(s)/2], s[(len(s)*95)/100]
	}
}

// state reports whether the node is benched, suspect and on the wrong
// chain at now.
func (m *member) state(now time.Time) (benched, suspect, wrong bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.benched.IsZero() && now.Before(m.benched), !m.suspect.IsZero() && now.Before(m.suspect), m.wrong
}

// ok records an answer (a result or the node's JSON-RPC error) that took
// d, to a call sent when the node had failed faults times: a failure since
// then (a wrong answer to a call in flight beside it) keeps its bench.
func (m *member) ok(d time.Duration, timely bool, faults uint64) {
	m.mu.Lock()
	m.calls++
	if m.faults == faults {
		m.failures = 0
		m.benched = time.Time{}
	}
	if timely {
		m.slowStreak = 0
		m.suspect = time.Time{}
	}
	m.lat.add(d)
	m.mu.Unlock()
}

// fail records a transport failure and benches the node for a backoff that
// doubles with each consecutive failure, from 1s up to 30s. call says the
// failure was a client's call, not a probe of head tracking.
func (m *member) fail(now time.Time, call bool) {
	m.mu.Lock()
	if call {
		m.calls++
		m.errs++
	} else {
		m.unreachable = true
	}
	m.failures++
	m.faults++
	backoff := time.Second << min(m.failures-1, 5)
	m.benched = now.Add(min(backoff, 30*time.Second))
	m.mu.Unlock()
}

// faultCount is the number of failures the node has had.
func (m *member) faultCount() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.faults
}

// hedgedPast counts a hedge sent because the node had not answered in
// time. It is not yet a sign of slowness: the node may still answer first
// (the wait may have been the caller's, a pause of the gateway).
func (m *member) hedgedPast() {
	m.mu.Lock()
	m.hedged++
	m.mu.Unlock()
}

// overtaken marks the node suspect: a hedge sent after the attempt that
// was sent at sent answered first, at now. The suspicion lasts 1s,
// doubling with each further slow episode in a row, up to 30s.
//
// One pause of the node holds every call in flight on it, and each is
// overtaken in turn: they are one episode, not many. So an attempt sent
// before the latest suspicion ended (while the node was suspect, or in the
// pause that began it) adds nothing; only an attempt sent after it, when
// the node was first again, starts a new episode.
func (m *member) overtaken(sent, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.suspect.IsZero() && sent.Before(m.suspect) {
		return
	}
	m.slowStreak++
	d := time.Second << min(m.slowStreak-1, 5)
	m.suspect = now.Add(min(d, 30*time.Second))
}

// hedgeDelay is how long to wait for the node before a hedge: its p95
// latency within [floor, ceiling]; floor until it has answered enough.
func (m *member) hedgeDelay(floor, ceiling time.Duration) time.Duration {
	m.mu.Lock()
	p95, n := m.lat.p95, m.lat.n
	m.mu.Unlock()
	if n < 16 {
		return max(floor, min(ceiling, 2*floor))
	}
	return max(floor, min(ceiling, p95))
}

// chainState returns what the node says of its chain.
func (m *member) chainState() (h portico.Heads, at time.Time, wrong bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.heads, m.headsAt, m.wrong
}

// NodeState is what the pool knows of one node at a moment: for routing
// decisions' logs, the admin API and metrics.
type NodeState struct {
	// Name is the node's label or redacted URL.
	Name string `json:"name"`
	// Heads are the node's last heads (zero when never read).
	Heads portico.Heads `json:"heads"`
	// HeadsAge is how long ago the heads were read; -1 when never.
	HeadsAge time.Duration `json:"headsAgeNs"`
	// Lag is how many blocks the node is behind the network's best head.
	Lag uint64 `json:"lag"`
	// Lagging reports a lag beyond the network's max_lag (beyondLag).
	Lagging bool `json:"lagging"`
	// Chain is what the node says names its chain; WrongChain reports that
	// it is not the network's, which excludes the node.
	Chain      string `json:"chain,omitempty"`
	WrongChain bool   `json:"wrongChain"`
	// Benched and Suspect report a node that failed or was slow; Until
	// says when that ends.
	Benched      bool      `json:"benched"`
	BenchedUntil time.Time `json:"benchedUntil,omitzero"`
	Suspect      bool      `json:"suspect"`
	// Calls, Errors and Hedged count the node's calls, its transport
	// failures and the hedges sent because it was slow.
	Calls  uint64 `json:"calls"`
	Errors uint64 `json:"errors"`
	Hedged uint64 `json:"hedged"`
	// P50 and P95 are quantiles of its last 128 answer times.
	P50 time.Duration `json:"p50Ns"`
	P95 time.Duration `json:"p95Ns"`
	// Keeps is what the node keeps and serves, configured or learned.
	Keeps Keeps `json:"keeps"`
	// Rate is its own rate bounds and their use.
	Rate RateUse `json:"rate"`
	// Answers counts its answers by class (docs/nodes.md).
	Answers map[string]uint64 `json:"answers,omitempty"`
}

// snapshot returns the node's state at now; best and maxLag give its lag.
func (m *member) snapshot(now time.Time, best, maxLag uint64) NodeState {
	keeps, rateUse, answers := m.reach.snapshot(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := NodeState{Keeps: keeps, Rate: rateUse, Answers: answers,
		Name: m.Name, Heads: m.heads, HeadsAge: -1, Chain: m.identity, WrongChain: m.wrong,
		Benched: !m.benched.IsZero() && now.Before(m.benched), Suspect: !m.suspect.IsZero() && now.Before(m.suspect),
		Calls: m.calls, Errors: m.errs, Hedged: m.hedged, P50: m.lat.p50, P95: m.lat.p95,
	}
	if s.Benched {
		s.BenchedUntil = m.benched
	}
	if !m.headsAt.IsZero() {
		s.HeadsAge = now.Sub(m.headsAt)
		if best > m.heads.Latest {
			s.Lag = best - m.heads.Latest
		}
		s.Lagging = beyondLag(s.Lag, maxLag)
	}
	return s
}

// beyondLag is the one lag rule, of routing (Pool.order) and of the nodes'
// states alike: a node lag blocks behind the best head is lagging when lag
// passes maxLag. A maxLag of 0 bounds nothing: the config's 0 already took
// the family's default, so 0 here is a family that declares no bound.
func beyondLag(lag, maxLag uint64) bool { return maxLag > 0 && lag > maxLag }
