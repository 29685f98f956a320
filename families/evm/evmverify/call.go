package evmverify

import (
	"context"
	stdjson "encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/eth/gasestimator"
	"github.com/ethereum/go-ethereum/params"
	"github.com/maypok86/otter/v2"

	"github.com/porticohq/portico/network/verify"
)

// ProofSource is what the executor asks a node for. Each method returns
// the node's raw JSON result; the executor trusts none of it: proofs are
// verified against the header's state root, code against the proven
// code hash, and the access list only guides what to fetch first.
type ProofSource interface {
	// GetProof is eth_getProof(address, slots, block hash).
	GetProof(ctx context.Context, address common.Address, slots []common.Hash, block common.Hash) ([]byte, error)
	// GetCode is eth_getCode(address, block hash).
	GetCode(ctx context.Context, address common.Address, block common.Hash) ([]byte, error)
	// CreateAccessList is eth_createAccessList(call, block hash).
	CreateAccessList(ctx context.Context, call []byte, block common.Hash) ([]byte, error)
}

// ExecutorOptions tune an Executor; the zero value is usable.
type ExecutorOptions struct {
	// GasCap bounds a call's gas, as a node's RPC gas cap does; 0 means
	// 50,000,000 (go-ethereum's default).
	GasCap uint64
	// MaxRounds bounds how often a call is re-run after fetching state it
	// touched that was not proven yet; 0 means 8.
	MaxRounds int
	// CacheBlocks is how many blocks' verified state are kept (the ones
	// used most recently); 0 means 8.
	CacheBlocks int
	// CacheSlots bounds the proven slots kept per block, for calls and
	// (with accounts) for reads each; past it a block's state is dropped
	// and built again. 0 means 65,536.
	CacheSlots int
	// Headers returns trusted ancestors for the BLOCKHASH opcode (nil when
	// unknown). Without it, a call that reads a block hash is
	// verify.ErrUnverifiable.
	Headers func(hash common.Hash, number uint64) *Header
	// MaxFetches bounds the accounts fetched at once for one call; 0
	// means 16.
	MaxFetches int
	// MaxAccounts bounds the accounts one round of a call may need; a
	// call past it is verify.ErrUnverifiable. 0 means 1024.
	MaxAccounts int
	// CodeCacheBytes bounds the verified code kept across blocks; 0
	// means 64 MiB.
	CodeCacheBytes uint64
	// ErrorRatio is the gas estimate's allowed overshoot, as go-ethereum's
	// estimator takes it (geth's eth_estimateGas uses 0.015); 0 finds the
	// exact least gas, as anvil does.
	ErrorRatio float64
}

// Executor runs eth_call and eth_estimateGas locally with go-ethereum's
// EVM over state fetched from a node and verified with proofs, so the
// answer does not rest on the node's word. The state read for a block is
// kept (bounded), so repeated calls at one block fetch nothing new. It is
// safe for concurrent use.
type Executor struct {
	chain *Chain
	src   ProofSource
	opts  ExecutorOptions

	mu     sync.Mutex
	blocks map[common.Hash]*blockState
	order  []common.Hash                             // oldest first
	code   *otter.Cache[common.Hash, []byte]         // verified code by hash, across blocks (code is immutable)
	codeOf *otter.Cache[common.Address, common.Hash] // the code hash an address last had: a hint only
}

// NewExecutor returns an executor for the chain, fetching from src.
func NewExecutor(chain *Chain, src ProofSource, opts ExecutorOptions) *Executor {
	if opts.GasCap == 0 {
		opts.GasCap = 50_000_000
	}
	if opts.MaxRounds == 0 {
		opts.MaxRounds = 8
	}
	if opts.CacheBlocks == 0 {
		opts.CacheBlocks = 8
	}
	if opts.CacheSlots == 0 {
		opts.CacheSlots = 1 << 16
	}
	if opts.MaxFetches == 0 {
		opts.MaxFetches = 16
	}
	if opts.MaxAccounts == 0 {
		opts.MaxAccounts = 1024
	}
	if opts.CodeCacheBytes == 0 {
		opts.CodeCacheBytes = 64 << 20
	}
	return &Executor{
		chain: chain, src: src, opts: opts, blocks: make(map[common.Hash]*blockState),
		code: otter.Must(&otter.Options[common.Hash, []byte]{
			MaximumWeight: opts.CodeCacheBytes,
			Weigher:       func(_ common.Hash, c []byte) uint32 { return uint32(min(len(c)+32, 1<<31)) },
		}),
		codeOf: otter.Must(&otter.Options[common.Address, common.Hash]{MaximumSize: 1 << 16}),
	}
}

