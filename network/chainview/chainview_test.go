package chainview_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/porticohq/portico/network/chainview"
)

// tree is a block tree the tests grow: every block any node ever had.
type tree struct {
	blocks map[string]chainview.Header
	next   int
	fetch  int // fetches served
}

func newTree() *tree {
	t := &tree{blocks: map[string]chainview.Header{}}
	t.blocks["g"] = chainview.Header{Number: 0, Hash: "g"}
	return t
}

// child makes a new block on parent, skip numbers after it (a slot chain
// skips slots).
func (t *tree) child(parent chainview.Header, skip uint64) chainview.Header {
	t.next++
	h := chainview.Header{Number: parent.Number + 1 + skip, Hash: fmt.Sprintf("b%d-%d", parent.Number+1+skip, t.next),
		Parent: parent.Hash, ParentNumber: parent.Number}
	t.blocks[h.Hash] = h
	return h
}

func (t *tree) fetchFn(ctx context.Context, number uint64, hash string) (chainview.Header, error) {
	t.fetch++
	h, ok := t.blocks[hash]
	if !ok {
		return chainview.Header{}, errors.New("unknown block")
	}
	return h, nil
}

// between returns the blocks after anc up to h, oldest first (anc must
// be an ancestor of h, or h itself).
func (t *tree) between(anc, h chainview.Header) []chainview.Header {
	var out []chainview.Header
	for h.Hash != anc.Hash {
		out = append(out, h)
		h = t.blocks[h.Parent]
	}
	slices.Reverse(out)
	return out
}

// ancestor returns the newest block that a and b share.
func (t *tree) ancestor(a, b chainview.Header) chainview.Header {
	for a.Hash != b.Hash {
		if a.Number >= b.Number {
			a = t.blocks[a.Parent]
		} else {
			b = t.blocks[b.Parent]
		}
	}
	return a
}

// recent returns the block depth blocks below h (or the genesis).
func (t *tree) recent(h chainview.Header, depth int) chainview.Header {
	for ; depth > 0 && h.Hash != "g"; depth-- {
		h = t.blocks[h.Parent]
	}
	return h
}

func hashes(hs []chainview.Header) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Hash
	}
	return out
}

// checkLinked fails when the view's chain is not one linked run of
// blocks of the tree ending at its head.
func checkLinked(t *testing.T, v *chainview.View, tr *tree) {
	t.Helper()
	chain := v.Range(0, math.MaxUint64)
	for i := 1; i < len(chain); i++ {
		if chain[i].Parent != chain[i-1].Hash || chain[i].ParentNumber != chain[i-1].Number {
			t.Fatalf("chain unlinked at %d: %v after %v", i, chain[i], chain[i-1])
		}
	}
	if head, ok := v.Head(); ok && (len(chain) == 0 || chain[len(chain)-1] != head) {
		t.Fatalf("head %v is not the chain's end", head)
	}
	for _, h := range chain {
		if _, ok := tr.blocks[h.Hash]; !ok {
			t.Fatalf("block %v is not in the tree", h)
		}
	}
}

// TestViewProperties: random sequences of heads from several nodes
// (forks of random depth, repeats, gaps, skipped numbers, a node left on
// a stale branch, finality advancing) never leave the view's chain
// unlinked, never drop a finalized block, and report each switch once,
// with the common ancestor and the dropped and added blocks the tree says.
func TestViewProperties(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			tr := newTree()
			const keep = 64
			v := chainview.New(keep)
			var told []chainview.Switch
			v.OnSwitch(func(s chainview.Switch) { told = append(told, s) })
			nodes := make([]chainview.Header, 1+r.IntN(4))
			for i := range nodes {
				nodes[i] = tr.blocks["g"]
			}
			var followed []chainview.Header // heads followed, in order
			for step := range 400 {
				n := r.IntN(len(nodes))
				switch k := r.IntN(100); {
				case k < 55: // the node makes a block (sometimes skipping numbers)
					nodes[n] = tr.child(nodes[n], uint64(max(0, r.IntN(8)-6)))
				case k < 65: // the node reorgs: a new branch from a recent ancestor
					nodes[n] = tr.recent(nodes[n], r.IntN(6)+r.IntN(2)*r.IntN(30)) // sometimes deep, past finality
					for range 1 + r.IntN(6) {
						nodes[n] = tr.child(nodes[n], 0)
					}
				case k < 75: // the node catches up with another
					nodes[n] = nodes[r.IntN(len(nodes))]
				case k < 78: // a long gap: many blocks at once
					for range keep + r.IntN(keep) {
						nodes[n] = tr.child(nodes[n], 0)
					}
				case k < 88: // finality advances on the served chain
					if head, ok := v.Head(); ok {
						lag := uint64(8 + r.IntN(16))
						if head.Number > lag {
							safe, _ := v.Marks()
							v.SetMarks(max(safe, head.Number-lag/2), head.Number-lag)
						}
					}
					continue
				default: // a stale report: the node's head again
				}
				prev, started := v.Head()
				_, finalized := v.Marks()
				before := len(told)
				sw, err := v.Follow(context.Background(), nodes[n], tr.fetchFn)
				checkLinked(t, v, tr)
				switch {
				case errors.Is(err, chainview.ErrBelowFinal):
					// Refused: the branch leaves the chain at or below a
					// final block; nothing changed and nothing was told.
					if len(told) != before {
						t.Fatalf("step %d: a refused head was told", step)
					}
					if head, _ := v.Head(); head != prev {
						t.Fatalf("step %d: a refused head moved the view", step)
					}
					anc := tr.ancestor(prev, nodes[n])
					dropsFinal := false
					for _, d := range tr.between(anc, prev) {
						dropsFinal = dropsFinal || d.Number <= finalized
					}
					if !dropsFinal && anc.Number >= v.Oldest() {
						t.Fatalf("step %d: refused a branch from %v that drops no final block (finalized %d)", step, anc, finalized)
					}
					continue
				case err != nil:
					t.Fatalf("step %d: %v", step, err)
				}
				head, _ := v.Head()
				if head != nodes[n] {
					t.Fatalf("step %d: head %v, followed %v", step, head, nodes[n])
				}
				if started && prev == nodes[n] {
					if len(told) != before {
						t.Fatalf("step %d: the same head was told again", step)
					}
					continue
				}
				if len(told) != before+1 {
					t.Fatalf("step %d: %d switches told, want 1", step, len(told)-before)
				}
				if !slices.EqualFunc(told[before].Added, sw.Added, func(a, b chainview.Header) bool { return a == b }) {
					t.Fatalf("step %d: told another switch than returned", step)
				}
				followed = append(followed, nodes[n])
				if sw.Reset {
					if started && nodes[n].Number-prev.Number <= keep && nodes[n].Number > prev.Number && tr.ancestor(prev, nodes[n]).Number >= v.Oldest() {
						// A head within reach of the chain must link.
						if a := tr.ancestor(prev, nodes[n]); nodes[n].Number-a.Number <= keep {
							t.Fatalf("step %d: reset for %v, which links to %v within %d blocks", step, nodes[n], a, keep)
						}
					}
					continue
				}
				anc := tr.ancestor(prev, nodes[n])
				if sw.Ancestor != anc {
					t.Fatalf("step %d: ancestor %v, the tree says %v", step, sw.Ancestor, anc)
				}
				wantDropped := tr.between(anc, prev)
				wantAdded := tr.between(anc, nodes[n])
				if !slices.Equal(hashes(sw.Dropped), hashes(wantDropped)) || !slices.Equal(hashes(sw.Added), hashes(wantAdded)) {
					t.Fatalf("step %d: dropped %v added %v, want %v and %v", step, hashes(sw.Dropped), hashes(sw.Added), hashes(wantDropped), hashes(wantAdded))
				}
				for _, d := range sw.Dropped {
					if d.Number <= finalized {
						t.Fatalf("step %d: dropped block %v at or below finalized %d", step, d, finalized)
					}
				}
			}
			if len(followed) == 0 {
				t.Fatal("nothing followed")
			}
		})
	}
}

