package topics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/chainview"
)

// This file works out what a resumed subscription sends before it goes
// live (docs/subscriptions.md): from the block the client names, the
// blocks it missed on the served chain, linked by parent hash; when that
// block was reorged away, the client's blocks the chain dropped after the
// common ancestor too. Headers older than the chain view keeps are read
// from the nodes by hash, following parent links.

// resumePlan is a resumed subscription's backfill: the client's blocks
// the served chain no longer has (oldest first), and the served chain's
// blocks after the common ancestor up to the head of the view when it
// was planned (oldest first).
type resumePlan struct {
	dropped, added []chainview.Header
}

// planTries bounds how often a plan is made again when the chain moved
// while it was made (its blocks did not link).
const planTries = 3

// plan works out the backfill of a subscription resumed from r.
func (h *Hub) plan(ctx context.Context, r *portico.Resume) (resumePlan, error) {
	view := h.n.up.View()
	if _, ok := view.Head(); !ok {
		return h.planByNumber(r)
	}
	var err error
	began := time.Now()
	for try := 0; try < planTries; {
		var p resumePlan
		switch p, err = h.planByHash(ctx, view, r); err {
		case errMoved:
			try++
		case errBehind:
			if !h.waitView(ctx, began) {
				return resumePlan{}, &portico.UpstreamError{Network: h.n.name, Err: fmt.Errorf("%w: the served chain has not reached the block to resume from yet", portico.ErrUpstreamUnavailable)}
			}
		default:
			return p, err
		}
	}
	return resumePlan{}, &portico.UpstreamError{Network: h.n.name, Err: fmt.Errorf("%w: the chain kept moving while the resumed subscription was planned", portico.ErrUpstreamUnavailable)}
}

// viewWait bounds how long a plan waits for the chain view to reach the
// block a client names.
const viewWait = 5 * time.Second

