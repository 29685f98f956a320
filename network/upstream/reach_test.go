package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
)

// fleetNode is a node of a mixed fleet, for fault injection: it keeps the
// state of its newest keep blocks (0: every block) and answers older
// reads (get_state [n]) with its software's words; get_block [n] below
// first is missing history; methods in lacks are unknown to it; while
// limited it answers HTTP 429 with Retry-After: 1.
type fleetNode struct {
	name    string
	head    uint64
	keep    uint64
	first   uint64
	words   string
	lacks   map[string]bool
	delay   time.Duration
	limited atomic.Bool

	calls    atomic.Int64 // calls other than tracking
	inFlight atomic.Int64
	maxIn    atomic.Int64
	srv      *httptest.Server
}

func newFleetNode(t *testing.T, n *fleetNode) *fleetNode {
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls, _, _ := jsonrpc.Decode(body)
		c := calls[0]
		switch c.Method {
		case "chain_id":
			w.Write(jsonrpc.AppendResult(nil, c.ID, []byte(`"c"`)))
			return
		case "chain_head":
			w.Write(jsonrpc.AppendResult(nil, c.ID, []byte(strconv.FormatUint(n.head, 10))))
			return
		}
		n.calls.Add(1)
		in := n.inFlight.Add(1)
		defer n.inFlight.Add(-1)
		for {
			m := n.maxIn.Load()
			if in <= m || n.maxIn.CompareAndSwap(m, in) {
				break
			}
		}
		time.Sleep(n.delay)
		if n.limited.Load() {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		var block uint64 // params are [n]
		fmt.Sscanf(string(c.Params), "[%d]", &block)
		fail := func(code int, msg string) {
			w.Write(jsonrpc.AppendError(nil, c.ID, &jsonrpc.Error{Code: code, Message: msg}))
		}
		switch {
		case n.lacks[c.Method]:
			fail(-32601, "the method "+c.Method+" does not exist/is not available")
		case c.Method == "get_state" && n.keep > 0 && n.head-block >= n.keep:
			fail(-32000, fmt.Sprintf(n.words, block))
		case c.Method == "get_block" && block < n.first:
			fail(-32000, "pruned history unavailable")
		default:
			w.Write(jsonrpc.AppendResult(nil, c.ID, []byte(`"`+n.name+`"`)))
		}
	}))
	t.Cleanup(n.srv.Close)
	return n
}

// gethWords are geth's two texts for state it does not keep.
const (
	gethPath = "historical state 0x%064x is not available"
	gethHash = "missing trie node %064x (path ) <nil>"
)

