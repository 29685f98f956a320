package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/network/upstream"
)

// testBudget is a MemoryBudget with a bound that remembers the most it
// ever lent and tells of each refusal.
type testBudget struct {
	limit   int64
	refused chan struct{} // one send per refusal, when not nil

	mu         sync.Mutex
	used, high int64
	negative   bool
}

func (b *testBudget) Take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		if b.refused != nil {
			b.refused <- struct{}{}
		}
		return false
	}
	b.used += n
	b.high = max(b.high, b.used)
	return true
}

func (b *testBudget) Give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.negative = b.negative || b.used < 0
}

// Limit lets the error a refused call gets name the bound.
func (b *testBudget) Limit() int64 { return b.limit }

// state returns what is lent now and the most ever lent, and fails the
// test if more was given back than taken.
func (b *testBudget) state(t *testing.T) (used, high int64) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.negative {
		t.Fatal("more was given back than taken")
	}
	return b.used, b.high
}

// bigNodes returns a node of each kind that answers calls with a result of
// the size their params ask for.
func bigNodes(t *testing.T) map[string]upstream.Node {
	t.Helper()
	a := newAnswerWriter()
	inproc := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls, _, _ := jsonrpc.Decode(body)
		a.write(w, "1", sizeParam(calls[0].Params), false, nil, nil)
	})
	nodes := map[string]upstream.Node{
		"http content-length": upstream.NewHTTP(newBigHTTPNode(t, false, nil).srv.URL, nil),
		"http chunked":        upstream.NewHTTP(newBigHTTPNode(t, true, nil).srv.URL, nil),
		"websocket id first":  upstream.NewWebSocket(bigWSNode(t, false), nil),
		"websocket id last":   upstream.NewWebSocket(bigWSNode(t, true), nil),
		"in-process":          upstream.NewInProcess(inproc, nil),
	}
	for _, n := range nodes {
		t.Cleanup(func() { n.Close() })
	}
	return nodes
}

// TestBudget: an answer is charged to the call's budget while it is read
// and the budget gets every byte back when the call returns; a budget that
// refuses fails the call with the memory limit, mid-read, and is given
// back what it had lent.
func TestBudget(t *testing.T) {
	ctx := context.Background()
	for name, node := range bigNodes(t) {
		t.Run(name, func(t *testing.T) {
			// Room enough: the answer is charged in full, then given back.
			b := &testBudget{limit: 8 * mib}
			res, err := node.Send(ctx, "big", jsontext.Value(fmt.Sprintf("[%d]", 4*mib)), upstream.Limits{Budget: b}, nil)
			if err != nil || len(res) != 4*mib+2 {
				t.Fatalf("%d bytes, %v", len(res), err)
			}
			if used, high := b.state(t); used != 0 || high < 4*mib {
				t.Fatalf("after the call the budget lends %d, at most it lent %d: want 0 and the answer's size", used, high)
			}
			// Too little room: refused, and all of it given back.
			b = &testBudget{limit: mib}
			_, err = node.Send(ctx, "big", jsontext.Value(fmt.Sprintf("[%d]", 4*mib)), upstream.Limits{Budget: b}, nil)
			wantLimit(t, err, portico.LimitMemory, mib)
			if used, high := b.state(t); used != 0 || high > mib {
				t.Fatalf("after a refusal the budget lends %d, at most it lent %d", used, high)
			}
			// The node is still usable.
			if res, err := node.Call(ctx, "small", jsontext.Value("[3]"), nil); err != nil || string(res) != `"xxx"` {
				t.Fatalf("after a refusal: %s, %v", res, err)
			}
		})
	}
}

