// Package chainview follows a network's served chain by hash: its recent
// headers back to the finalized block, each linked to its parent, with the
// family's safe and finalized marks. A new head that does not extend the
// served chain is a branch switch (a reorg), found by walking parent links
// to the common ancestor and reported once, with the blocks it dropped and
// the ones it added, to every listener in order.
//
// The view decides nothing about which node to believe: its owner (the
// node pool's head tracking) says which head to follow, and the view
// checks that it links, fetching the missing parents through the owner.
// Routing, tag resolution, the cache and subscriptions all read this one
// view; none of them keeps its own idea of the head.
package chainview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/porticohq/portico"
)

// Header is one block of the chain as the view keeps it.
type Header = portico.Header

// Switch is a change of the served chain: the blocks after Ancestor on the
// old chain (Dropped, oldest first) gave way to Added (oldest first). A
// new head on top of the old one has no Dropped. Reset reports a view that
// lost the thread (a gap longer than it keeps, or its first head): Added
// holds only the new head and there is no Ancestor.
type Switch struct {
	Ancestor       Header
	Dropped, Added []Header
	Reset          bool
	// Gen is the view's generation after the switch: it grows by one with
	// every switch that dropped blocks or reset.
	Gen uint64
}

// Reorg reports whether the switch dropped blocks of the served chain.
func (s Switch) Reorg() bool { return len(s.Dropped) > 0 }

// Fetch returns the header of the block with hash (whose number is
// number) from a node; the view asks for parents it does not know.
type Fetch func(ctx context.Context, number uint64, hash string) (Header, error)

// Errors of Follow.
var (
	// ErrBelowFinal refuses a head whose branch leaves the served chain at
	// or below the finalized block, which cannot reorg.
	ErrBelowFinal = errors.New("chainview: the branch leaves the chain below its finalized block")
	// ErrMismatch refuses a fetched header that is not the one asked for
	// (the node moved to another branch while it was walked).
	ErrMismatch = errors.New("chainview: a node answered another block than the one asked for")
)

// View is one network's served chain. The zero value is not usable; make
// one with New. Its methods are safe for concurrent use; listeners are
// called in order, one switch at a time, by the caller of Follow.
type View struct {
	keep int

	follow sync.Mutex // one Follow at a time: switches are told in order

	mu        sync.RWMutex
	chain     []Header          // the served chain, oldest first; each links to the one before
	pos       map[string]int    // hash -> index in chain, plus base offset
	base      int               // pos values are base + index, so pruning does not renumber
	side      map[string]Header // headers seen off the chain (other branches), bounded
	safe      uint64
	finalized uint64
	gen       uint64
	listeners []listener
	nextID    int
}

type listener struct {
	id int
	f  func(Switch)
}

// New returns an empty view that keeps at most keep headers (at least 2):
// back to the finalized block, or keep blocks when finality is further
// behind than that.
func New(keep int) *View {
	return &View{keep: max(keep, 2), pos: map[string]int{}, side: map[string]Header{}}
}

// OnSwitch registers f to be told of every switch, in order, until the
// returned function is called. f runs on the goroutine of Follow and must
// not call Follow.
func (v *View) OnSwitch(f func(Switch)) (stop func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.nextID++
	id := v.nextID
	v.listeners = append(v.listeners, listener{id, f})
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.listeners = slices.DeleteFunc(v.listeners, func(l listener) bool { return l.id == id })
	}
}

// Head returns the served chain's newest header, and false before the
// first.
func (v *View) Head() (Header, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if len(v.chain) == 0 {
		return Header{}, false
	}
	return v.chain[len(v.chain)-1], true
}

// Marks returns the safe and finalized block numbers (0 when unknown).
func (v *View) Marks() (safe, finalized uint64) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.safe, v.finalized
}

// Gen returns the view's generation (see Switch.Gen).
func (v *View) Gen() uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.gen
}

// OnChain reports whether the block with hash is on the served chain (of
// the headers kept).
func (v *View) OnChain(hash string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	_, ok := v.pos[hash]
	return ok
}

