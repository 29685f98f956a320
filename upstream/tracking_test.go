package upstream_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/upstream"
)

// headNode answers fakeChain's tracking calls from memory. While stuck, a
// head poll signals polled and then hangs: until its context ends, or,
// when deaf, until the test releases it (a poll that cannot be cut short).
type headNode struct {
	head    atomic.Uint64
	stuck   atomic.Bool
	deaf    bool
	polled  chan struct{}
	release chan struct{}
}

func newHeadNode(head uint64, deaf bool) *headNode {
	n := &headNode{deaf: deaf, polled: make(chan struct{}, 1), release: make(chan struct{})}
	n.head.Store(head)
	return n
}

// Call answers chain_id and chain_head.
func (n *headNode) Call(ctx context.Context, method string, _ jsontext.Value, _ []byte) (jsontext.Value, error) {
	if method == "chain_id" {
		return jsontext.Value(`"main"`), nil
	}
	if n.stuck.Load() {
		select {
		case n.polled <- struct{}{}:
		default:
		}
		if n.deaf {
			<-n.release
		} else {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-n.release:
			}
		}
	}
	return jsontext.Value(fmt.Sprint(n.head.Load())), nil
}

// Close does nothing.
func (n *headNode) Close() error { return nil }

// newHeadPool tracks a and b every millisecond on clock; Close is checked
// to leave no goroutine behind.
func newHeadPool(t *testing.T, clock *fakeClock, a, b *headNode) *upstream.Pool {
	current := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, current) })
	p := upstream.NewPool(upstream.PoolConfig{Network: "n", Members: []upstream.Member{{Name: "a", Node: a}, {Name: "b", Node: b}},
		Chain: fakeChain, PollInterval: time.Millisecond, Now: clock.Now})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(a.release) // a deaf poll ends only so; Close waits for it
		p.Close()
	})
	return p
}

// TestStuckNodeDoesNotHoldTracking: while one node's head poll hangs,
// the other nodes' new heads still reach the network, and the listeners
// are told of them one at a time.
func TestStuckNodeDoesNotHoldTracking(t *testing.T) {
	a, b := newHeadNode(100, true), newHeadNode(100, false)
	p := newHeadPool(t, newFakeClock(), a, b)
	reached := make(chan struct{})
	var inListener, once atomic.Int32
	stop := p.OnHeads(func(h portico.Heads) {
		if inListener.Add(1) > 1 {
			t.Error("two OnHeads calls at once")
		}
		if h.Latest == 101 && once.Add(1) == 1 {
			close(reached)
		}
		inListener.Add(-1)
	})
	defer stop()
	a.stuck.Store(true)
	wait(t, a.polled, "head poll of a")
	b.head.Store(101)
	wait(t, reached, "head 101 of b at the network while a's poll hangs")
	if h := p.Heads(); h.Latest != 101 {
		t.Fatalf("network heads %+v", h)
	}
}

// TestHeadPollTimeoutIsFailure: a head poll that times out counts against
// its node: it is benched, and its heads age.
func TestHeadPollTimeoutIsFailure(t *testing.T) {
	clock := newFakeClock()
	a, b := newHeadNode(100, false), newHeadNode(100, false)
	p := newHeadPool(t, clock, a, b)
	a.stuck.Store(true)
	wait(t, a.polled, "first stuck poll of a")
	wait(t, a.polled, "second stuck poll of a, after the first timed out") // the first was recorded
	if st := p.Nodes()[0]; !st.Benched {
		t.Fatalf("a after a head poll timed out: %+v", st)
	}
	clock.Advance(10 * time.Second)
	if st := p.Nodes()[0]; st.HeadsAge < 10*time.Second {
		t.Fatalf("a's heads are %v old, want at least 10s", st.HeadsAge)
	}
}
