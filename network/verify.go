package network

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// VerifyMode is a network's `verify:` setting (docs/verify.md).
type VerifyMode uint8

// The verify modes.
const (
	// VerifyOff passes nodes' answers on as they are.
	VerifyOff VerifyMode = iota
	// VerifyOn checks every answer that can be checked against a trusted
	// header and passes the rest on marked unverified.
	VerifyOn
	// VerifyStrict refuses what cannot be checked (-32058).
	VerifyStrict
)

// ParseVerifyMode reads the config's spelling: off, on or strict (empty
// is off).
func ParseVerifyMode(s string) (VerifyMode, error) {
	switch s {
	case "", "off":
		return VerifyOff, nil
	case "on":
		return VerifyOn, nil
	case "strict":
		return VerifyStrict, nil
	}
	return VerifyOff, fmt.Errorf("want off, on or strict, got %q", s)
}

// String is the config's spelling.
func (m VerifyMode) String() string {
	switch m {
	case VerifyOn:
		return "on"
	case VerifyStrict:
		return "strict"
	}
	return "off"
}

// Verification says whether a call's answer was checked.
type Verification uint8

// What a call's outcome says of its checks.
const (
	// NotVerifying: the network does not verify (verify: off).
	NotVerifying Verification = iota
	// Verified: the answer was checked against a trusted header.
	Verified
	// Unverified: the network verifies, but this answer was passed on
	// unchecked (verify: on).
	Unverified
)

// VerifyUpstream is what verification needs of the nodes besides the
// call path's Upstream: each node by name (a quorum of hashes is what
// each one says) and a way to bench a node whose answer was found wrong
// after it was taken. *upstream.Pool is one.
type VerifyUpstream interface {
	Upstream
	Names() []string
	Ask(ctx context.Context, node, method string, params jsontext.Value) (jsontext.Value, error)
	Fault(node string)
}

var _ VerifyUpstream = (*upstream.Pool)(nil)

// VerifyConfig turns verification on for a network.
type VerifyConfig struct {
	// Verifier builds the checks of the network's family (the family's
	// Verifier in package families); nil with a mode on or strict builds
	// a verifier that refuses every call.
	Verifier verify.New
	// Mode is on or strict; off builds no verifier.
	Mode VerifyMode
	// Quorum is how many nodes must report the same hash for a height
	// for it to be trusted; 0 means verify.DefaultQuorum of the nodes.
	Quorum int
	// Checkpoint, when set, is a block hash trusted for good (with its
	// ancestors by parent links).
	Checkpoint string
	// ChainID is the chain's id, for its rules (an EVM chain's fork
	// rules); 0 means the one a quorum of nodes reports.
	ChainID uint64
	// CallCost is what each node call a verification makes costs the
	// calling key, past the node calls its own charge pays for (one per
	// CallCost credits of it): the bound of node calls per credit that
	// docs/metering.md states. 0 charges nothing for them.
	CallCost int
}

// followHeads trusts each new head's header as the chain view reports it,
// in the background, so that the first call at a new block does not wait
// for the quorum ask and the header (one at a time: a head that arrives
// while one is being trusted is skipped, and trusted by the next call
// that needs it). It returns the stop function, which waits for a trust
// in flight to end.
func followHeads(fv verify.Verifier, up Upstream) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		busy   atomic.Bool
		wg     sync.WaitGroup
		mu     sync.Mutex
		closed bool // no trust starts once the stop function runs
	)
	stop := up.OnHeads(func(h portico.Heads) {
		if h.Latest == 0 || !busy.CompareAndSwap(false, true) {
			return
		}
		mu.Lock()
		if closed {
			mu.Unlock()
			busy.Store(false)
			return
		}
		wg.Add(1)
		mu.Unlock()
		go func() {
			defer wg.Done()
			defer busy.Store(false)
			tctx, done := context.WithTimeout(ctx, 30*time.Second)
			defer done()
			if err := fv.Ready(tctx); err != nil {
				return
			}
			// A failure is the next call's to meet and report.
			_ = fv.TrustHead(tctx, h.Latest)
		}()
	})
	return func() {
		stop()
		mu.Lock()
		closed = true
		mu.Unlock()
		cancel()
		wg.Wait()
	}
}

// newFamilyVerifier builds the verifier of the network's family, with
// every node call it makes for a verified call charged and held to the
// call's memory budget (meteredUp); a verifier that cannot run refuses
// every call rather than serve it unchecked, and the network's mode is
// then strict.
func newFamilyVerifier(name string, up Upstream, cfg VerifyConfig, window func() uint64, log *slog.Logger, m *metrics.Metrics) (verify.Verifier, VerifyMode) {
	env := verify.Env{Network: name, Quorum: cfg.Quorum, Checkpoint: cfg.Checkpoint, ChainID: cfg.ChainID, Window: window, Log: log, Metrics: m}
	var broken error
	if vu, ok := up.(VerifyUpstream); ok {
		env.Nodes = meteredUp{vu}
		if env.Quorum <= 0 {
			env.Quorum = verify.DefaultQuorum(len(vu.Names()))
		}
	} else {
		broken = fmt.Errorf("network %s: verify needs an upstream that can ask each node", name)
	}
	var v verify.Verifier
	if cfg.Verifier == nil {
		broken = fmt.Errorf("network %s: the family's answers cannot be verified", name)
	} else {
		var err error
		if v, err = cfg.Verifier(env); err != nil && broken == nil {
			broken = err
		}
	}
	if broken != nil {
		log.Error("verify cannot run; every call is refused", "network", name, "err", broken)
		return brokenVerifier{v, broken}, VerifyStrict
	}
	return v, cfg.Mode
}

// brokenVerifier is a verifier that cannot run: it knows its family's
// methods (when the family built it) and refuses every call.
type brokenVerifier struct {
	family verify.Verifier // nil: no method is known
	err    error
}

func (b brokenVerifier) Ready(context.Context) error {
	return &verify.UnverifiableError{What: "network", Reason: b.err.Error()}
}

func (b brokenVerifier) Method(name string) (verify.Handler, bool) {
	if b.family == nil {
		return nil, false
	}
	return b.family.Method(name)
}

func (b brokenVerifier) TrustHead(ctx context.Context, _ uint64) error { return b.Ready(ctx) }
