package topics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/upstream"
)

// planNode is the nodes as a plan sees them: the view, and headers by
// hash (the blocks a node still has).
type planNode struct {
	view    *chainview.View
	headers map[string]portico.Header
}

func (n *planNode) Do(context.Context, upstream.Request, []byte) (jsontext.Value, error) {
	return nil, errors.New("no calls")
}
func (n *planNode) HeadsFresh() (portico.Heads, bool) {
	h, _ := n.view.Head()
	return portico.Heads{Latest: h.Number, Head: h}, true
}
func (n *planNode) OnHeads(func(portico.Heads)) func() { return func() {} }
func (n *planNode) View() *chainview.View              { return n.view }
func (n *planNode) Subscribe(context.Context, upstream.SubRequest, func(string, jsontext.Value), func(error)) (func(), string, error) {
	return nil, "", errors.New("no subscriptions")
}
func (n *planNode) CanSubscribe() bool             { return false }
func (n *planNode) Observe(string, portico.Header) {}
func (n *planNode) Poke()                          {}
func (n *planNode) Header(_ context.Context, _ uint64, hash string) (portico.Header, error) {
	h, ok := n.headers[hash]
	if !ok {
		return portico.Header{}, fmt.Errorf("block %s: %w", hash, portico.ErrNoBlock)
	}
	return h, nil
}

// branch makes headers from..to on a branch named b, the first a child of
// parent.
func branch(b string, parent portico.Header, to uint64) []portico.Header {
	var out []portico.Header
	for n := parent.Number + 1; n <= to; n++ {
		h := portico.Header{Number: n, Hash: fmt.Sprintf("0x%s%d", b, n), Parent: parent.Hash, ParentNumber: parent.Number}
		out = append(out, h)
		parent = h
	}
	return out
}

// planChain is a view that kept keep headers of chain a (blocks 0 to 10),
// then, with reorg, switched to branch b from block 7 on (to block 11).
func planChain(t *testing.T, keep int, reorg bool) (*planNode, map[string]portico.Header) {
	t.Helper()
	genesis := portico.Header{Hash: "0xa0"}
	a := append([]portico.Header{genesis}, branch("a", genesis, 10)...)
	n := &planNode{view: chainview.New(keep), headers: map[string]portico.Header{}}
	all := map[string]portico.Header{}
	for _, h := range a {
		n.headers[h.Hash], all[h.Hash] = h, h
	}
	fetch := func(_ context.Context, _ uint64, hash string) (portico.Header, error) {
		return n.Header(context.Background(), 0, hash)
	}
	for _, h := range a {
		if _, err := n.view.Follow(context.Background(), h, fetch); err != nil {
			t.Fatal(err)
		}
	}
	if reorg {
		b := branch("b", a[7], 11)
		for _, h := range b {
			n.headers[h.Hash], all[h.Hash] = h, h
		}
		// The nodes forget the dropped blocks, as anvil does.
		for _, h := range a[8:] {
			delete(n.headers, h.Hash)
		}
		if _, err := n.view.Follow(context.Background(), b[len(b)-1], fetch); err != nil {
			t.Fatal(err)
		}
	}
	return n, all
}

func hashes(hs []chainview.Header) string {
	var s []string
	for _, h := range hs {
		s = append(s, h.Hash)
	}
	return strings.Join(s, " ")
}

// TestPlan: what a resumed subscription sends first, for resume points on
// the chain, reorganised away, older than the view keeps, by number, too
// old, and unknown.
func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name          string
		keep          int
		reorg         bool
		resume        portico.Resume
		dropped, want string
		err           string
	}{
		{name: "on the chain", keep: 64, resume: portico.Resume{Hash: "0xa7"}, want: "0xa8 0xa9 0xa10"},
		{name: "the head", keep: 64, resume: portico.Resume{Hash: "0xa10"}, want: ""},
		{name: "older than the view keeps", keep: 4, resume: portico.Resume{Hash: "0xa3"}, want: "0xa4 0xa5 0xa6 0xa7 0xa8 0xa9 0xa10"},
		{name: "reorganised away", keep: 64, reorg: true, resume: portico.Resume{Hash: "0xa9"}, dropped: "0xa8 0xa9", want: "0xb8 0xb9 0xb10 0xb11"},
		{name: "reorganised, from the ancestor", keep: 64, reorg: true, resume: portico.Resume{Hash: "0xa7"}, want: "0xb8 0xb9 0xb10 0xb11"},
		{name: "by number, inclusive", keep: 4, resume: portico.Resume{Number: 6, Inclusive: true}, want: "0xa6 0xa7 0xa8 0xa9 0xa10"},
		{name: "by hash, inclusive", keep: 64, resume: portico.Resume{Hash: "0xa9", Inclusive: true}, want: "0xa9 0xa10"},
		{name: "too old", keep: 64, resume: portico.Resume{Hash: "0xa2", Max: 5}, err: "block 2 is 8 blocks behind the head (10); a subscription resumes at most 5 blocks back (limits.max_resume_blocks)"},
		{name: "number too old", keep: 64, resume: portico.Resume{Number: 1, Max: 5}, err: "at most 5 blocks back"},
		{name: "number ahead", keep: 64, resume: portico.Resume{Number: 12}, err: "ahead of the head"},
		{name: "unknown", keep: 64, resume: portico.Resume{Hash: "0xc5"}, err: "block 0xc5 is not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := planChain(t, tc.keep, tc.reorg)
			h := New(Config{Network: "test", Upstream: n})
			r := tc.resume
			r.Position, r.Field = 2, "options.resumeFrom"
			p, err := h.plan(context.Background(), &r)
			if tc.err != "" {
				var pe *portico.ParamsError
				if !errors.As(err, &pe) || pe.Field != "options.resumeFrom" || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want a params error on options.resumeFrom saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := hashes(p.dropped); got != tc.dropped {
				t.Errorf("dropped %q, want %q", got, tc.dropped)
			}
			if got := hashes(p.added); got != tc.want {
				t.Errorf("added %q, want %q", got, tc.want)
			}
		})
	}
}
