package verify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/sync/singleflight"

	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/upstream"
)

// Verifier is one family's checks on a verifying network: the network
// calls it, the family builds it (a New, registered with the family in
// package families).
type Verifier interface {
	// Ready prepares what the checks need once (chain rules, the
	// checkpoint's header); an error refuses the call or passes it on
	// unverified, as the network's mode says.
	Ready(ctx context.Context) error
	// Method is the handler of a method the family can verify.
	Method(name string) (Handler, bool)
	// TrustHead earns trust in the header at a new head's height and
	// keeps it, before any call asks for it.
	TrustHead(ctx context.Context, number uint64) error
}

// Handler answers one method from checked node answers; params are the
// call's params after its tag was pinned.
type Handler func(ctx context.Context, params jsontext.Value) (jsontext.Value, error)

// New builds a family's verifier from what the network gives it. It
// must not call the nodes: Env.Nodes may be nil, for a verifier that
// cannot run and only says which methods it would check.
type New func(Env) (Verifier, error)

// Nodes is what a verifier needs of a network's nodes: the call path's
// Do, each node by name (a quorum of hashes is what each one says), a
// way to bench a node whose answer was found wrong after it was taken,
// and the served chain. The network gives its nodes with every node call
// a verified call makes charged and held to the call's memory budget.
type Nodes interface {
	Do(ctx context.Context, req upstream.Request, dst []byte) (jsontext.Value, error)
	Names() []string
	Ask(ctx context.Context, node, method string, params jsontext.Value) (jsontext.Value, error)
	Fault(node string)
	View() *chainview.View
}

// Env is what a network gives its family's verifier.
type Env struct {
	// Network names the network in logs and metrics.
	Network string
	// Nodes are the network's nodes; nil when the verifier cannot run.
	Nodes Nodes
	// Quorum is how many nodes must report one hash for a height.
	Quorum int
	// Checkpoint, when set, is a block hash trusted for good.
	Checkpoint string
	// ChainID is the chain's id for its rules; 0 means the one a quorum
	// of nodes reports.
	ChainID uint64
	// Window is how many blocks of a verified log range are checked at
	// once (the network's node_range); nil or 0 means the family's
	// default.
	Window func() uint64
	// Log receives the verifier's events; Metrics counts node faults.
	Log     *slog.Logger
	Metrics *metrics.Metrics
}

// Base is what every family's verifier shares: the network's nodes, the
// hashes it trusts and why (a quorum of nodes, the checkpoint, a parent
// link), and one quorum ask per height at a time.
type Base struct {
	Network string
	Up      Nodes
	Trust   *Trust
	Quorum  int
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// heightAsk is the node call whose answer names the hash of the block
	// at a height, and hashOf reads that hash from it.
	heightAsk func(number uint64) (method string, params jsontext.Value)
	hashOf    func(jsontext.Value) (common.Hash, bool)

	// headerFetches are header reads in flight, by hash (OneFetch).
	headerFetches singleflight.Group

	mu       sync.Mutex
	pending  map[uint64]chan struct{} // quorum asks in flight, by height
	byNumber map[uint64]common.Hash   // the hashes quorums trusted
}

// Init sets the base up from env: heightAsk is the node call whose
// answer names the hash of the block at a height, hashOf reads that hash
// from it.
func (b *Base) Init(env Env, heightAsk func(number uint64) (method string, params jsontext.Value), hashOf func(jsontext.Value) (common.Hash, bool)) {
	b.Network, b.Up, b.Trust, b.Quorum, b.Log, b.Metrics = env.Network, env.Nodes, NewTrust(0), env.Quorum, env.Log, env.Metrics
	if b.Log == nil {
		b.Log = slog.New(slog.DiscardHandler)
	}
	b.heightAsk, b.hashOf = heightAsk, hashOf
	b.pending = map[uint64]chan struct{}{}
}

