package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/maypok86/otter/v2"
	"golang.org/x/sync/singleflight"

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
	// Family is the chain family whose checks run: evm (the default) or
	// starknet.
	Family string
	// Mode is on or strict; off builds no verifier.
	Mode VerifyMode
	// Quorum is how many nodes must report the same hash for a height
	// for it to be trusted; 0 means verify.DefaultQuorum of the nodes.
	Quorum int
	// Checkpoint, when set, is a block hash trusted for good (with its
	// ancestors by parent links).
	Checkpoint string
	// ChainID is an EVM chain's id, for its fork rules; 0 means the one a
	// quorum of nodes reports.
	ChainID uint64
	// CallCost is what each node call a verification makes costs the
	// calling key, past the node calls its own charge pays for (one per
	// CallCost credits of it): the bound of node calls per credit that
	// docs/metering.md states. 0 charges nothing for them.
	CallCost int
}

// verifyBase is what every family's verifier shares: the network's
// nodes, the hashes it trusts and why (a quorum of nodes, the checkpoint,
// a parent link), and one quorum ask per height at a time.
type verifyBase struct {
	network string
	mode    VerifyMode
	up      VerifyUpstream
	trust   *verify.Trust
	quorum  int
	log     *slog.Logger
	metrics *metrics.Metrics
	// heightAsk is the node call whose answer names the hash of the block
	// at a height, and hashOf reads that hash from it.
	heightAsk func(number uint64) (method string, params jsontext.Value)
	hashOf    func(jsontext.Value) (common.Hash, bool)

	// headerFetches are header reads in flight, by hash (oneFetch).
	headerFetches singleflight.Group

	mu       sync.Mutex
	pending  map[uint64]chan struct{} // quorum asks in flight, by height
	byNumber map[uint64]common.Hash   // the hashes quorums trusted
	// broken is why the verifier cannot run (its upstream cannot ask
	// each node); every call is then refused.
	broken error
}

// init checks that the upstream can ask each node and sets the quorum.
func (b *verifyBase) init(name string, up Upstream, cfg VerifyConfig, log *slog.Logger, m *metrics.Metrics) error {
	vu, ok := up.(VerifyUpstream)
	if !ok {
		return fmt.Errorf("network %s: verify needs an upstream that can ask each node", name)
	}
	b.quorum = cfg.Quorum
	if b.quorum <= 0 {
		b.quorum = verify.DefaultQuorum(len(vu.Names()))
	}
	// Every node call goes through meteredUp: a call's are charged and
	// held to its memory budget as they are made (verifywork.go).
	b.network, b.mode, b.up, b.trust, b.log, b.metrics = name, cfg.Mode, meteredUp{vu}, verify.NewTrust(0), log, m
	b.pending = map[uint64]chan struct{}{}
	return nil
}

// verifiedHandler answers one method from checked node answers; params
// are the call's params after its tag was pinned.
type verifiedHandler func(ctx context.Context, params jsontext.Value) (jsontext.Value, error)

// familyVerifier is one family's checks on a verifying network.
type familyVerifier interface {
	// base is the shared part.
	base() *verifyBase
	// ready prepares what the checks need once (chain rules, the
	// checkpoint's header); an error refuses the call or passes it on
	// unverified, as the mode says.
	ready(ctx context.Context) error
	// method is the handler of a method the family can verify.
	method(name string) (verifiedHandler, bool)
	// trustHead earns trust in the header at a new head's height and
	// keeps it, before any call asks for it.
	trustHead(ctx context.Context, number uint64) error
}

