package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
)

// fakeNode answers chain_id with its chain and chain_head with its head;
// other calls answer its name, after its delay, or never while frozen.
type fakeNode struct {
	name   string
	chain  string
	head   atomic.Uint64
	frozen atomic.Bool
	delay  atomic.Int64 // nanoseconds
	calls  atomic.Int64 // calls other than tracking
	srv    *httptest.Server
	stop   chan struct{}
}

func newFakeNode(t *testing.T, name, chain string, head uint64) *fakeNode {
	n := &fakeNode{name: name, chain: chain, stop: make(chan struct{})}
	n.head.Store(head)
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls, _, _ := jsonrpc.Decode(body)
		c := calls[0]
		var res string
		switch c.Method {
		case "chain_id":
			res = `"` + n.chain + `"`
		case "chain_head":
			res = fmt.Sprint(n.head.Load())
		default:
			n.calls.Add(1)
			if n.frozen.Load() {
				select {
				case <-n.stop:
				case <-r.Context().Done():
				}
				return
			}
			time.Sleep(time.Duration(n.delay.Load()))
			res = `"` + n.name + `"`
		}
		w.Write(jsonrpc.AppendResult(nil, c.ID, []byte(res)))
	}))
	t.Cleanup(func() { close(n.stop); n.srv.Close() })
	return n
}

// fakeChain tracks fake nodes: chain_id names the chain, chain_head is
// the latest block.
var fakeChain = portico.Chain{
	Identity: func(ctx context.Context, c portico.Caller) (string, error) {
		res, err := c.Call(ctx, "chain_id", nil, nil)
		return strings.Trim(string(res), `"`), err
	},
	Heads: func(ctx context.Context, c portico.Caller) (portico.Heads, error) {
		res, err := c.Call(ctx, "chain_head", nil, nil)
		if err != nil {
			return portico.Heads{}, err
		}
		var h portico.Heads
		_, err = fmt.Sscan(string(res), &h.Latest)
		return h, err
	},
	MaxLag: 5,
}

func newFakePool(t *testing.T, logs io.Writer, nodes ...*fakeNode) *upstream.Pool {
	return newFakePoolWith(t, logs, nil, nodes...)
}

