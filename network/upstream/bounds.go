package upstream

import (
	"errors"
	"io"
	"slices"

	"github.com/porticohq/portico"
)

// MemoryBudget is memory shared by the calls that hold answers: the
// gateway's budgets (the process's, a key's, a connection's) behind one
// small interface. Take reports whether n more bytes fit, and takes them
// only when they do; Give returns bytes taken before. Both are called from
// many goroutines at once.
type MemoryBudget interface {
	Take(n int64) bool
	Give(n int64)
}

// Limits bound what one call may make this process hold of a node's
// answer. The zero value bounds the result by the node's own
// Options.MaxResponseBytes and takes from no budget.
type Limits struct {
	// MaxResult bounds the call's result, in bytes; 0 means the node's
	// Options.MaxResponseBytes. An answer that passes it fails the call
	// with a *portico.LimitError (LimitResult) as soon as that is known,
	// before the rest of it is read.
	MaxResult int64
	// Budget, when set, is charged for every byte of the answer held
	// while it is read, as the bytes arrive (a known length up front),
	// and given it all back when the call returns: the caller then holds
	// only the result it was handed, and charges that itself. A Take
	// that fails ends the call at once with a *portico.LimitError
	// (LimitMemory).
	Budget MemoryBudget
}

// DefaultMaxResponseBytes bounds one call's result when neither the call
// nor the node's Options says otherwise; limits.max_result_bytes has the
// same default (portico.DefaultLimits; TestDefaultResultBoundIsTheConfigs).
const DefaultMaxResponseBytes = 64 << 20

// envelopeSlack is how much larger than the result bound an answer's body
// may be: the envelope around the result ({"jsonrpc":"2.0","id":1,
// "result":…}) with any whitespace a node puts in it. The result itself is
// checked against the bound once the body is decoded.
const envelopeSlack = 4 << 10

// readChunk is how much of an answer of unknown length is read, and taken
// from the budget, at a time.
const readChunk = 64 << 10

// maxPooledBytes is the largest buffer that goes back to a reuse pool:
// one large answer must not stay in memory after its call.
const maxPooledBytes = 1 << 20

// bound returns the result bound of a call under lim on a node with opts.
func (lim Limits) bound(opts *Options) int64 {
	if lim.MaxResult > 0 {
		return lim.MaxResult
	}
	return opts.maxResponse()
}

// bodyBound is the bound of an answer's body whose result is bounded by
// maxResult: the result and its envelope.
func bodyBound(maxResult int64) int64 { return maxResult + envelopeSlack }

// errResult is the error of an answer whose result passes maxResult.
func errResult(maxResult int64) error {
	return &portico.LimitError{Limit: portico.LimitResult, Max: maxResult}
}

// isLimit reports whether err is a bound of this process on an answer (its
// size or a memory budget): not the node's fault, and another node would
// not do better, so the pool neither fails over nor benches for it.
func isLimit(err error) bool {
	if err == nil {
		return false // and no allocation for l
	}
	var l *portico.LimitError
	return errors.As(err, &l) && (l.Limit == portico.LimitResult || l.Limit == portico.LimitMemory)
}

// holding is what one call has taken from its budget for the answer it
// holds. The zero value takes from no budget.
type holding struct {
	budget MemoryBudget
	taken  int64
}

// A MemoryBudget may say more of a refusal. With TakeErr (a Take that
// returns nil or the *portico.LimitError, or an error wrapping one, of the
// bound it would pass; membudget.Budget has it) the call fails with that
// error; else with Limit, the error names that bound; else it names none
// (Max 0).
type (
	budgetTakeErr interface{ TakeErr(n int64) error }
	budgetLimit   interface{ Limit() int64 }
)

// upTo makes sure that n bytes in all are taken, taking what is missing
// in steps of at least step bytes (the rest stays taken for what comes
// next), or only what is missing when the budget has no room for a whole
// step (a small budget, such as a batch's, still takes small answers).
func (h *holding) upTo(n, step int64) error {
	if h.budget == nil || n <= h.taken {
		return nil
	}
	need := n - h.taken
	more := max(need, step)
	err := h.take(more)
	if err != nil && more > need {
		more, err = need, h.take(need)
	}
	if err != nil {
		return err
	}
	h.taken += more
	return nil
}