// followHeads trusts each new head's header as the chain view reports it,
// in the background, so that the first call at a new block does not wait
// for the quorum ask and the header (one at a time: a head that arrives
// while one is being trusted is skipped, and trusted by the next call
// that needs it). It returns the stop function, which waits for a trust
// in flight to end.
func followHeads(fv familyVerifier, up Upstream) func() {
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
			if err := fv.ready(tctx); err != nil {
				return
			}
			// A failure is the next call's to meet and report.
			_ = fv.trustHead(tctx, h.Latest)
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

// newFamilyVerifier builds the verifier of the configured family; a
// verifier that cannot run refuses every call rather than serve it
// unchecked.
func newFamilyVerifier(name string, up Upstream, cfg VerifyConfig, log *slog.Logger, m *metrics.Metrics) familyVerifier {
	var (
		v   familyVerifier
		err error
	)
	switch cfg.Family {
	case "", "evm":
		v, err = newVerifier(name, up, cfg, log, m)
	case "starknet":
		v, err = newStarkVerifier(name, up, cfg, log, m)
	default:
		err = fmt.Errorf("network %s: the %s family's answers cannot be verified", name, cfg.Family)
	}
	if err != nil {
		log.Error("verify cannot run; every call is refused", "network", name, "err", err)
		broken := &verifier{}
		broken.network, broken.mode, broken.log, broken.metrics, broken.broken = name, VerifyStrict, log, m, err
		return broken
	}
	return v
}

func (b *verifyBase) base() *verifyBase { return b }

// usable is the error of a verifier that cannot run.
func (b *verifyBase) usable() error {
	if b.broken != nil {
		return &verify.UnverifiableError{What: "network", Reason: b.broken.Error()}
	}
	return nil
}

// verifier checks one EVM network's answers against headers it trusts.
// Trusted headers are kept by hash; the chain view says which hash a
// number has on the served chain, the trust set whether that hash earned
// trust (a quorum of nodes, the checkpoint, a parent link).
type verifier struct {
	verifyBase
	cfg VerifyConfig

	chainMu sync.Mutex // guards chain and exec while they are built
	chain   *verify.Chain
	exec    *verify.Executor

	headers  *otter.Cache[common.Hash, *verify.Header]
	blocks   *otter.Cache[common.Hash, *verify.Block]
	receipts *otter.Cache[common.Hash, *verify.Receipts]

	// window is how many blocks of a verified log range are checked at
	// once (the network's node_range); nil or 0 means defaultLogWindow.
	window func() uint64

	cpDone bool // the checkpoint's header was read
}

// Bounds of what a verifier keeps across calls: headers by count (each a
// few hundred bytes), blocks and receipts by the memory they hold (a
// block's receipts may be megabytes).
const (
	keptHeaders       = 8192
	keptBlockBytes    = 64 << 20
	keptReceiptsBytes = 64 << 20
)

func newVerifier(name string, up Upstream, cfg VerifyConfig, log *slog.Logger, m *metrics.Metrics) (*verifier, error) {
	v := &verifier{cfg: cfg,
		headers: otter.Must(&otter.Options[common.Hash, *verify.Header]{MaximumSize: keptHeaders}),
		blocks: otter.Must(&otter.Options[common.Hash, *verify.Block]{MaximumWeight: keptBlockBytes,
			Weigher: func(_ common.Hash, b *verify.Block) uint32 { return weight(b.Size()) }}),
		receipts: otter.Must(&otter.Options[common.Hash, *verify.Receipts]{MaximumWeight: keptReceiptsBytes,
			Weigher: func(_ common.Hash, rs *verify.Receipts) uint32 { return weight(rs.Size()) }}),
	}
	if err := v.init(name, up, cfg, log, m); err != nil {
		return nil, err
	}
	v.heightAsk = func(number uint64) (string, jsontext.Value) {
		return "eth_getBlockByNumber", jsontext.Value(`["` + hexNumber(number) + `",false]`)
	}
	v.hashOf = blockHashOf
	return v, nil
}

// weight is a cache entry's size as otter's weigher gives it.
func weight(n int64) uint32 { return uint32(min(max(n, 1), 1<<31)) }

// headerBytes is about the memory a verified header holds (go-ethereum's
// types.Header and its hash), what a call that uses a kept one holds.
const headerBytes = 1024

func (v *verifier) trustHead(ctx context.Context, number uint64) error {
	_, err := v.headerAt(ctx, number)
	return err
}

// method is the handler of a verified EVM method.
func (v *verifier) method(name string) (verifiedHandler, bool) {
	m, ok := verifiedMethods[name]
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, params jsontext.Value) (jsontext.Value, error) { return m(v, ctx, params) }, true
}