// waitView has head tracking catch up and waits a little for the view to
// move; false once viewWait has passed since began.
func (h *Hub) waitView(ctx context.Context, began time.Time) bool {
	if time.Since(began) > viewWait {
		return false
	}
	h.n.up.Poke()
	select {
	case <-ctx.Done():
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

// settle waits, for a resumed subscription whose live part comes from an
// upstream subscription just opened, until the chain view has every block
// the nodes had when it opened: head tracking is asked to catch up, and
// the view to reach the head it then reads (at most viewWait). Its plan
// then reaches at least as far as where the live part begins.
func (h *Hub) settle(ctx context.Context) {
	polled := make(chan uint64, 1)
	stop := h.n.up.OnHeads(func(hd portico.Heads) {
		select {
		case polled <- hd.Latest:
		default:
		}
	})
	defer stop()
	h.n.up.Poke()
	var target uint64
	select {
	case target = <-polled:
	case <-time.After(time.Second): // no change: the heads are current
		hd, _ := h.n.up.HeadsFresh()
		target = hd.Latest
	case <-ctx.Done():
		return
	}
	view := h.n.up.View()
	for began := time.Now(); time.Since(began) < viewWait; {
		if head, ok := view.Head(); !ok || head.Number >= target {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// planByNumber plans on a network whose blocks have no hashes to follow
// (the slot chain): the slots after (or from) r's up to the latest head.
func (h *Hub) planByNumber(r *portico.Resume) (resumePlan, error) {
	if r.Hash != "" {
		return resumePlan{}, r.Error("this network's blocks have no hashes to resume from; name a number")
	}
	heads, _ := h.n.up.HeadsFresh()
	head := heads.Latest
	if head == 0 {
		return resumePlan{}, &portico.UpstreamError{Network: h.n.name, Err: fmt.Errorf("%w: no head known yet to resume to", portico.ErrUpstreamUnavailable)}
	}
	if r.Number > head {
		return resumePlan{}, r.Error(fmt.Sprintf("%d is ahead of the head, %d", r.Number, head))
	}
	if head-r.Number > uint64(r.Bound()) {
		return resumePlan{}, r.Error(tooOld(r.Number, head, r.Bound()))
	}
	from := r.Number + 1
	if r.Inclusive {
		from = r.Number
	}
	var p resumePlan
	for n := from; n <= head; n++ {
		p.added = append(p.added, chainview.Header{Number: n})
	}
	return p, nil
}

// tooOld is the error text of a resume point past the bound.
func tooOld(n, head uint64, bound int) string {
	return fmt.Sprintf("block %d is %d blocks behind the head (%d); a subscription resumes at most %d blocks back (limits.max_resume_blocks)", n, head-n, head, bound)
}

// errMoved says that the view changed while a plan was made.
var errMoved = fmt.Errorf("topics: the chain moved")

// walker reads the served chain and the blocks off it, by hash, from the
// view and, past what the view keeps, from the nodes.
type walker struct {
	ctx     context.Context
	h       *Hub
	view    *chainview.View
	below   map[uint64]chainview.Header // the served chain under the view's oldest block
	low     chainview.Header            // the lowest served block known
	viewLow uint64                      // the view's oldest block when the walk began
	steps   int
	max     int
}

// header returns the block with hash (whose number is number).
func (w *walker) header(hash string, number uint64) (chainview.Header, error) {
	if h, _, ok := w.view.Lookup(hash); ok {
		return h, nil
	}
	if w.steps++; w.steps > 2*w.max+2 {
		return chainview.Header{}, errMoved
	}
	h, err := w.h.n.up.Header(w.ctx, number, hash)
	if errors.Is(err, portico.ErrNoBlock) {
		return chainview.Header{}, errUnknown
	}
	if err != nil {
		return chainview.Header{}, err
	}
	if h.Hash != hash {
		return chainview.Header{}, errUnknown
	}
	return h, nil
}

// errBehind says that the view is behind the block a client named: a plan
// waits for it.
var errBehind = errors.New("topics: the chain view is behind")

// known reports whether the view knows the block with hash.
func (w *walker) known(hash string) bool {
	_, _, ok := w.view.Lookup(hash)
	return ok
}

// errUnknown is a block no node has.
var errUnknown = fmt.Errorf("topics: no node has the block")

// canonical returns the served chain's block number n (n at most the
// head), reading the nodes for blocks older than the view keeps.
func (w *walker) canonical(n uint64) (chainview.Header, error) {
	if n >= w.viewLow {
		if hs := w.view.Range(n, n); len(hs) == 1 {
			return hs[0], nil
		}
		return chainview.Header{}, errMoved // the view let it go meanwhile
	}
	if b, ok := w.below[n]; ok {
		return b, nil
	}
	for w.low.Number > n {
		p, err := w.header(w.low.Parent, w.low.ParentNumber)
		if err != nil {
			if err == errUnknown {
				return chainview.Header{}, errMoved
			}
			return chainview.Header{}, err
		}
		w.below[p.Number] = p
		w.low = p
	}
	return w.below[n], nil
}

// planByHash plans on a network whose chain view follows hashes.
func (h *Hub) planByHash(ctx context.Context, view *chainview.View, r *portico.Resume) (resumePlan, error) {
	head, _ := view.Head()
	oldest := view.Range(view.Oldest(), view.Oldest())
	if len(oldest) != 1 {
		return resumePlan{}, errMoved
	}
	w := &walker{ctx: ctx, h: h, view: view, below: map[uint64]chainview.Header{}, low: oldest[0], viewLow: oldest[0].Number, max: r.Bound()}
	if r.Hash == "" {
		return h.planFromNumber(w, head, r)
	}
	start, err := h.resolve(w, head, r)
	if err != nil {
		return resumePlan{}, err
	}
	// From start back to the served chain: the client's blocks it dropped.
	var p resumePlan
	at := start
	for {
		if at.Number <= head.Number {
			c, err := w.canonical(at.Number)
			if err != nil {
				return resumePlan{}, err
			}
			if c.Hash == at.Hash {
				break
			}
		}
		p.dropped = append(p.dropped, at)
		if len(p.dropped) > r.Bound() || at.Number == 0 {
			return resumePlan{}, r.Error(fmt.Sprintf("block %s left the served chain more than %d blocks back (limits.max_resume_blocks)", start.Hash, r.Bound()))
		}
		if at, err = w.header(at.Parent, at.ParentNumber); err != nil {
			if err == errUnknown {
				return resumePlan{}, r.Error(fmt.Sprintf("block %s left the served chain further back than the nodes keep", start.Hash))
			}
			return resumePlan{}, err
		}
	}
	slices.Reverse(p.dropped)
	ancestor := at
	if r.Inclusive && len(p.dropped) == 0 {
		p.added = append(p.added, start)
	}
	prev := ancestor
	for n := ancestor.Number + 1; n <= head.Number; n++ {
		c, err := w.canonical(n)
		if err != nil {
			return resumePlan{}, err
		}
		if c.Parent != prev.Hash {
			return resumePlan{}, errMoved
		}
		p.added = append(p.added, c)
		prev = c
	}
	return p, nil
}

// planFromNumber plans a resume from a block number (a slot): the served
// chain's blocks after it (from it, when inclusive) up to the head; on
// the slot chain, skipped slots have none.
func (h *Hub) planFromNumber(w *walker, head chainview.Header, r *portico.Resume) (resumePlan, error) {
	if r.Number > head.Number {
		return resumePlan{}, r.Error(fmt.Sprintf("block %d is ahead of the head, %d", r.Number, head.Number))
	}
	if head.Number-r.Number > uint64(r.Bound()) {
		return resumePlan{}, r.Error(tooOld(r.Number, head.Number, r.Bound()))
	}
	first := r.Number + 1
	if r.Inclusive {
		first = r.Number
	}
	// Down the parent links to the first block at or before it.
	for w.low.Number >= first && w.low.Number > 0 {
		p, err := w.header(w.low.Parent, w.low.ParentNumber)
		if err != nil {
			if err == errUnknown {
				return resumePlan{}, errMoved
			}
			return resumePlan{}, err
		}
		w.below[p.Number] = p
		w.low = p
	}
	var p resumePlan
	for n := first; n < w.viewLow; n++ {
		if b, ok := w.below[n]; ok {
			p.added = append(p.added, b)
		}
	}
	p.added = append(p.added, w.view.Range(max(first, w.viewLow), head.Number)...)
	for i := 1; i < len(p.added); i++ {
		if p.added[i].Parent != p.added[i-1].Hash {
			return resumePlan{}, errMoved
		}
	}
	return p, nil
}

// resolve finds the block r names, within the bound.
func (h *Hub) resolve(w *walker, head chainview.Header, r *portico.Resume) (chainview.Header, error) {
	if r.Hash == "" {
		if r.Number > head.Number {
			return chainview.Header{}, r.Error(fmt.Sprintf("block %d is ahead of the head, %d", r.Number, head.Number))
		}
		if head.Number-r.Number > uint64(r.Bound()) {
			return chainview.Header{}, r.Error(tooOld(r.Number, head.Number, r.Bound()))
		}
		return w.canonical(r.Number)
	}
	b, err := w.header(r.Hash, 0)
	var down *portico.UpstreamError
	switch {
	case err != nil && err != errMoved && !errors.As(err, &down):
		return chainview.Header{}, r.Error(fmt.Sprintf("block %s is not known: not on the served chain, not a block it dropped, and no node has it", r.Hash))
	case err == nil && b.Number > head.Number && !w.known(b.Hash):
		// A node has it and the view has not caught up yet.
		return chainview.Header{}, errBehind
	}
	switch {
	case err == errUnknown:
		return chainview.Header{}, r.Error(fmt.Sprintf("block %s is not known: not on the served chain, not a block it dropped, and no node has it", r.Hash))
	case err != nil:
		return chainview.Header{}, err
	case head.Number > b.Number && head.Number-b.Number > uint64(r.Bound()):
		return chainview.Header{}, r.Error(tooOld(b.Number, head.Number, r.Bound()))
	}
	return b, nil
}