// TestViewReorg: the switches of a three-block reorg at the same height,
// as anvil_reorg makes it, and of a rollback.
func TestViewReorg(t *testing.T) {
	tr := newTree()
	v := chainview.New(16)
	ctx := context.Background()
	var old []chainview.Header
	h := tr.blocks["g"]
	for range 14 {
		h = tr.child(h, 0)
		old = append(old, h)
		if _, err := v.Follow(ctx, h, tr.fetchFn); err != nil {
			t.Fatal(err)
		}
	}
	// 12', 13', 14' on 11; only the new head is reported, its parents are
	// fetched.
	b := old[10]
	var added []chainview.Header
	for range 3 {
		b = tr.child(b, 0)
		added = append(added, b)
	}
	tr.fetch = 0
	sw, err := v.Follow(ctx, b, tr.fetchFn)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Ancestor != old[10] || !slices.Equal(hashes(sw.Dropped), hashes(old[11:])) || !slices.Equal(hashes(sw.Added), hashes(added)) || sw.Gen != 2 {
		t.Fatalf("switch %+v", sw)
	}
	if tr.fetch != 2 {
		t.Errorf("%d fetches, want 2 (13' and 12')", tr.fetch)
	}
	if v.OnChain(old[12].Hash) || !v.OnChain(added[1].Hash) {
		t.Error("OnChain does not follow the switch")
	}
	if got, _ := v.Canonical(13); got != added[1].Hash {
		t.Errorf("Canonical(13) = %s", got)
	}
	// Back to the old branch: its blocks are known, nothing is fetched.
	tr.fetch = 0
	if sw, err = v.Follow(ctx, old[13], tr.fetchFn); err != nil || tr.fetch != 0 || sw.Ancestor != old[10] {
		t.Fatalf("back: %+v %v, %d fetches", sw, err, tr.fetch)
	}
	// A rollback to block 12 drops 13 and 14.
	if sw, err = v.Follow(ctx, old[11], tr.fetchFn); err != nil || len(sw.Added) != 0 || !slices.Equal(hashes(sw.Dropped), hashes(old[12:])) {
		t.Fatalf("rollback: %+v %v", sw, err)
	}
	// Finality at 12 refuses a branch from 11.
	v.SetMarks(12, 12)
	if _, err := v.Follow(ctx, tr.child(old[10], 5), tr.fetchFn); !errors.Is(err, chainview.ErrBelowFinal) {
		t.Fatalf("a branch below finality: %v", err)
	}
}

// TestViewFetchMismatch: a node that answers another block than asked
// for is refused and the view is unchanged.
func TestViewFetchMismatch(t *testing.T) {
	tr := newTree()
	v := chainview.New(16)
	ctx := context.Background()
	a := tr.child(tr.blocks["g"], 0)
	if _, err := v.Follow(ctx, a, tr.fetchFn); err != nil {
		t.Fatal(err)
	}
	c := tr.child(tr.child(a, 0), 0)
	_, err := v.Follow(ctx, c, func(ctx context.Context, n uint64, hash string) (chainview.Header, error) {
		return chainview.Header{Number: n, Hash: "other"}, nil
	})
	if !errors.Is(err, chainview.ErrMismatch) {
		t.Fatalf("err %v", err)
	}
	if head, _ := v.Head(); head != a {
		t.Fatalf("head moved to %v", head)
	}
}