// AskAll asks every node the same question and keeps what read parses of
// each answer, by node.
func (b *Base) AskAll(ctx context.Context, method string, params jsontext.Value, read func(jsontext.Value) (common.Hash, bool)) map[string]common.Hash {
	names := b.Up.Names()
	type report struct {
		node string
		hash common.Hash
		ok   bool
	}
	ch := make(chan report, len(names))
	for _, node := range names {
		go func() {
			res, err := b.Up.Ask(ctx, node, method, params)
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

// TrustedHashAt returns the hash trusted at a height: the served chain's
// hash there if it is trusted already, else (below the view, which keeps
// blocks back to finalized only) the hash a quorum, the checkpoint or a
// parent link trusted there, else the hash a quorum of nodes reports now.
func (b *Base) TrustedHashAt(ctx context.Context, number uint64) (common.Hash, error) {
	if hash, ok := b.Up.View().Canonical(number); ok {
		h := common.HexToHash(hash)
		if _, ok := b.Trust.Trusted(h); ok {
			return h, nil
		}
	} else if h, ok := b.TrustedAt(number); ok {
		return h, nil
	}
	return b.QuorumAt(ctx, number)
}

// QuorumAt asks every node for its hash at a height (one ask per height
// at a time; later callers wait for it) and trusts the quorum's.
func (b *Base) QuorumAt(ctx context.Context, number uint64) (common.Hash, error) {
	for {
		b.mu.Lock()
		wait, busy := b.pending[number]
		if !busy {
			wait = make(chan struct{})
			b.pending[number] = wait
		}
		b.mu.Unlock()
		if busy {
			select {
			case <-wait:
			case <-ctx.Done():
				return common.Hash{}, ctx.Err()
			}
			if hash, ok := b.Up.View().Canonical(number); ok {
				if _, ok := b.Trust.Trusted(common.HexToHash(hash)); ok {
					return common.HexToHash(hash), nil
				}
			}
			if hash, ok := b.TrustedAt(number); ok {
				return hash, nil
			}
			continue
		}
		method, params := b.heightAsk(number)
		reports := b.AskAll(ctx, method, params, b.hashOf)
		hash, ok := b.Trust.Quorum(number, reports, b.Quorum)
		b.mu.Lock()
		delete(b.pending, number)
		b.mu.Unlock()
		close(wait)
		if !ok {
			return common.Hash{}, &UnverifiableError{What: "block " + strconv.FormatUint(number, 10),
				Reason: fmt.Sprintf("fewer than %d of %d nodes report one hash for it", b.Quorum, len(b.Up.Names()))}
		}
		b.TrustedNumber(number, hash)
		return hash, nil
	}
}

// TrustedNumber notes the hash trusted at a height (by quorum,
// checkpoint or link), keeping the newest 8,192 heights.
func (b *Base) TrustedNumber(number uint64, hash common.Hash) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byNumber == nil {
		b.byNumber = map[uint64]common.Hash{}
	}
	b.byNumber[number] = hash
	if len(b.byNumber) > 8192 {
		for n := range b.byNumber {
			if n+8192 < number {
				delete(b.byNumber, n)
			}
		}
	}
}

// LinkParent extends trust from a verified header (its hash, number and
// parent hash) to its parent, and notes the parent's height.
func (b *Base) LinkParent(hash common.Hash, number uint64, parent common.Hash) {
	if b.Trust.LinkParent(hash, number, parent) && number > 0 {
		b.TrustedNumber(number-1, parent)
	}
}

// TrustedAt returns the hash trusted at a height, if any.
func (b *Base) TrustedAt(number uint64) (common.Hash, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.byNumber[number]
	return h, ok
}

// OneFetch reads the header of a hash once however many calls want it at
// the same time: a call that arrives while the read runs (the head
// follower's, or another call's) waits for its outcome instead of asking
// a node again. A waiter whose own context is still live reads again
// itself when the read it waited for ended with its caller's context.
func OneFetch[T any](b *Base, ctx context.Context, hash common.Hash, fetch func(context.Context) (T, error)) (T, error) {
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

// Do sends a node call whose answer check judges: a node whose answer
// fails it is at fault (benched, counted, logged) and the next node is
// asked. It returns the answer that passed.
func (b *Base) Do(ctx context.Context, method string, params jsontext.Value, check func(jsontext.Value) error) (jsontext.Value, error) {
	served := ""
	res, err := b.Up.Do(ctx, upstream.Request{Method: method, Params: params, Served: &served, Check: func(node string, res jsontext.Value) error {
		err := check(res)
		switch {
		case err == nil, errors.Is(err, upstream.ErrMissing):
		case errors.Is(err, ErrUnverifiable):
			// Nobody's fault: the next node is asked, none is benched.
			err = fmt.Errorf("%w: %w", upstream.ErrMissing, err)
		default:
			b.Fault(node, method, err)
		}
		return err
	}}, nil)
	return res, err
}

// Fault records a node's wrong answer: a counter per node and method,
// and a log line naming node, method and what did not match.
func (b *Base) Fault(node, method string, err error) {
	b.Metrics.VerifyFault(b.Network, node, method)
	b.Log.Warn("wrong answer from node", "network", b.Network, "node", node, "method", method, "mismatch", err.Error())
}

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

// DoChecked is Base.Do for checks that produce a value; it returns the
// served node's value and the node.
func DoChecked[T any](b *Base, ctx context.Context, method string, params jsontext.Value, check func(jsontext.Value) (T, error)) (T, string, error) {
	var got perNode[T]
	served := ""
	_, err := b.Up.Do(ctx, upstream.Request{Method: method, Params: params, Served: &served, Check: func(node string, res jsontext.Value) error {
		if res.Kind() == 'n' {
			return fmt.Errorf("%s answered null: %w", method, upstream.ErrMissing)
		}
		t, err := check(res)
		switch {
		case err == nil:
			got.set(node, t)
		case errors.Is(err, upstream.ErrMissing):
		case errors.Is(err, ErrUnverifiable):
			err = fmt.Errorf("%w: %w", upstream.ErrMissing, err)
		default:
			b.Fault(node, method, err)
		}
		return err
	}}, nil)
	if err != nil {
		var zero T
		return zero, "", err
	}
	return got.get(served), served, nil
}

// IsMissingOnly reports whether a failed Do failed only because nodes
// lacked the data (each answered null).
func IsMissingOnly(err error) bool {
	return errors.Is(err, upstream.ErrMissing) && !errors.Is(err, ErrUnverifiable) &&
		!errors.Is(err, ErrMismatch) && !errors.Is(err, ErrMalformed)
}

// LocalAnswer is an error answer computed over verified state (a call
// run locally that reverts): verified, though an error.
type LocalAnswer struct{ RPC *jsonrpc.Error }

func (l *LocalAnswer) Error() string { return l.RPC.Error() }
func (l *LocalAnswer) Unwrap() error { return l.RPC }

// HexNumber is a block number as the JSON-RPC quantities write it.
func HexNumber(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

// SpendError is the meter's refusal of a verification's next node call:
// the call's bound, not a gap in the nodes' data.
type SpendError struct{ Err error }

func (e *SpendError) Error() string { return e.Err.Error() }
func (e *SpendError) Unwrap() error { return e.Err }