// CallError is a call's failure in the shape a node answers it:
// go-ethereum's code 3 "execution reverted" with the revert data, or
// -32000 with the EVM's error. It implements the ErrorCode and ErrorData
// methods JSON-RPC servers render errors with.
type CallError struct {
	Code    int
	Message string
	Data    string // hex revert data; empty when none
}

func (e *CallError) Error() string { return e.Message }

// ErrorCode is the JSON-RPC error code.
func (e *CallError) ErrorCode() int { return e.Code }

// ErrorData is the JSON-RPC error's data member (nil when none).
func (e *CallError) ErrorData() any {
	if e.Data == "" {
		return nil
	}
	return e.Data
}

func revertError(data []byte) *CallError {
	msg := vm.ErrExecutionReverted.Error()
	if reason, err := abi.UnpackRevert(data); err == nil {
		msg += ": " + reason
	}
	return &CallError{Code: 3, Message: msg, Data: hexutil.Encode(data)}
}

// Call answers eth_call for the call object at the trusted header h: the
// node's JSON result (a hex string) computed locally, or a *CallError as
// the node would give it, or an error of this package when the state
// could not be fetched or verified.
func (e *Executor) Call(ctx context.Context, h *Header, call []byte) ([]byte, error) {
	args, err := ParseCallArgs(call)
	if err != nil {
		return nil, malformed("call", err)
	}
	res, msg, err := e.converge(ctx, h, e.block(h), call, args, 0)
	if err != nil {
		return nil, err
	}
	if res.applyErr != nil {
		return nil, &CallError{Code: -32000, Message: fmt.Sprintf("err: %v (supplied gas %d)", res.applyErr, msg.GasLimit)}
	}
	if r := res.result; r.Err != nil {
		if len(r.Revert()) > 0 {
			return nil, revertError(r.Revert())
		}
		return nil, &CallError{Code: -32000, Message: r.Err.Error()}
	}
	return stdjson.Marshal(hexutil.Bytes(res.result.Return()))
}

// EstimateGas answers eth_estimateGas at the trusted header h, with
// go-ethereum's estimator over verified state.
func (e *Executor) EstimateGas(ctx context.Context, h *Header, call []byte) ([]byte, error) {
	args, err := ParseCallArgs(call)
	if err != nil {
		return nil, malformed("call", err)
	}
	for range e.opts.MaxRounds {
		// Fetch what the call touches with all the gas it may have, then
		// estimate over that state; a run at the estimate must touch
		// nothing new, or the state grows and the estimate is made again.
		bs := e.block(h)
		if _, _, err := e.converge(ctx, h, bs, call, args, 0); err != nil {
			return nil, err
		}
		st, err := bs.open()
		if err != nil {
			return nil, err
		}
		msg := args.message(h.eth.BaseFee, st.GetNonce(args.from()), e.opts.GasCap)
		opts := &gasestimator.Options{Config: e.chain.config, Chain: e.chainContext(), Header: h.eth, State: st, ErrorRatio: e.opts.ErrorRatio}
		est, revert, err := gasestimator.Estimate(ctx, msg, opts, e.opts.GasCap)
		if err != nil {
			if len(revert) > 0 {
				return nil, revertError(revert)
			}
			return nil, &CallError{Code: -32000, Message: err.Error()}
		}
		if n, err := e.track(ctx, h, bs, args, est); err != nil {
			return nil, err
		} else if n == 0 {
			return stdjson.Marshal(hexutil.Uint64(est))
		}
	}
	return nil, &verify.UnverifiableError{What: "estimateGas", Reason: fmt.Sprintf("state still incomplete after %d rounds", e.opts.MaxRounds)}
}

