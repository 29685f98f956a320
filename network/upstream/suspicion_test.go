package upstream_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/network/upstream"
)

// callFunc is a node whose every call the test decides, with the call's
// context.
type callFunc func(ctx context.Context) (jsontext.Value, error)

func (f callFunc) Call(ctx context.Context, _ string, _ jsontext.Value, _ []byte) (jsontext.Value, error) {
	return f(ctx)
}
func (f callFunc) Send(ctx context.Context, method string, params jsontext.Value, _ upstream.Limits, dst []byte) (jsontext.Value, error) {
	return f.Call(ctx, method, params, dst)
}
func (f callFunc) Close() error { return nil }

// fakeClock is a pool clock the test moves by hand.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Unix(1000, 0).UnixNano())
	return c
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Advance moves the clock on by d.
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// wait receives from ch, or fails the test when nothing comes.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second): // a guard against a hang, not a measure of speed
		t.Fatalf("no %s", what)
	}
}

// How node a of TestSuspicion behaves in a step.
const (
	fast    = iota // answers at once
	stalled        // answers nothing until its call is cancelled
	late           // answers once the hedge was sent, before the hedge answers
)

// TestSuspicion follows a node through stalls under concurrent calls, on
// the pool's clock: one pause that holds many calls is one slow episode
// (suspect for 1s, not 2^(n-1)s), the node is first again when the
// suspicion ends and a timely answer resets the streak, a node that stays
// slow is suspect longer each episode, and a node whose answer beats the
// hedge sent after it (a pause on the caller's side, as under load) is not
// suspect at all, so the configured order holds.
//
// Node b answers only after every call of the step has reached it, so the
// calls of a burst are all in flight on a together, whatever the speed of
// the machine.
func TestSuspicion(t *testing.T) {
	clock := newFakeClock()
	var mode atomic.Int32
	var step atomic.Pointer[stepChans]
	a := callFunc(func(ctx context.Context) (jsontext.Value, error) {
		s := step.Load()
		switch mode.Load() {
		case stalled:
			<-ctx.Done()
			return nil, ctx.Err()
		case late:
			select {
			case <-s.hedged:
				return jsontext.Value(`"a"`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return jsontext.Value(`"a"`), nil
	})
	b := callFunc(func(ctx context.Context) (jsontext.Value, error) {
		s := step.Load()
		s.atB <- struct{}{}
		select {
		case <-s.release:
			return jsontext.Value(`"b"`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	p := upstream.NewPool(upstream.PoolConfig{Network: "n", Members: []upstream.Member{{Name: "a", Node: a}, {Name: "b", Node: b}},
		Hedge: upstream.Hedge{MinDelay: 50 * time.Millisecond, MaxDelay: 50 * time.Millisecond}, Now: clock.Now})
	t.Cleanup(func() { p.Close() })

	steps := []struct {
		name        string
		advance     time.Duration
		mode        int32
		burst       int // concurrent calls; 0 looks at the state only
		want        string
		wantSuspect bool
		wantHedged  int // hedges sent past a in the step; -1 when not checked
	}{
		{"one stall held 8 calls: one episode", 0, stalled, 8, "b", true, 8},
		{"the episode's suspicion lasts 1s", 999 * time.Millisecond, fast, 0, "", true, 0},
		{"and ends after it", time.Millisecond, fast, 0, "", false, 0},
		{"first again; a timely answer resets the streak", 0, fast, 1, "a", false, -1},
		{"a stall after the reset is a first episode", 0, stalled, 1, "b", true, 1},
		{"suspect for 1s again", time.Second, fast, 0, "", false, 0},
		{"a node that stays slow gets a second episode", 0, stalled, 4, "b", true, 4},
		{"which lasts 2s", time.Second, fast, 0, "", true, 0},
		{"and ends after them", time.Second, fast, 0, "", false, 0},
		{"answers that beat their hedges are not slow", 0, late, 8, "a", false, 8},
		{"so the configured order holds", 0, fast, 4, "a", false, -1},
	}
	for _, s := range steps {
		clock.Advance(s.advance)
		mode.Store(s.mode)
		ch := &stepChans{atB: make(chan struct{}, s.burst), hedged: make(chan struct{}), release: make(chan struct{})}
		step.Store(ch)
		before := p.Nodes()[0].Hedged
		answers := make(chan string, s.burst)
		for range s.burst {
			go func() {
				res, err := p.Call(context.Background(), "m", nil, nil)
				if err != nil {
					answers <- err.Error()
					return
				}
				answers <- string(res)
			}()
		}
		if s.mode != fast {
			for i := range s.burst {
				wait(t, ch.atB, fmt.Sprintf("%s: call %d at b", s.name, i+1))
			}
		}
		// a answers late, or b answers for a stalled a; b answers only
		// after a did otherwise.
		close(ch.hedged)
		if s.mode == stalled {
			close(ch.release)
		}
		for range s.burst {
			if got := <-answers; got != `"`+s.want+`"` {
				t.Errorf("%s: answered %s, want %q", s.name, got, s.want)
			}
		}
		if s.mode != stalled {
			close(ch.release)
		}
		st := p.Nodes()[0]
		if st.Suspect != s.wantSuspect {
			t.Errorf("%s: suspect %v, want %v", s.name, st.Suspect, s.wantSuspect)
		}
		if s.wantHedged >= 0 && st.Hedged-before != uint64(s.wantHedged) {
			t.Errorf("%s: %d hedges past a, want %d", s.name, st.Hedged-before, s.wantHedged)
		}
	}
}

// stepChans are one step's signals: b was called, a may answer late, b
// may answer.
type stepChans struct {
	atB, hedged, release chan struct{}
}