// fleetPool is a started pool over nodes, with the EVM family's words.
func fleetPool(t *testing.T, nodes []*fleetNode, reach map[string]portico.Reach) *upstream.Pool {
	t.Helper()
	var members []upstream.Member
	for _, n := range nodes {
		node, err := upstream.Dial(n.srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, upstream.Member{Name: n.name, Node: node, Reach: reach[n.name]})
	}
	chain := fakeChain
	chain.Answers = evm.Answers
	p := upstream.NewPool(upstream.PoolConfig{Network: "t", Members: members, Chain: chain, PollInterval: time.Hour,
		Hedge: upstream.Hedge{Disabled: true}})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// stateAt reads get_state at block n through the pool.
func stateAt(p *upstream.Pool, method string, n uint64, data portico.Data) (string, error) {
	res, err := p.Do(context.Background(), upstream.Request{Method: method, Params: jsontext.Value(fmt.Sprintf("[%d]", n)),
		Block: portico.Block{Kind: portico.BlockNumber, Number: n}, Data: data}, nil)
	return string(res), err
}

// TestOldStateFromArchive: two full nodes that keep 16 blocks of state
// (geth's two texts) before a slower archive node. Every old-state read
// is answered by the archive; what the full nodes said is learned, so that
// after the first old read the full nodes are not asked again; fresh reads
// stay on the first full node, which is never benched.
func TestOldStateFromArchive(t *testing.T) {
	full1 := newFleetNode(t, &fleetNode{name: "full1", head: 80, keep: 16, words: gethPath})
	full2 := newFleetNode(t, &fleetNode{name: "full2", head: 80, keep: 16, words: gethHash})
	archive := newFleetNode(t, &fleetNode{name: "archive", head: 80, delay: 30 * time.Millisecond})
	p := fleetPool(t, []*fleetNode{full1, full2, archive}, nil)
	for n := uint64(1); n <= 60; n++ {
		got, err := stateAt(p, "get_state", n, portico.DataState)
		if err != nil || got != `"archive"` {
			t.Fatalf("block %d: %s %v", n, got, err)
		}
	}
	if f := full1.calls.Load() + full2.calls.Load(); f != 2 {
		t.Errorf("the full nodes were asked %d times for old state, want 2 (once each, then learned)", f)
	}
	if got, err := stateAt(p, "get_state", 79, portico.DataState); err != nil || got != `"full1"` {
		t.Errorf("fresh read: %s %v, want full1", got, err)
	}
	for _, s := range p.Nodes() {
		if s.Benched {
			t.Errorf("%s benched for data it was never meant to keep", s.Name)
		}
		if s.Name != "archive" && (!s.Keeps.Learned || s.Keeps.StateBlocks == 0 || s.Answers["missing"] != 1) {
			t.Errorf("%s: keeps %+v, answers %v: want learned state depth and one missing answer", s.Name, s.Keeps, s.Answers)
		}
	}
}

// TestConfiguredReach: with the reach in config an old read costs one
// node call; a call the config says no node keeps costs none and names
// the block; a namespace a node lacks never goes to it.
func TestConfiguredReach(t *testing.T) {
	full := newFleetNode(t, &fleetNode{name: "full", head: 80, keep: 16, words: gethPath, first: 50, lacks: map[string]bool{"debug_trace": true}})
	archive := newFleetNode(t, &fleetNode{name: "archive", head: 80})
	p := fleetPool(t, []*fleetNode{full, archive}, map[string]portico.Reach{
		"full":    {StateBlocks: 16, FirstBlock: 50, Lacks: []string{"debug_"}},
		"archive": {Archive: true},
	})
	for n := uint64(1); n <= 60; n++ {
		if got, err := stateAt(p, "get_state", n, portico.DataState); err != nil || got != `"archive"` {
			t.Fatalf("block %d: %s %v", n, got, err)
		}
	}
	if got, err := stateAt(p, "debug_trace", 79, portico.DataAny); err != nil || got != `"archive"` {
		t.Fatalf("debug_: %s %v", got, err)
	}
	if full.calls.Load() != 0 || archive.calls.Load() != 61 {
		t.Errorf("node calls: full %d, archive %d; want 0 and 61 (one per client call)", full.calls.Load(), archive.calls.Load())
	}

	p = fleetPool(t, []*fleetNode{full}, map[string]portico.Reach{"full": {StateBlocks: 16}})
	before := full.calls.Load()
	_, err := stateAt(p, "get_state", 5, portico.DataState)
	var me *portico.MissingError
	if !errors.As(err, &me) || me.ErrorCode() != portico.CodeNotKept || me.Error() != "no node of network t keeps the state of block 5" {
		t.Errorf("old read with no archive: %v, want a MissingError naming the block", err)
	}
	if full.calls.Load() != before {
		t.Error("a node the config says lacks the state was asked")
	}
}

// TestMissingEverywhere: when every node asked lacks the data, the error
// names the block and carries the last node's code and words, and no node
// is benched.
func TestMissingEverywhere(t *testing.T) {
	a := newFleetNode(t, &fleetNode{name: "a", head: 80, keep: 16, words: gethHash, first: 70})
	b := newFleetNode(t, &fleetNode{name: "b", head: 80, keep: 16, words: gethPath, first: 70})
	p := fleetPool(t, []*fleetNode{a, b}, nil)
	_, err := stateAt(p, "get_state", 3, portico.DataState)
	var me *portico.MissingError
	if !errors.As(err, &me) || me.Code != -32000 || me.What != "the state of block 3" {
		t.Fatalf("%v, want a MissingError about the state of block 3 with the node's code", err)
	}
	e, _, _ := jsonrpc.ErrorFor(err)
	if e.Code != -32000 || !strings.HasPrefix(e.Message, "no node of network t keeps the state of block 3; the last node asked said: ") {
		t.Errorf("answered %d %q", e.Code, e.Message)
	}
	_, err = stateAt(p, "get_block", 10, portico.DataHistory)
	if !errors.As(err, &me) || me.What != "block 10" {
		t.Errorf("history: %v", err)
	}
	for _, s := range p.Nodes() {
		if s.Benched {
			t.Errorf("%s benched", s.Name)
		}
	}
}

// TestProviderRateLimit: a provider first in order that answers 429 with
// Retry-After is left alone for that long, not benched, and no client
// call fails while another node has room; a node's own concurrency bound
// is never passed, the calls past it going elsewhere.
func TestProviderRateLimit(t *testing.T) {
	provider := newFleetNode(t, &fleetNode{name: "provider", head: 80})
	provider.limited.Store(true)
	own := newFleetNode(t, &fleetNode{name: "own", head: 80, delay: 5 * time.Millisecond})
	p := fleetPool(t, []*fleetNode{provider, own}, nil)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := stateAt(p, "get_state", 79, portico.DataState); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d of 200 calls failed while another node had room", failed.Load())
	}
	if c := provider.calls.Load(); c > 8 {
		t.Errorf("the rate-limited provider was asked %d times within its Retry-After", c)
	}
	s := p.Nodes()[0]
	if s.Benched || s.Errors != 0 || s.Answers["limited"] == 0 || s.Rate.LimitedUntil.IsZero() {
		t.Errorf("provider state %+v: want limited, not benched, no errors", s)
	}

	busy := newFleetNode(t, &fleetNode{name: "busy", head: 80, delay: 20 * time.Millisecond})
	spare := newFleetNode(t, &fleetNode{name: "spare", head: 80})
	p = fleetPool(t, []*fleetNode{busy, spare}, map[string]portico.Reach{"busy": {Concurrent: 2}})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, err := stateAt(p, "get_state", 79, portico.DataState); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 || busy.maxIn.Load() > 2 || spare.calls.Load() == 0 {
		t.Errorf("failed %d, busy's most in flight %d (bound 2), spare's calls %d", failed.Load(), busy.maxIn.Load(), spare.calls.Load())
	}
}