// TestSharedBudget: calls of a pool share a budget of 16 MiB; eight
// answers of 3 MiB arrive at once (the node holds each one's second half
// until the budget has refused three), so five fit and three are refused
// with the memory limit; the budget never lends more than its bound and
// gets all of it back. Neither the refusals nor the answers fail over or
// count against the node.
func TestSharedBudget(t *testing.T) {
	hold := make(chan struct{})
	n := newBigHTTPNode(t, false, hold)
	calls := make(chan struct{}, 100)
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls <- struct{}{} })
	pool := upstream.NewPool(upstream.PoolConfig{Network: "evm", Members: []upstream.Member{
		{Name: "big", Node: upstream.NewHTTP(n.srv.URL, nil)},
		{Name: "other", Node: upstream.NewInProcess(other, nil)},
	}, Hedge: upstream.Hedge{Disabled: true}})
	defer pool.Close()
	b := &testBudget{limit: 16 * mib, refused: make(chan struct{}, 8)}
	const answers, size = 8, 3 * mib
	errs := make(chan error, answers)
	for range answers {
		go func() {
			res, err := pool.Do(context.Background(), upstream.Request{Method: "big", Params: jsontext.Value(fmt.Sprintf("[%d]", size)), Budget: b}, nil)
			if err == nil && len(res) != size+2 {
				err = fmt.Errorf("a result of %d bytes", len(res))
			}
			errs <- err
		}()
	}
	for range 3 {
		<-b.refused
	}
	close(hold)
	var ok, refused int
	for range answers {
		err := <-errs
		var l *portico.LimitError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &l) && l.Limit == portico.LimitMemory:
			refused++
		default:
			t.Errorf("call: %v", err)
		}
	}
	if ok != 5 || refused != 3 {
		t.Fatalf("%d answers and %d refusals, want 5 and 3", ok, refused)
	}
	if used, high := b.state(t); used != 0 || high > b.limit {
		t.Fatalf("the budget lends %d after the calls and lent at most %d (bound %d)", used, high, b.limit)
	}
	st := pool.Nodes()
	if len(calls) != 0 || st[0].Errors != 0 || st[0].Benched {
		t.Fatalf("a refusal failed over (%d calls to the other node) or counted against the node (%+v)", len(calls), st[0])
	}
}

// TestResultLimitNoFailover: an answer past its bound is not the node's
// fault: the pool returns the limit error, asks no other node and does
// not bench the node. Hedging is off, as in TestSharedBudget: on a loaded
// machine reading a megabyte can outlast the hedge delay, and a hedge is
// sent for slowness, before any limit is known, which is not what this
// test is about.
func TestResultLimitNoFailover(t *testing.T) {
	n := newBigHTTPNode(t, true, nil)
	calls := make(chan struct{}, 100)
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls <- struct{}{} })
	pool := upstream.NewPool(upstream.PoolConfig{Network: "evm", Members: []upstream.Member{
		{Name: "big", Node: upstream.NewHTTP(n.srv.URL, nil)},
		{Name: "other", Node: upstream.NewInProcess(other, nil)},
	}, Hedge: upstream.Hedge{Disabled: true}})
	defer pool.Close()
	for range 3 {
		_, err := pool.Do(context.Background(), upstream.Request{Method: "big", Params: jsontext.Value(fmt.Sprintf("[%d]", 2*mib)), MaxResult: mib}, nil)
		wantLimit(t, err, portico.LimitResult, mib)
		<-n.written
	}
	st := pool.Nodes()
	if len(calls) != 0 || st[0].Errors != 0 || st[0].Benched {
		t.Fatalf("the limit failed over (%d calls to the other node) or counted against the node (%+v)", len(calls), st[0])
	}
}

// TestNothingLargePooled: after many large answers (and large requests)
// nothing large stays in a reuse pool. The heap is measured after one
// collection: what a sync.Pool holds survives one (in its victim cache),
// which is what a gateway between two collections carries.
func TestNothingLargePooled(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			n := newBigHTTPNode(t, chunked, nil)
			node := upstream.NewHTTP(n.srv.URL, nil)
			defer node.Close()
			// A request of 2 MiB: its params carry padding the node
			// ignores.
			pad := `"` + strings.Repeat("p", 2*mib) + `"`
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 4 {
						res, err := node.Call(context.Background(), "big", jsontext.Value(fmt.Sprintf("[%d,%s]", 8*mib, pad)), nil)
						if err != nil || len(res) != 8*mib+2 {
							t.Errorf("%d bytes, %v", len(res), err)
						}
						<-n.written
					}
				})
			}
			wg.Wait()
			runtime.GC()
			runtime.ReadMemStats(&after)
			grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("the live heap grew %.1f MiB", float64(grew)/mib)
			if grew > 4*mib {
				t.Fatalf("after the calls %d bytes more stay live: an answer or request stays in a pool", grew)
			}
		})
	}
}