// Canonical returns the hash of the served chain's block number n, when
// the view keeps it.
func (v *View) Canonical(n uint64) (string, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	i, ok := v.indexOf(n)
	if !ok {
		return "", false
	}
	return v.chain[i].Hash, true
}

// Range returns the served chain's headers with numbers from and to,
// inclusive, oldest first (those kept).
func (v *View) Range(from, to uint64) []Header {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []Header
	for _, h := range v.chain {
		if h.Number >= from && h.Number <= to {
			out = append(out, h)
		}
	}
	return out
}

// Oldest returns the number of the oldest header kept (0 when empty).
func (v *View) Oldest() uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if len(v.chain) == 0 {
		return 0
	}
	return v.chain[0].Number
}

// indexOf finds block number n in the chain. v.mu is held.
func (v *View) indexOf(n uint64) (int, bool) {
	i, ok := slices.BinarySearchFunc(v.chain, n, func(h Header, n uint64) int {
		switch {
		case h.Number < n:
			return -1
		case h.Number > n:
			return 1
		}
		return 0
	})
	return i, ok
}

// Know records a header seen off the served chain (another node's head),
// so that a later switch to its branch needs no fetch.
func (v *View) Know(h Header) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, on := v.pos[h.Hash]; on || h.Hash == "" {
		return
	}
	v.remember(h)
}

// remember keeps a side header, dropping the oldest when too many are
// kept. v.mu is held.
func (v *View) remember(h Header) {
	if len(v.side) >= 4*v.keep {
		oldest := ""
		for k, s := range v.side {
			if oldest == "" || s.Number < v.side[oldest].Number {
				oldest = k
			}
		}
		delete(v.side, oldest)
	}
	v.side[h.Hash] = h
}

// lookup finds a header by hash on the chain or among side headers.
func (v *View) lookup(hash string) (Header, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if p, ok := v.pos[hash]; ok {
		return v.chain[p-v.base], true
	}
	h, ok := v.side[hash]
	return h, ok
}

// Follow makes head the served chain's newest block, and tells the
// listeners what changed (nothing when it is the head already). The
// parents it does not know are fetched, back to a block of the served
// chain, at most the view's keep of them; a head too far ahead to be
// linked in that many resets the view. A branch that leaves the chain at
// or below the finalized block is refused with ErrBelowFinal, and nothing
// changes.
func (v *View) Follow(ctx context.Context, head Header, fetch Fetch) (Switch, error) {
	if head.Hash == "" {
		return Switch{}, errors.New("chainview: a head without a hash")
	}
	v.follow.Lock()
	defer v.follow.Unlock()
	cur, started := v.Head()
	if started && cur.Hash == head.Hash {
		return Switch{}, nil
	}
	branch, ancestor, linked, err := v.walk(ctx, head, fetch, started)
	if err != nil {
		return Switch{}, err
	}

	v.mu.Lock()
	var sw Switch
	if linked {
		i := v.pos[ancestor.Hash] - v.base
		for _, d := range v.chain[i+1:] {
			if d.Number <= v.finalized {
				v.mu.Unlock()
				return Switch{}, ErrBelowFinal
			}
		}
		sw = Switch{Ancestor: ancestor, Dropped: slices.Clone(v.chain[i+1:]), Added: branch}
		for _, d := range sw.Dropped {
			delete(v.pos, d.Hash)
			v.remember(d)
		}
		v.chain = append(v.chain[:i+1:i+1], branch...)
	} else {
		sw = Switch{Dropped: slices.Clone(v.chain), Added: []Header{head}, Reset: true}
		for _, d := range sw.Dropped {
			v.remember(d)
		}
		clear(v.pos)
		v.chain, v.base = []Header{head}, 0
	}
	for j, h := range v.chain {
		if _, ok := v.pos[h.Hash]; !ok {
			v.pos[h.Hash] = v.base + j
			delete(v.side, h.Hash)
		}
	}
	if sw.Reorg() || sw.Reset {
		v.gen++
	}
	sw.Gen = v.gen
	v.prune()
	ls := slices.Clone(v.listeners)
	v.mu.Unlock()
	for _, l := range ls {
		l.f(sw)
	}
	return sw, nil
}