// runResult is one local run.
type runResult struct {
	result    *core.ExecutionResult
	applyErr  error // the message could not be applied at all
	headerGap bool  // BLOCKHASH asked for a header we do not trust
}

// converge runs the call until it touches nothing unproven: each round
// fetches, with proofs, what the last run touched (and, the first time,
// what the node's access list names), then runs again. gas, when not 0,
// overrides the call's gas.
// The call keeps using bs even if the executor drops it from its cache
// meanwhile (a state past CacheSlots).
func (e *Executor) converge(ctx context.Context, h *Header, bs *blockState, raw []byte, args *CallArgs, gas uint64) (*runResult, *core.Message, error) {
	askedList := false
	for range e.opts.MaxRounds {
		res, msg, need, err := e.runTracked(ctx, h, bs, args, gas)
		if err != nil {
			return nil, nil, err
		}
		if len(need) == 0 {
			if res.headerGap {
				return nil, nil, &verify.UnverifiableError{What: "call", Reason: "it reads a block hash with no trusted header"}
			}
			return res, msg, nil
		}
		if !askedList {
			askedList = true
			e.addAccessList(ctx, h, bs, raw, need)
		}
		if err := e.fetch(ctx, h, bs, need); err != nil {
			return nil, nil, err
		}
	}
	return nil, nil, &verify.UnverifiableError{What: "call", Reason: fmt.Sprintf("state still incomplete after %d rounds", e.opts.MaxRounds)}
}

// track runs once, fetches what it touched that was missing and says
// how much that was: EstimateGas's check of its estimate.
func (e *Executor) track(ctx context.Context, h *Header, bs *blockState, args *CallArgs, gas uint64) (int, error) {
	_, _, need, err := e.runTracked(ctx, h, bs, args, gas)
	if err != nil {
		return 0, err
	}
	if len(need) > 0 {
		if err := e.fetch(ctx, h, bs, need); err != nil {
			return 0, err
		}
	}
	return len(need), nil
}

func (e *Executor) runTracked(ctx context.Context, h *Header, bs *blockState, args *CallArgs, gas uint64) (*runResult, *core.Message, map[common.Address][]common.Hash, error) {
	st, err := bs.open()
	if err != nil {
		return nil, nil, nil, err
	}
	t := &tracked{StateDB: st, seen: make(map[common.Address]map[common.Hash]struct{})}
	if args.From != nil {
		t.acc(*args.From)
	}
	if args.To != nil {
		t.acc(*args.To)
	}
	msg := args.message(h.eth.BaseFee, t.GetNonce(args.from()), e.opts.GasCap)
	if gas != 0 {
		msg.GasLimit = gas
	}
	res := e.run(ctx, h, msg, t)
	return res, msg, bs.missing(t.seen), nil
}

// run executes the message once, as a node's eth_call does.
func (e *Executor) run(ctx context.Context, h *Header, msg *core.Message, st vm.StateDB) *runResult {
	hdr := h.eth
	cc := e.chainContext()
	bctx := core.NewEVMBlockContext(hdr, cc, &hdr.Coinbase)
	if msg.GasPrice.Sign() == 0 {
		bctx.BaseFee = new(big.Int)
	}
	if msg.BlobGasFeeCap != nil && msg.BlobGasFeeCap.BitLen() == 0 {
		bctx.BlobBaseFee = new(big.Int)
	}
	evm := vm.NewEVM(bctx, st, e.chain.config, vm.Config{NoBaseFee: true})
	defer evm.Release()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			evm.Cancel()
		case <-done:
		}
	}()
	result, err := core.ApplyMessage(evm, msg, nil)
	return &runResult{result: result, applyErr: err, headerGap: cc.gap}
}