// ready builds the chain's rules once: from the configured chain id, or
// the one a quorum of nodes reports; and reads the checkpoint's header.
func (v *verifier) ready(ctx context.Context) error {
	if err := v.usable(); err != nil {
		return err
	}
	v.chainMu.Lock()
	defer v.chainMu.Unlock()
	if v.chain == nil {
		id := v.cfg.ChainID
		if id == 0 {
			reports := v.askAll(ctx, "eth_chainId", jsontext.Value(`[]`), func(res jsontext.Value) (common.Hash, bool) {
				var s string
				if json.Unmarshal(res, &s) != nil {
					return common.Hash{}, false
				}
				n, err := strconv.ParseUint(s, 0, 64)
				return common.BigToHash(new(big.Int).SetUint64(n)), err == nil
			})
			h, ok := verify.Agree(reports, v.quorum)
			if !ok {
				// Asked again at the next call: the nodes may agree then.
				return &verify.UnverifiableError{What: "eth_chainId", Reason: "no quorum of nodes agrees on the chain id"}
			}
			id = h.Big().Uint64()
		}
		v.chain = verify.NewChain(verify.ConfigFor(id))
		v.exec = verify.NewExecutor(v.chain, proofSource{v}, verify.ExecutorOptions{
			Headers: func(hash common.Hash, number uint64) *verify.Header {
				if _, ok := v.trust.Trusted(hash); !ok {
					return nil
				}
				h, _ := v.headers.GetIfPresent(hash)
				return h
			},
		})
	}
	if v.cfg.Checkpoint != "" && !v.cpDone {
		hash := common.HexToHash(v.cfg.Checkpoint)
		h, err := v.fetchHeader(ctx, hash)
		if err != nil {
			v.log.Error("verify: the checkpoint's header could not be read", "network", v.network, "err", err)
			return nil
		}
		v.trust.Checkpoint(hash, h.Number())
		v.trustedNumber(h.Number(), hash)
		v.link(h)
		v.cpDone = true
	}
	return nil
}

// askAll asks every node the same question and keeps what read parses of
// each answer, by node.
func (v *verifyBase) askAll(ctx context.Context, method string, params jsontext.Value, read func(jsontext.Value) (common.Hash, bool)) map[string]common.Hash {
	names := v.up.Names()
	type report struct {
		node string
		hash common.Hash
		ok   bool
	}
	ch := make(chan report, len(names))
	for _, node := range names {
		go func() {
			res, err := v.up.Ask(ctx, node, method, params)
			if err != nil {
				ch <- report{node: node}
				return
			}
			h, ok := read(res)
			ch <- report{node, h, ok}
		}()
	}
	out := map[string]common.Hash{}
	for range names {
		if r := <-ch; r.ok {
			out[r.node] = r.hash
		}
	}
	return out
}

// headerAt returns the trusted header at a height.
func (v *verifier) headerAt(ctx context.Context, number uint64) (*verify.Header, error) {
	hash, err := v.trustedHashAt(ctx, number)
	if err != nil {
		return nil, err
	}
	return v.fetchHeader(ctx, hash)
}

// trustedHashAt returns the hash trusted at a height: the served chain's
// hash there if it is trusted already, else (below the view, which keeps
// blocks back to finalized only) the hash a quorum, the checkpoint or a
// parent link trusted there, else the hash a quorum of nodes reports now.
func (v *verifyBase) trustedHashAt(ctx context.Context, number uint64) (common.Hash, error) {
	if hash, ok := v.up.View().Canonical(number); ok {
		h := common.HexToHash(hash)
		if _, ok := v.trust.Trusted(h); ok {
			return h, nil
		}
	} else if h, ok := v.trustedAt(number); ok {
		return h, nil
	}
	return v.quorumAt(ctx, number)
}