// walk links head to the served chain: the new branch (oldest first,
// head last; empty when head is an older block of the chain) and the
// block of the chain it grows from. Not linked means a reset: the view is
// empty, or head is further ahead than the view keeps. A branch that
// leaves the chain below the oldest block kept, when that block is final,
// is ErrBelowFinal.
func (v *View) walk(ctx context.Context, head Header, fetch Fetch, started bool) (branch []Header, ancestor Header, linked bool, err error) {
	if !started {
		return []Header{head}, Header{}, false, nil
	}
	if p, ok := v.onChain(head.Hash); ok {
		return nil, p, true, nil // the chain went back, as after a node's rollback
	}
	oldest := v.Oldest()
	_, finalized := v.Marks()
	branch = []Header{head}
	at := head
	for {
		if p, ok := v.onChain(at.Parent); ok {
			slices.Reverse(branch)
			return branch, p, true, nil
		}
		if at.Number == 0 || at.ParentNumber < oldest {
			// It left the chain below what is kept.
			if finalized > 0 && oldest <= finalized {
				return nil, Header{}, false, ErrBelowFinal
			}
			return []Header{head}, Header{}, false, nil
		}
		if len(branch) > v.keep || fetch == nil && !v.known(at.Parent) {
			return []Header{head}, Header{}, false, nil // too far ahead to link
		}
		parent, ok := v.lookup(at.Parent)
		if !ok {
			got, err := fetch(ctx, at.ParentNumber, at.Parent)
			if err != nil {
				return nil, Header{}, false, fmt.Errorf("chainview: fetching block %d (%s): %w", at.ParentNumber, at.Parent, err)
			}
			if got.Hash != at.Parent || got.Number != at.ParentNumber {
				return nil, Header{}, false, fmt.Errorf("%w: asked for block %d %s, got %d %s", ErrMismatch, at.ParentNumber, at.Parent, got.Number, got.Hash)
			}
			parent = got
		}
		branch = append(branch, parent)
		at = parent
	}
}

// known reports whether a header with hash is kept, on the chain or off.
func (v *View) known(hash string) bool {
	_, ok := v.lookup(hash)
	return ok
}

// onChain finds a header of the served chain by hash.
func (v *View) onChain(hash string) (Header, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	p, ok := v.pos[hash]
	if !ok {
		return Header{}, false
	}
	return v.chain[p-v.base], true
}

// SetMarks records the safe and finalized block numbers; neither goes
// back. Headers below the finalized block are let go, keeping it, and at
// most keep headers are kept.
func (v *View) SetMarks(safe, finalized uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.safe = max(v.safe, safe)
	v.finalized = max(v.finalized, finalized)
	v.prune()
}

// prune lets go of headers below the finalized block (keeping it) and
// beyond keep, and of side headers older than the chain. v.mu is held.
func (v *View) prune() {
	drop := 0
	for drop < len(v.chain)-1 && (v.chain[drop+1].Number <= v.finalized || len(v.chain)-drop > v.keep) {
		drop++
	}
	if drop > 0 {
		for _, h := range v.chain[:drop] {
			delete(v.pos, h.Hash)
		}
		v.chain = slices.Clone(v.chain[drop:])
		v.base += drop
	}
	if len(v.chain) == 0 {
		return
	}
	oldest := v.chain[0].Number
	for k, h := range v.side {
		if h.Number < oldest {
			delete(v.side, k)
		}
	}
}

// Lookup returns the header with hash, on the served chain or among the
// headers seen off it (blocks a reorg dropped, other nodes' heads), and
// whether it is on the served chain.
func (v *View) Lookup(hash string) (h Header, onChain, ok bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if p, on := v.pos[hash]; on {
		return v.chain[p-v.base], true, true
	}
	h, ok = v.side[hash]
	return h, false, ok
}