// take takes n from the budget, or says which bound refused.
func (h *holding) take(n int64) error { return Take(h.budget, n) }

// Take takes n bytes from budget, or returns the error that says which
// bound refused them (a *portico.LimitError, LimitMemory).
func Take(budget MemoryBudget, n int64) error {
	if b, ok := budget.(budgetTakeErr); ok {
		return b.TakeErr(n)
	}
	if budget.Take(n) {
		return nil
	}
	var bound int64
	if l, ok := budget.(budgetLimit); ok {
		bound = l.Limit()
	}
	return &portico.LimitError{Limit: portico.LimitMemory, Max: bound}
}

// release gives back everything taken.
func (h *holding) release() {
	if h.budget != nil && h.taken > 0 {
		h.budget.Give(h.taken)
	}
	h.taken = 0
}

// grow returns b with room for at least need more bytes of the answer
// that starts at b[start], which is at most limit bytes long. The room
// doubles (from 512 bytes) and the last step goes straight to limit, so
// an answer of unknown length costs at most about twice its bound in
// allocations, not the five times append's gentler growth of large
// slices costs, and a buffer never grows past its bound.
func grow(b []byte, start, need int, limit int64) []byte {
	n := len(b) - start
	size := int64(max(2*(cap(b)-start), 512))
	if 2*size > limit {
		size = limit
	}
	size = max(size, int64(n+need))
	return slices.Grow(b, int(size)-n)
}

// pastBound is readMore's report of an answer longer than its bound,
// with the first byte past it (read aside, not kept in the buffer).
type pastBound struct{ next byte }

func (pastBound) Error() string { return "answer past its bound" }

// readMore reads the next bytes of an answer of unknown length that
// starts at dst[start] and may be limit bytes long, into dst, taking them
// from h before they are read. It returns io.EOF at the answer's end, a
// pastBound as soon as a byte past limit arrives, and h's refusal or r's
// error as they come.
func readMore(r io.Reader, dst []byte, start int, limit int64, h *holding) ([]byte, error) {
	n := int64(len(dst) - start)
	if n >= limit {
		// Full: one more byte, read aside, says whether the answer ends.
		var one [1]byte
		got, err := r.Read(one[:])
		if got > 0 {
			return dst, pastBound{next: one[0]}
		}
		return dst, err
	}
	if cap(dst) == len(dst) {
		dst = grow(dst, start, 1, limit)
	}
	want := min(int64(cap(dst)-len(dst)), readChunk, limit-n)
	if err := h.upTo(n+want, readChunk); err != nil {
		return dst, err
	}
	got, err := r.Read(dst[len(dst) : len(dst)+int(want)])
	return dst[:len(dst)+got], err
}

// readBody appends a body of length bytes (-1 when unknown: chunked, or
// until the connection closes) from r to dst, refusing it with errResult
// as soon as it passes the body bound of a result bounded by maxResult,
// and taking every byte from h before it is read into dst. A known length
// is checked and taken up front, and dst grows once.
func readBody(r io.Reader, length, maxResult int64, h *holding, dst []byte) ([]byte, error) {
	limit := bodyBound(maxResult)
	start := len(dst)
	if length >= 0 {
		if length > limit {
			return dst, errResult(maxResult)
		}
		if err := h.upTo(length, 0); err != nil {
			return dst, err
		}
		dst = slices.Grow(dst, int(length))[:start+int(length)]
		if _, err := io.ReadFull(r, dst[start:]); err != nil {
			return dst[:start], err
		}
		return dst, nil
	}
	for {
		var err error
		dst, err = readMore(r, dst, start, limit, h)
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return dst, nil
		case errors.As(err, new(pastBound)):
			return dst, errResult(maxResult)
		default:
			return dst, err
		}
	}
}