// addAccessList adds the node's access list for the call to need. The
// list is a hint: a wrong one costs rounds, never correctness.
func (e *Executor) addAccessList(ctx context.Context, h *Header, bs *blockState, raw []byte, need map[common.Address][]common.Hash) {
	out, err := e.src.CreateAccessList(ctx, raw, h.hash)
	if err != nil {
		return
	}
	var al struct {
		AccessList types.AccessList `json:"accessList"`
	}
	if stdjson.Unmarshal(out, &al) != nil {
		return
	}
	want := make(map[common.Address]map[common.Hash]struct{})
	for _, t := range al.AccessList {
		want[t.Address] = make(map[common.Hash]struct{})
		for _, s := range t.StorageKeys {
			want[t.Address][s] = struct{}{}
		}
	}
	for a, slots := range bs.missing(want) {
		need[a] = append(need[a], slots...)
	}
}

// fetch gets and verifies proofs (and code) for what is needed, one
// request per account, all at once, and adds them to the block's state.
func (e *Executor) fetch(ctx context.Context, h *Header, bs *blockState, need map[common.Address][]common.Hash) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type got struct {
		acc  *Account
		code []byte
		err  error
	}
	if len(need) > e.opts.MaxAccounts {
		return &verify.UnverifiableError{What: "call", Reason: fmt.Sprintf("it touches %d accounts in one round, over the bound of %d", len(need), e.opts.MaxAccounts)}
	}
	results := make(chan got, len(need))
	slotsFree := make(chan struct{}, e.opts.MaxFetches)
	for a, slots := range need {
		slots = dedupe(slots)
		go func() {
			select {
			case slotsFree <- struct{}{}:
				defer func() { <-slotsFree }()
			case <-ctx.Done():
				results <- got{err: ctx.Err()}
				return
			}
			acc, code, err := e.fetchAccount(ctx, h, a, slots)
			results <- got{acc, code, err}
		}()
	}
	accs := make([]*Account, 0, len(need))
	codes := make(map[common.Hash][]byte)
	var first error
	for range need {
		g := <-results
		if g.err != nil {
			if first == nil {
				first = g.err
				cancel()
			}
			continue
		}
		accs = append(accs, g.acc)
		if g.code != nil {
			codes[g.acc.CodeHash] = g.code
		}
	}
	if first != nil {
		return first
	}
	n, err := bs.add(accs, codes)
	if err != nil {
		return err
	}
	if n > e.opts.CacheSlots {
		e.drop(h.hash, bs) // later calls start afresh; this one keeps bs
	}
	return nil
}

// fetchAccount gets and verifies one account's proof and, when it has
// code not cached yet, its code. The code is asked for at the same time
// as the proof unless the address is known (from an earlier block) to
// have no code or cached code: one round trip instead of two, at the
// price of an unneeded eth_getCode for an account seen for the first
// time that turns out to have no code.
func (e *Executor) fetchAccount(ctx context.Context, h *Header, a common.Address, slots []common.Hash) (*Account, []byte, error) {
	type codeAnswer struct {
		raw []byte
		err error
	}
	var early chan codeAnswer
	if hint, ok := e.codeOf.GetIfPresent(a); !ok || !e.haveCode(hint) {
		early = make(chan codeAnswer, 1)
		go func() {
			raw, err := e.src.GetCode(ctx, a, h.hash)
			early <- codeAnswer{raw, err}
		}()
	}
	raw, err := e.src.GetProof(ctx, a, slots, h.hash)
	if err != nil {
		return nil, nil, &verify.FetchError{What: "eth_getProof " + a.Hex(), Err: err}
	}
	acc, err := VerifyProof(raw, h.eth.Root, a, slots)
	if err != nil {
		return nil, nil, err
	}
	e.codeOf.Set(a, acc.CodeHash)
	if acc.CodeHash == types.EmptyCodeHash {
		return acc, nil, nil
	}
	if c, ok := e.code.GetIfPresent(acc.CodeHash); ok {
		return acc, c, nil
	}
	if early != nil {
		ans := <-early
		raw, err = ans.raw, ans.err
	} else {
		raw, err = e.src.GetCode(ctx, a, h.hash)
	}
	if err != nil {
		return nil, nil, &verify.FetchError{What: "eth_getCode " + a.Hex(), Err: err}
	}
	code, err := VerifyCode(raw, acc)
	if err != nil {
		return nil, nil, err
	}
	e.code.Set(acc.CodeHash, code)
	return acc, code, nil
}

