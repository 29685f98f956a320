package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/upstream"
	"github.com/porticohq/portico/verify"
)

// maxVerifiedLogRange bounds the blocks one verified eth_getLogs covers:
// each needs its trusted header, and each whose bloom may match its
// receipts.
const maxVerifiedLogRange = 10_000

// getLogs checks a node's eth_getLogs answer against the receipts of
// every block of the range whose trusted bloom may match: the receipts
// are fetched while the node answers the query itself.
func (v *verifier) getLogs(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	ps, err := splitParams(params)
	if err != nil || len(ps) != 1 {
		return nil, unverifiable("params", "want one filter object")
	}
	q, err := verify.ParseFilter(ps[0])
	if err != nil {
		return nil, unverifiable("filter", err.Error())
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(ps[0], &fields) != nil {
		return nil, unverifiable("filter", "not an object")
	}
	var headers []*verify.Header
	if q.BlockHash != nil {
		h, err := v.trustHash(ctx, *q.BlockHash)
		if err != nil {
			return nil, err
		}
		headers = []*verify.Header{h}
	} else {
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
		if headers, err = v.headerRange(ctx, from.number, to.number); err != nil {
			return nil, err
		}
		// The node is asked about the numbers the tags were resolved to.
		fields["fromBlock"], _ = json.Marshal(hexNumber(from.number))
		fields["toBlock"], _ = json.Marshal(hexNumber(to.number))
	}
	filter, _ := json.Marshal(fields)

	// The receipts of the blocks whose bloom may match, fetched at once
	// while the node answers the query.
	type fetched struct {
		rs  map[common.Hash]*verify.Receipts
		err error
	}
	ready := make(chan fetched, 1)
	go func() {
		var mu sync.Mutex
		rs := map[common.Hash]*verify.Receipts{}
		var first error
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, h := range headers {
			if !verify.MayHaveLogs(h, q) {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				b, err := v.block(ctx, h.Hash())
				var r *verify.Receipts
				if err == nil {
					r, err = v.receiptsOf(ctx, b)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil && first == nil {
					first = err
				}
				rs[h.Hash()] = r
			})
		}
		wg.Wait()
		ready <- fetched{rs, first}
	}()
	var (
		once sync.Once
		got  fetched
	)
	receipts := func() fetched {
		once.Do(func() { got = <-ready })
		return got
	}
	out, _, err := doChecked(v, ctx, "eth_getLogs", jsontext.Value(`[`+string(filter)+`]`), func(res jsontext.Value) (jsontext.Value, error) {
		f := receipts()
		if f.err != nil {
			// Not this node's fault: the receipts could not be had.
			return nil, fmt.Errorf("%w: %w", upstream.ErrMissing, f.err)
		}
		return verify.VerifyLogs(res, q, headers, f.rs)
	})
	if err != nil {
		if f := receipts(); f.err != nil && !errors.Is(err, verify.ErrMismatch) {
			return nil, f.err
		}
		return nil, err
	}
	return out, nil
}

// headerRange returns the trusted headers from..to, ascending: the top one
// trusted at its height, the others by parent links down from it. The
// served chain's hashes let them be read at once; the links are checked
// before any is trusted.
func (v *verifier) headerRange(ctx context.Context, from, to uint64) ([]*verify.Header, error) {
	top, err := v.headerAt(ctx, to)
	if err != nil {
		return nil, err
	}
	out := make([]*verify.Header, to-from+1)
	out[len(out)-1] = top
	view := v.up.View()
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
		if errors.Join(errs...) == nil {
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
		if out[i-1], err = v.fetchHeader(ctx, out[i].Eth().ParentHash); err != nil {
			return nil, err
		}
	}
	return out, nil
}