// TestLearnedMethod: a node that answers -32601 for a method is not sent
// it again for a while.
func TestLearnedMethod(t *testing.T) {
	a := newFleetNode(t, &fleetNode{name: "a", head: 80, lacks: map[string]bool{"trace_block": true}})
	b := newFleetNode(t, &fleetNode{name: "b", head: 80})
	p := fleetPool(t, []*fleetNode{a, b}, nil)
	for range 5 {
		if got, err := stateAt(p, "trace_block", 79, portico.DataAny); err != nil || got != `"b"` {
			t.Fatalf("%s %v", got, err)
		}
	}
	if a.calls.Load() != 1 {
		t.Errorf("the node without the method was asked %d times, want 1", a.calls.Load())
	}
	if got, _ := stateAt(p, "get_state", 79, portico.DataState); got != `"a"` {
		t.Errorf("other methods: %s, want a", got)
	}
}

// TestLearnedDepthKeepsWhatWasServed: a node that answered state 50
// blocks deep and then lacked it 79 deep is learned to keep 50: a read 60
// deep goes to the archive at once, one 45 deep still to the full node.
func TestLearnedDepthKeepsWhatWasServed(t *testing.T) {
	full := newFleetNode(t, &fleetNode{name: "full", head: 80, keep: 64, words: gethPath})
	archive := newFleetNode(t, &fleetNode{name: "archive", head: 80})
	p := fleetPool(t, []*fleetNode{full, archive}, nil)
	for _, c := range []struct {
		block uint64
		want  string
	}{{30, "full"}, {1, "archive"}, {20, "archive"}, {35, "full"}} {
		if got, err := stateAt(p, "get_state", c.block, portico.DataState); err != nil || got != `"`+c.want+`"` {
			t.Fatalf("block %d: %s %v, want %s", c.block, got, err, c.want)
		}
	}
	if f, a := full.calls.Load(), archive.calls.Load(); f != 3 || a != 2 {
		t.Errorf("node calls: full %d, archive %d; want 3 (one a miss) and 2", f, a)
	}
}