// Prove checks a node's eth_getProof answer for address and slots
// against the trusted header h's state root, as VerifyProof does, and
// keeps what it proved with the block's verified state, so that a later
// read of the same account and slots at h (Proven) needs no node.
func (e *Executor) Prove(raw []byte, h *Header, address common.Address, slots []common.Hash) (*Account, error) {
	acc, err := VerifyProof(raw, h.eth.Root, address, slots)
	if err != nil {
		return nil, err
	}
	bs := e.block(h)
	bs.mu.Lock()
	n := bs.remember(acc)
	bs.mu.Unlock()
	if n > e.opts.CacheSlots {
		e.drop(h.hash, bs)
	}
	return acc, nil
}

// Proven returns the account and slots as proven at the trusted header
// h before (by Prove, or by a call's fetch), or false when any of them
// was not, or the block's state is no longer kept. The Account is a copy
// the caller owns.
func (e *Executor) Proven(h *Header, address common.Address, slots []common.Hash) (*Account, bool) {
	e.mu.Lock()
	bs := e.blocks[h.hash]
	if bs != nil {
		e.touch(h.hash)
	}
	e.mu.Unlock()
	if bs == nil {
		return nil, false
	}
	return bs.proven(address, slots)
}

// haveCode reports whether code with this hash needs no fetch.
func (e *Executor) haveCode(hash common.Hash) bool {
	if hash == types.EmptyCodeHash {
		return true
	}
	_, ok := e.code.GetIfPresent(hash)
	return ok
}

func dedupe(s []common.Hash) []common.Hash {
	seen := make(map[common.Hash]bool, len(s))
	out := s[:0:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// block returns the block's verified state, making it (and evicting the
// one used least recently) when new. Least recently used rather than
// oldest: reads spread over many past blocks then do not push out the
// head's state that calls and reads keep coming back to.
func (e *Executor) block(h *Header) *blockState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if bs, ok := e.blocks[h.hash]; ok {
		e.touch(h.hash)
		return bs
	}
	bs := newBlockState()
	e.blocks[h.hash] = bs
	e.order = append(e.order, h.hash)
	for len(e.order) > e.opts.CacheBlocks {
		delete(e.blocks, e.order[0])
		e.order = e.order[1:]
	}
	return bs
}

// touch moves a kept block to the newest end of order; e.mu is held.
func (e *Executor) touch(hash common.Hash) {
	if i := slices.Index(e.order, hash); i >= 0 && i < len(e.order)-1 {
		e.order = append(append(e.order[:i], e.order[i+1:]...), hash)
	}
}

func (e *Executor) drop(hash common.Hash, bs *blockState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.blocks[hash] != bs {
		return // already replaced
	}
	delete(e.blocks, hash)
	for i, x := range e.order {
		if x == hash {
			e.order = append(e.order[:i], e.order[i+1:]...)
			break
		}
	}
}

// chainCtx gives the EVM trusted ancestors for BLOCKHASH and notes when
// one was asked for and not known.
type chainCtx struct {
	config  *params.ChainConfig
	headers func(common.Hash, uint64) *Header
	engine  consensus.Engine
	gap     bool
}

func (e *Executor) chainContext() *chainCtx {
	return &chainCtx{config: e.chain.config, headers: e.opts.Headers, engine: beacon.New(ethash.NewFaker())}
}

func (c *chainCtx) Config() *params.ChainConfig               { return c.config }
func (c *chainCtx) CurrentHeader() *types.Header              { return nil }
func (c *chainCtx) Engine() consensus.Engine                  { return c.engine }
func (c *chainCtx) GetHeaderByNumber(uint64) *types.Header    { c.gap = true; return nil }
func (c *chainCtx) GetHeaderByHash(common.Hash) *types.Header { c.gap = true; return nil }
func (c *chainCtx) GetHeader(hash common.Hash, number uint64) *types.Header {
	if c.headers != nil {
		if h := c.headers(hash, number); h != nil && h.hash == hash {
			return h.eth
		}
	}
	c.gap = true
	return nil
}

var _ core.ChainContext = (*chainCtx)(nil)