// TestBudgetGivenBackOnTimeout: a call that ends at its deadline while its
// answer is being read gives its budget back.
func TestBudgetGivenBackOnTimeout(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	n := newBigHTTPNode(t, false, hold)
	node := upstream.NewHTTP(n.srv.URL, nil)
	defer node.Close()
	b := &testBudget{limit: 64 * mib}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := node.Send(ctx, "big", jsontext.Value(fmt.Sprintf("[%d]", 4*mib)), upstream.Limits{Budget: b}, nil)
	if !errors.Is(err, portico.ErrUpstreamTimeout) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if used, high := b.state(t); used != 0 || high == 0 {
		t.Fatalf("the budget lends %d after the call (at most %d)", used, high)
	}
}

// TestMembudget: the gateway's budgets (membudget: the process, a key, a
// connection) are MemoryBudgets; a refusal names the budget that refused,
// and every level gets its bytes back.
func TestMembudget(t *testing.T) {
	process := membudget.New("process", 64*mib, nil)
	key := membudget.New("key", 0, process)
	conn := membudget.New("connection", mib, key)
	var _ upstream.MemoryBudget = conn
	for name, node := range bigNodes(t) {
		t.Run(name, func(t *testing.T) {
			_, err := node.Send(context.Background(), "big", jsontext.Value(fmt.Sprintf("[%d]", 4*mib)), upstream.Limits{Budget: conn}, nil)
			var refused *membudget.Refused
			if !errors.As(err, &refused) || refused.Budget != "connection" {
				t.Fatalf("got %v, want the connection's budget to refuse", err)
			}
			wantLimit(t, err, portico.LimitMemory, mib)
			res, err := node.Send(context.Background(), "big", jsontext.Value(fmt.Sprintf("[%d]", 4*mib)), upstream.Limits{Budget: key}, nil)
			if err != nil || len(res) != 4*mib+2 {
				t.Fatalf("under the key's budget: %d bytes, %v", len(res), err)
			}
			if process.Used() != 0 || key.Used() != 0 || conn.Used() != 0 {
				t.Fatalf("after the calls the budgets hold %d, %d, %d", process.Used(), key.Used(), conn.Used())
			}
		})
	}
}

// TestBudgetGivenBackWhenCallsGiveUp: calls on a WebSocket that give up
// (their deadline) while their answers are read or handed over leave
// nothing taken: once the node is closed the budget lends nothing, however
// the deadlines fell. The deadlines are spread around the time an answer
// takes, so that many fall while one is read or handed over.
func TestBudgetGivenBackWhenCallsGiveUp(t *testing.T) {
	for _, idLast := range []bool{false, true} {
		t.Run(fmt.Sprintf("idLast=%v", idLast), func(t *testing.T) {
			node := upstream.NewWebSocket(bigWSNode(t, idLast), nil)
			params := jsontext.Value(fmt.Sprintf("[%d]", 256<<10))
			start := time.Now()
			if _, err := node.Call(context.Background(), "big", params, nil); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			b := &testBudget{limit: 1 << 40}
			answered := 0
			for i := range 300 {
				ctx, cancel := context.WithTimeout(context.Background(), took*time.Duration(50+i%100)/100)
				if _, err := node.Send(ctx, "big", params, upstream.Limits{Budget: b}, nil); err == nil {
					answered++
				}
				cancel()
			}
			t.Logf("%d of 300 calls answered", answered)
			node.Close()
			if used, high := b.state(t); used != 0 {
				t.Fatalf("the budget lends %d after every call gave up or returned (at most %d)", used, high)
			}
		})
	}
}
