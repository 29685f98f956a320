package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/upstream"
)

// headNode answers fakeChain's tracking calls from memory, and other
// calls with its name. While stuck, a head poll signals polled and then
// hangs: until its context ends, or, when deaf, until the test releases it
// (a poll that cannot be cut short); other calls hang until cancelled.
type headNode struct {
	name    string
	head    atomic.Uint64
	stuck   atomic.Bool
	broken  atomic.Bool // other calls fail as a transport failure would
	deaf    bool
	polled  chan struct{}
	release chan struct{}
}

func newHeadNode(name string, head uint64, deaf bool) *headNode {
	n := &headNode{name: name, deaf: deaf, polled: make(chan struct{}, 1), release: make(chan struct{})}
	n.head.Store(head)
	return n
}

// Call answers chain_id, chain_head and any other call.
func (n *headNode) Call(ctx context.Context, method string, _ jsontext.Value, _ []byte) (jsontext.Value, error) {
	switch {
	case method == "chain_id":
		return jsontext.Value(`"main"`), nil
	case method != "chain_head" && n.stuck.Load():
		<-ctx.Done()
		return nil, ctx.Err()
	case method != "chain_head" && n.broken.Load():
		return nil, errors.New("HTTP 502")
	case method != "chain_head":
		return jsontext.Value(`"` + n.name + `"`), nil
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
func (n *headNode) Send(ctx context.Context, method string, params jsontext.Value, _ upstream.Limits, dst []byte) (jsontext.Value, error) {
	return n.Call(ctx, method, params, dst)
}
func (n *headNode) Close() error { return nil }

// newHeadPool tracks a and b every millisecond on clock; Close is checked
// to leave no goroutine behind. Its hedge delay is long enough that an
// answer from memory always comes first, however busy the machine.
func newHeadPool(t *testing.T, clock *fakeClock, a, b *headNode) *upstream.Pool {
	current := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, current) })
	p := upstream.NewPool(upstream.PoolConfig{Network: "n", Members: []upstream.Member{{Name: "a", Node: a}, {Name: "b", Node: b}},
		Chain: fakeChain, PollInterval: time.Millisecond, Now: clock.Now,
		Hedge: upstream.Hedge{MinDelay: 300 * time.Millisecond, MaxDelay: 300 * time.Millisecond}})
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
	a, b := newHeadNode("a", 100, true), newHeadNode("b", 100, false)
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
	a, b := newHeadNode("a", 100, false), newHeadNode("b", 100, false)
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

// TestBackAfterFreeze: a node that froze, so that a hedge overtook it and
// its head polls timed out, is first again as soon as it answers its head
// poll: its slowness was the freeze, and a suspect node gets no call to
// show it is over. The pool's clock stands still, so only that can end
// its suspicion.
func TestBackAfterFreeze(t *testing.T) {
	a, b := newHeadNode("a", 100, false), newHeadNode("b", 100, false)
	p := newHeadPool(t, newFakeClock(), a, b)
	a.stuck.Store(true)
	if got := ask(t, p, upstream.Request{Method: "m"}); got != "b" {
		t.Fatalf("a call with a frozen went to %s", got)
	}
	wait(t, a.polled, "first stuck poll of a")
	wait(t, a.polled, "second stuck poll of a, after the first timed out")
	if st := p.Nodes()[0]; !st.Benched || !st.Suspect {
		t.Fatalf("a while frozen: %+v", st)
	}
	back := make(chan struct{})
	var once atomic.Int32
	defer p.OnHeads(func(h portico.Heads) {
		if h.Latest == 101 && once.Add(1) == 1 {
			close(back)
		}
	})()
	a.head.Store(101) // so that its first answer shows at the network
	a.stuck.Store(false)
	wait(t, back, "a's head poll answered after the freeze")
	if st := p.Nodes()[0]; st.Benched || st.Suspect {
		t.Fatalf("a after the freeze: %+v", st)
	}
	if got := ask(t, p, upstream.Request{Method: "m"}); got != "a" {
		t.Fatalf("a call after the freeze went to %s", got)
	}
}

// TestCallBenchOutlastsProbes: a node that answers its head probes but
// fails clients' calls stays benched until its backoff ends, however often
// its probes answer, and its backoff grows with each failure after; a
// call it answers clears the bench.
func TestCallBenchOutlastsProbes(t *testing.T) {
	a, b := newHeadNode("a", 100, false), newHeadNode("b", 100, false)
	clock := newFakeClock()
	p := newHeadPool(t, clock, a, b)
	polled := make(chan struct{}, 1)
	defer p.OnHeads(func(portico.Heads) {
		select {
		case polled <- struct{}{}:
		default:
		}
	})()
	a.broken.Store(true)
	if got := ask(t, p, upstream.Request{Method: "m"}); got != "b" {
		t.Fatalf("the call a failed went on to %s", got)
	}
	st := p.Nodes()[0]
	if !st.Benched || st.BenchedUntil.Sub(clock.Now()) != time.Second {
		t.Fatalf("a after a failed call: %+v", st)
	}
	for i := range 3 { // probes answer, each with a new head
		a.head.Add(1)
		b.head.Add(1)
		wait(t, polled, fmt.Sprint("poll ", i))
	}
	if st := p.Nodes()[0]; !st.Benched {
		t.Fatalf("a's probes ended its bench for failed calls: %+v", st)
	}
	if got := ask(t, p, upstream.Request{Method: "m"}); got != "b" {
		t.Fatalf("a call while a is benched went to %s", got)
	}
	clock.Advance(time.Second) // the bench ends; a is tried first again
	if got := ask(t, p, upstream.Request{Method: "m"}); got != "b" {
		t.Fatalf("the second call a failed went on to %s", got)
	}
	if st := p.Nodes()[0]; !st.Benched || st.BenchedUntil.Sub(clock.Now()) != 2*time.Second {
		t.Fatalf("a after a second failed call: %+v (backoff should double)", st)
	}
	clock.Advance(2 * time.Second)
	a.broken.Store(false)
	if got := ask(t, p, upstream.Request{Method: "m"}); got != "a" {
		t.Fatalf("the call after the bench went to %s", got)
	}
	if st := p.Nodes()[0]; st.Benched {
		t.Fatalf("a after answering a call: %+v", st)
	}
}