// quorumAt asks every node for its hash at a height (one ask per height
// at a time; later callers wait for it) and trusts the quorum's.
func (v *verifyBase) quorumAt(ctx context.Context, number uint64) (common.Hash, error) {
	for {
		v.mu.Lock()
		wait, busy := v.pending[number]
		if !busy {
			wait = make(chan struct{})
			v.pending[number] = wait
		}
		v.mu.Unlock()
		if busy {
			select {
			case <-wait:
			case <-ctx.Done():
				return common.Hash{}, ctx.Err()
			}
			if hash, ok := v.up.View().Canonical(number); ok {
				if _, ok := v.trust.Trusted(common.HexToHash(hash)); ok {
					return common.HexToHash(hash), nil
				}
			}
			if hash, ok := v.trustedAt(number); ok {
				return hash, nil
			}
			continue
		}
		method, params := v.heightAsk(number)
		reports := v.askAll(ctx, method, params, v.hashOf)
		hash, ok := v.trust.Quorum(number, reports, v.quorum)
		v.mu.Lock()
		delete(v.pending, number)
		v.mu.Unlock()
		close(wait)
		if !ok {
			return common.Hash{}, &verify.UnverifiableError{What: "block " + strconv.FormatUint(number, 10),
				Reason: fmt.Sprintf("fewer than %d of %d nodes report one hash for it", v.quorum, len(v.up.Names()))}
		}
		v.trustedNumber(number, hash)
		return hash, nil
	}
}

// trustedNumber notes the hash trusted at a height (by quorum,
// checkpoint or link), keeping the newest 8,192 heights.
func (v *verifyBase) trustedNumber(number uint64, hash common.Hash) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byNumber == nil {
		v.byNumber = map[uint64]common.Hash{}
	}
	v.byNumber[number] = hash
	if len(v.byNumber) > 8192 {
		for n := range v.byNumber {
			if n+8192 < number {
				delete(v.byNumber, n)
			}
		}
	}
}

// link extends trust from a verified header to its parent, and notes the
// parent's height.
func (v *verifier) link(h *verify.Header) {
	v.linkParent(h.Hash(), h.Number(), h.Eth().ParentHash)
}

// linkParent extends trust from a verified header (its hash, number and
// parent hash) to its parent, and notes the parent's height.
func (v *verifyBase) linkParent(hash common.Hash, number uint64, parent common.Hash) {
	if v.trust.LinkParent(hash, number, parent) && number > 0 {
		v.trustedNumber(number-1, parent)
	}
}

// trustedAt returns the hash trusted at a height, if any.
func (v *verifyBase) trustedAt(number uint64) (common.Hash, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h, ok := v.byNumber[number]
	return h, ok
}

// blockHashOf reads the hash of a block answer.
func blockHashOf(res jsontext.Value) (common.Hash, bool) {
	var b struct {
		Hash *common.Hash `json:"hash"`
	}
	if json.Unmarshal(res, &b) != nil || b.Hash == nil {
		return common.Hash{}, false
	}
	return *b.Hash, true
}

