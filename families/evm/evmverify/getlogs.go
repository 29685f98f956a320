package evmverify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// maxVerifiedLogRange bounds the blocks one verified eth_getLogs covers:
// each needs its trusted header, and each whose bloom may match its
// block and receipts. A wider range is not verified (with verify: on it is
// passed on as an unverified log query, bounded and split as one).
const maxVerifiedLogRange = 10_000

// defaultLogWindow is how many blocks of a verified log range are checked
// at once on a network that does not split log queries (node_range 0).
const defaultLogWindow = 1000

// getLogs checks a node's eth_getLogs answer against the receipts of
// every block of the range whose trusted bloom may match. The range is
// checked a window (node_range blocks) at a time, from its top down: the
// window's headers, trusted by parent links from the one above it, the
// receipts of its blocks whose bloom may match, fetched while the node
// answers the query over the window (of each block only the logs the
// filter matches are kept), and the node's answer; then all of it is let
// go but the window's verified logs. So a verification holds one
// window's headers and at most 8 blocks' receipts at a time, whatever
// the range, and more headers than the verifier keeps cost node calls,
// which are charged (verifywork.go), not memory.
func (v *verifier) getLogs(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	ps, err := splitParams(params)
	if err != nil || len(ps) != 1 {
		return nil, unverifiable("params", "want one filter object")
	}
	q, err := ParseFilter(ps[0])
	if err != nil {
		return nil, unverifiable("filter", err.Error())
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(ps[0], &fields) != nil {
		return nil, unverifiable("filter", "not an object")
	}
	if q.BlockHash != nil {
		h, err := v.trustHash(ctx, *q.BlockHash)
		if err != nil {
			return nil, err
		}
		return v.windowLogs(ctx, fields, q, []*Header{h}, false)
	}
	from, err := v.parseBlock(fields["fromBlock"])
	if err != nil {
		return nil, err
	}
	to, err := v.parseBlock(fields["toBlock"])
	if err != nil {
		return nil, err
	}
	if from.byHash || to.byHash {
		return nil, unverifiable("filter", "fromBlock and toBlock must be numbers or tags")
	}
	if to.number < from.number {
		return nil, unverifiable("filter", "empty range")
	}
	if to.number-from.number >= maxVerifiedLogRange {
		return nil, unverifiable("filter", fmt.Sprintf("a range of more than %d blocks", maxVerifiedLogRange))
	}
	top, err := v.headerAt(ctx, to.number)
	if err != nil {
		return nil, err
	}
	size := uint64(defaultLogWindow)
	if v.window != nil && v.window() > 0 {
		size = v.window()
	}
	var parts [][]byte // each window's verified logs, the top window first
	for hi := to.number; ; {
		lo := from.number
		if hi-lo+1 > size {
			lo = hi - size + 1
		}
		wctx, held := verify.SubHolding(ctx)
		logs, below, err := v.logWindow(wctx, fields, q, top, lo, lo > from.number)
		held.Release()
		if err != nil {
			return nil, err
		}
		// The window's logs are the answer's: held until the call ends.
		if err := verify.Hold(ctx, int64(len(logs))); err != nil {
			return nil, err
		}
		parts = append(parts, logs)
		if lo == from.number {
			break
		}
		hi, top = lo-1, below
	}
	return joinLogs(parts), nil
}

// logWindow checks the logs of blocks lo up to top's, top trusted, and
// returns them with, when more windows follow, the trusted header below
// lo (trusted by lo's parent link).
func (v *verifier) logWindow(ctx context.Context, fields map[string]json.RawMessage, q ethereum.FilterQuery, top *Header, lo uint64, more bool) (jsontext.Value, *Header, error) {
	headers, err := v.headersDown(ctx, top, lo)
	if err != nil {
		return nil, nil, err
	}
	logs, err := v.windowLogs(ctx, fields, q, headers, true)
	if err != nil || !more {
		return logs, nil, err
	}
	v.link(headers[0])
	below, err := v.fetchHeader(ctx, headers[0].Eth().ParentHash)
	return logs, below, err
}

// joinLogs merges the windows' log lists, given top window first, into
// one list in block order.
func joinLogs(parts [][]byte) jsontext.Value {
	out := []byte{'['}
	for i := len(parts) - 1; i >= 0; i-- {
		inner := bytes.TrimSpace(parts[i])
		inner = bytes.TrimSpace(inner[1 : len(inner)-1])
		if len(inner) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, ']')
}

// windowLogs checks the node's eth_getLogs answer over headers (a range
// of trusted headers, ascending, or one header for a blockHash filter)
// against the receipts of the blocks whose bloom may match, fetched while
// the node answers. With byRange the node is asked about the headers'
// numbers; else fields are sent as they are.
func (v *verifier) windowLogs(ctx context.Context, fields map[string]json.RawMessage, q ethereum.FilterQuery, headers []*Header, byRange bool) (jsontext.Value, error) {
	if byRange {
		ask := make(map[string]json.RawMessage, len(fields))
		for k, x := range fields {
			ask[k] = x
		}
		// The node is asked about the window's numbers.
		ask["fromBlock"], _ = json.Marshal(verify.HexNumber(headers[0].Number()))
		ask["toBlock"], _ = json.Marshal(verify.HexNumber(headers[len(headers)-1].Number()))
		fields = ask
	}
	filter, _ := json.Marshal(fields)

	// The receipts of the blocks whose bloom may match, fetched at once
	// while the node answers the query. Of each, only the logs the
	// filter matches are kept: a block and its receipts are held while
	// they are read and checked, then let go (they stay in the kept
	// blocks and receipts, which are bounded apart).
	type fetched struct {
		want map[common.Hash][]*types.Log
		err  error
	}
	ready := make(chan fetched, 1)
	go func() {
		var mu sync.Mutex
		want := map[common.Hash][]*types.Log{}
		var first error
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, h := range headers {
			if !MayHaveLogs(h, q) {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				bctx, held := verify.SubHolding(ctx)
				b, err := v.block(bctx, h.Hash())
				var logs []*types.Log
				if err == nil {
					var rs *Receipts
					if rs, err = v.receiptsOf(bctx, b); err == nil {
						logs, err = ExpectedLogs(q, h, rs)
					}
				}
				held.Release()
				if err == nil {
					err = verify.Hold(ctx, LogsSize(logs))
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil && first == nil {
					first = err
				}
				want[h.Hash()] = logs
			})
		}
		wg.Wait()
		ready <- fetched{want, first}
	}()
	var (
		once sync.Once
		got  fetched
	)
	receipts := func() fetched {
		once.Do(func() { got = <-ready })
		return got
	}
	out, _, err := verify.DoChecked(&v.Base, ctx, "eth_getLogs", jsontext.Value(`[`+string(filter)+`]`), func(res jsontext.Value) (jsontext.Value, error) {
		f := receipts()
		if f.err != nil {
			// Not this node's fault: the receipts could not be had.
			return nil, fmt.Errorf("%w: %w", upstream.ErrMissing, f.err)
		}
		var want []*types.Log
		for _, h := range headers {
			if MayHaveLogs(h, q) {
				want = append(want, f.want[h.Hash()]...)
			}
		}
		return CheckLogs(res, want)
	})
	if err != nil {
		if f := receipts(); f.err != nil && !errors.Is(err, verify.ErrMismatch) {
			return nil, f.err
		}
		return nil, err
	}
	return out, nil
}

// headersDown returns the trusted headers from up to top's, ascending,
// top trusted: the others by parent links down from it. The served
// chain's hashes let them be read at once; the links are checked before
// any is trusted.
func (v *verifier) headersDown(ctx context.Context, top *Header, from uint64) ([]*Header, error) {
	to := top.Number()
	out := make([]*Header, to-from+1)
	out[len(out)-1] = top
	view := v.Up.View()
	hashes := make([]common.Hash, len(out))
	all := true
	for i := range out[:len(out)-1] {
		h, ok := view.Canonical(from + uint64(i))
		if !ok {
			all = false
			break
		}
		hashes[i] = common.HexToHash(h)
	}
	if all && len(out) > 1 {
		errs := make([]error, len(out)-1)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := range out[:len(out)-1] {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				out[i], errs[i] = v.fetchHeader(ctx, hashes[i])
			})
		}
		wg.Wait()
		err := errors.Join(errs...)
		var spent *verify.SpendError
		var limit *portico.LimitError
		if errors.As(err, &spent) || errors.As(err, &limit) {
			return nil, err // the call's bounds, not a gap in the view
		}
		if err == nil {
			linked := true
			for i := len(out) - 1; i > 0; i-- {
				if out[i].Eth().ParentHash != out[i-1].Hash() {
					linked = false
					break
				}
				v.link(out[i])
			}
			if linked {
				return out, nil
			}
		}
	}
	// Walk down by parent hash: each parent is trusted by its child's link.
	for i := len(out) - 1; i > 0; i-- {
		v.link(out[i])
		var err error
		if out[i-1], err = v.fetchHeader(ctx, out[i].Eth().ParentHash); err != nil {
			return nil, err
		}
	}
	return out, nil
}