// newFakePoolWith is newFakePool with its config changed by set.
func newFakePoolWith(t *testing.T, logs io.Writer, set func(*upstream.PoolConfig), nodes ...*fakeNode) *upstream.Pool {
	var members []upstream.Member
	for _, n := range nodes {
		members = append(members, upstream.Member{Name: n.name, Node: upstream.NewHTTP(n.srv.URL, nil)})
	}
	if logs == nil {
		logs = io.Discard
	}
	cfg := upstream.PoolConfig{Network: "net", Members: members, Chain: fakeChain, PollInterval: 20 * time.Millisecond,
		AttemptTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if set != nil {
		set(&cfg)
	}
	p := upstream.NewPool(cfg)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func ask(t *testing.T, p *upstream.Pool, req upstream.Request) string {
	t.Helper()
	res, err := p.Do(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("%+v: %v", req, err)
	}
	return strings.Trim(string(res), `"`)
}

// TestWrongChain: a node on another chain is refused at start, gets no
// calls while it is wrong, is logged, and comes back when it is right.
func TestWrongChain(t *testing.T) {
	var logs syncLog
	a, b, c := newFakeNode(t, "a", "main", 100), newFakeNode(t, "b", "other", 900), newFakeNode(t, "c", "main", 100)
	p := newFakePool(t, &logs, b, a, c)
	for range 20 {
		if got := ask(t, p, upstream.Request{Method: "x"}); got == "b" {
			t.Fatal("a call reached the node on another chain")
		}
	}
	if h := p.Heads(); h.Latest != 100 {
		t.Fatalf("the wrong chain's head leaked into the network's: %+v", h)
	}
	if !strings.Contains(logs.String(), `msg="node is on another chain: it gets no calls until it is back" network=net upstream=b chain=other want=main`) {
		t.Fatalf("no log line for the wrong chain:\n%s", logs.String())
	}
	st := p.Nodes()
	if !st[0].WrongChain || st[1].WrongChain {
		t.Fatalf("node states: %+v", st)
	}
}

// TestLagAwareRouting: a lagging node gets no calls about the newest
// blocks or tags, but still those about blocks it has; when it is the only
// one left, it serves. Without hedging: a hedge would send a call to the
// next node whenever the machine is slow.
func TestLagAwareRouting(t *testing.T) {
	lag, fresh := newFakeNode(t, "lag", "main", 90), newFakeNode(t, "fresh", "main", 100)
	p := newFakePoolWith(t, nil, func(c *upstream.PoolConfig) { c.Hedge.Disabled = true }, lag, fresh) // the lagging node is preferred by order
	cases := []struct {
		block portico.Block
		want  string
	}{
		{portico.Block{}, "fresh"},
		{portico.Block{Kind: portico.BlockTag, Tag: "latest"}, "fresh"},
		{portico.Block{Kind: portico.BlockNumber, Number: 99}, "fresh"},
		{portico.Block{Kind: portico.BlockNumber, Number: 50}, "fresh"}, // a fresh node first, still
	}
	for _, c := range cases {
		if got := ask(t, p, upstream.Request{Method: "x", Block: c.block}); got != c.want {
			t.Errorf("%+v went to %s, want %s", c.block, got, c.want)
		}
	}
	if st := p.Nodes(); !st[0].Lagging || st[0].Lag != 10 || st[1].Lagging {
		t.Fatalf("states: %+v", st)
	}
	// Without the fresh node, the lagging one serves what it has.
	fresh.srv.Close()
	for range 3 {
		p.Do(context.Background(), upstream.Request{Method: "x"}, nil) // benches the dead node
	}
	if got := ask(t, p, upstream.Request{Method: "x", Block: portico.Block{Kind: portico.BlockNumber, Number: 50}}); got != "lag" {
		t.Errorf("block 50 with the fresh node dead went to %s", got)
	}
}

// TestNoLagBound: a max_lag of 0 after defaults (a network that sets none
// on a family that declares none) bounds nothing, in routing and in the
// nodes' states alike: the node behind is neither passed over nor shown
// as lagging.
func TestNoLagBound(t *testing.T) {
	behind, fresh := newFakeNode(t, "behind", "main", 90), newFakeNode(t, "fresh", "main", 100)
	p := newFakePoolWith(t, nil, func(c *upstream.PoolConfig) {
		c.Hedge.Disabled = true
		c.Chain.MaxLag, c.MaxLag = 0, 0
	}, behind, fresh)
	if got := ask(t, p, upstream.Request{Method: "x", Block: portico.Block{Kind: portico.BlockTag, Tag: "latest"}}); got != "behind" {
		t.Errorf("latest went to %s, want behind (first in order, no lag bound)", got)
	}
	if st := p.Nodes(); st[0].Lagging || st[0].Lag != 10 || st[1].Lagging {
		t.Fatalf("states: %+v", st)
	}
}

// TestHedging: a read with no answer after the hedge delay goes to the
// next node too, the first answer wins, and the frozen node is passed over
// by the next calls; a write is never hedged. The pool's clock stands
// still, so the suspicion lasts however slow the machine.
func TestHedging(t *testing.T) {
	frozen, ok := newFakeNode(t, "frozen", "main", 100), newFakeNode(t, "ok", "main", 100)
	p := newFakePoolWith(t, nil, func(c *upstream.PoolConfig) { c.Now = newFakeClock().Now }, frozen, ok)
	frozen.frozen.Store(true)
	if got := ask(t, p, upstream.Request{Method: "x"}); got != "ok" {
		t.Fatalf("hedged read answered by %s", got)
	}
	// Answered by the hedge, not by failing over after the frozen node's
	// timeout, which would count as its failure.
	if st := p.Nodes()[0]; st.Hedged != 1 || st.Errors != 0 {
		t.Fatalf("the hedged read waited for the frozen node's timeout: %+v", st)
	}
	before := frozen.calls.Load()
	for range 20 {
		if got := ask(t, p, upstream.Request{Method: "x"}); got != "ok" {
			t.Fatalf("read answered by %s", got)
		}
	}
	// Had the frozen node been first for one of them, a hedge would have
	// been sent past it, or it would have failed. It may have been a hedge
	// target, when ok was slow to answer: that is what it is there for.
	st := p.Nodes()
	if st[0].Hedged != 1 || st[0].Errors != 0 || !st[0].Suspect {
		t.Errorf("the suspect node was first for some of the next 20 calls: %+v", st[0])
	}
	if n := frozen.calls.Load() - before; uint64(n) > st[1].Hedged {
		t.Errorf("the suspect node got %d of the next 20 calls, %d of them as hedges", n, st[1].Hedged)
	}

	// A write to a frozen node times out and is not sent elsewhere.
	w, okw := newFakeNode(t, "w", "main", 100), newFakeNode(t, "w2", "main", 100)
	pw := newFakePool(t, nil, w, okw)
	w.frozen.Store(true)
	_, err := pw.Do(context.Background(), upstream.Request{Method: "send", Write: true}, nil)
	if !errors.Is(err, portico.ErrUpstreamTimeout) || okw.calls.Load() != 0 {
		t.Fatalf("write to a frozen node: %v; the other node got %d calls", err, okw.calls.Load())
	}
}

// TestWriteFailsOverWhenUndelivered: a write to a node that refuses the
// connection goes to the next node.
func TestWriteFailsOverWhenUndelivered(t *testing.T) {
	dead, live := newFakeNode(t, "dead", "main", 100), newFakeNode(t, "live", "main", 100)
	p := newFakePool(t, nil, dead, live)
	dead.srv.Close()
	if got := ask(t, p, upstream.Request{Method: "send", Write: true}); got != "live" {
		t.Fatalf("write went to %s", got)
	}
}

// syncLog is a log buffer for concurrent writers.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