// fetchHeader returns the verified header of a trusted hash, from the
// ones kept or from a node (its fields checked against the hash; a node
// whose fields do not hash to it is at fault). Trust extends to its
// parent.
func (v *verifier) fetchHeader(ctx context.Context, hash common.Hash) (*verify.Header, error) {
	if h, ok := v.headers.GetIfPresent(hash); ok {
		return h, hold(ctx, headerBytes)
	}
	return oneFetch(&v.verifyBase, ctx, hash, func(ctx context.Context) (*verify.Header, error) {
		var h *verify.Header
		_, err := v.do(ctx, "eth_getBlockByHash", jsontext.Value(`["`+hash.Hex()+`",false]`), func(res jsontext.Value) error {
			if res.Kind() == 'n' {
				return fmt.Errorf("no block %s: %w", hash.Hex(), upstream.ErrMissing)
			}
			got, err := verify.VerifyHeader(res, hash)
			if err != nil {
				return err
			}
			h = got
			return nil
		})
		if err != nil {
			return nil, err
		}
		v.headers.Set(hash, h)
		v.link(h)
		return h, nil
	})
}

// oneFetch reads the header of a hash once however many calls want it at
// the same time: a call that arrives while the read runs (the head
// follower's, or another call's) waits for its outcome instead of asking
// a node again. A waiter whose own context is still live reads again
// itself when the read it waited for ended with its caller's context.
func oneFetch[T any](b *verifyBase, ctx context.Context, hash common.Hash, fetch func(context.Context) (T, error)) (T, error) {
	ch := b.headerFetches.DoChan(string(hash[:]), func() (any, error) { return fetch(ctx) })
	var zero T
	select {
	case r := <-ch:
		if r.Err != nil {
			if ctx.Err() == nil && (errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) {
				return fetch(ctx)
			}
			return zero, r.Err
		}
		return r.Val.(T), nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// do sends a node call whose answer check judges: a node whose answer
// fails it is at fault (benched, counted, logged) and the next node is
// asked. It returns the answer that passed.
func (v *verifyBase) do(ctx context.Context, method string, params jsontext.Value, check func(jsontext.Value) error) (jsontext.Value, error) {
	served := ""
	res, err := v.up.Do(ctx, upstream.Request{Method: method, Params: params, Served: &served, Check: func(node string, res jsontext.Value) error {
		err := check(res)
		switch {
		case err == nil, errors.Is(err, upstream.ErrMissing):
		case errors.Is(err, verify.ErrUnverifiable):
			// Nobody's fault: the next node is asked, none is benched.
			err = fmt.Errorf("%w: %w", upstream.ErrMissing, err)
		default:
			v.fault(node, method, err)
		}
		return err
	}}, nil)
	return res, err
}

// fault records a node's wrong answer: a counter per node and method,
// and a log line naming node, method and what did not match.
func (v *verifyBase) fault(node, method string, err error) {
	v.metrics.VerifyFault(v.network, node, method)
	v.log.Warn("wrong answer from node", "network", v.network, "node", node, "method", method, "mismatch", err.Error())
}

func hexNumber(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

// perNode keeps what each node's answer was checked into, since a hedged
// call may check two answers at once; the one returned is the served
// node's.
type perNode[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

func (p *perNode[T]) set(node string, t T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]T{}
	}
	p.m[node] = t
}

func (p *perNode[T]) get(node string) T {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[node]
}

// doChecked is do for checks that produce a value.
func doChecked[T any](fv familyVerifier, ctx context.Context, method string, params jsontext.Value, check func(jsontext.Value) (T, error)) (T, string, error) {
	v := fv.base()
	var got perNode[T]
	served := ""
	_, err := v.up.Do(ctx, upstream.Request{Method: method, Params: params, Served: &served, Check: func(node string, res jsontext.Value) error {
		if res.Kind() == 'n' {
			return fmt.Errorf("%s answered null: %w", method, upstream.ErrMissing)
		}
		t, err := check(res)
		switch {
		case err == nil:
			got.set(node, t)
		case errors.Is(err, upstream.ErrMissing):
		case errors.Is(err, verify.ErrUnverifiable):
			err = fmt.Errorf("%w: %w", upstream.ErrMissing, err)
		default:
			v.fault(node, method, err)
		}
		return err
	}}, nil)
	if err != nil {
		var zero T
		return zero, "", err
	}
	return got.get(served), served, nil
}
