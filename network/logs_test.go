package network

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/families/starknet"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/logsplit"
	"github.com/porticohq/portico/network/upstream"
)

// logsNode is a node with logsPer(b) logs in block b, up to head, that
// refuses ranges wider than refuseOver blocks with refusal, and counts its
// calls.
type logsNode struct {
	head, finalized uint64
	logsPer         func(b uint64) int
	refuseOver      uint64
	refusal         string
	// refuseAbove, when not 0, refuses a range that ends past it with
	// go-ethereum's error for a range past its head (a node behind).
	refuseAbove uint64
	stale       bool            // the heads are not fresh
	view        *chainview.View // nil: an empty one
	mu          *sync.Mutex
	calls       int
	widest      uint64
}

func (f *logsNode) answer(from, to uint64) jsontext.Value {
	out := []byte{'['}
	for b := from; b <= to && b <= f.head; b++ {
		for i := 0; i < f.logsPer(b); i++ {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = fmt.Appendf(out, `{"blockNumber":"0x%x","logIndex":"0x%x"}`, b, i)
		}
	}
	return append(out, ']')
}

// callCount is how many calls the node took; a chunk a capped query left
// behind may still be counting.
func (f *logsNode) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *logsNode) Do(_ context.Context, req upstream.Request, dst []byte) (jsontext.Value, error) {
	var p []struct {
		From string `json:"fromBlock"`
		To   string `json:"toBlock"`
	}
	if err := json.Unmarshal(req.Params, &p, json.RejectUnknownMembers(false)); err != nil {
		return nil, err
	}
	from, _ := strconv.ParseUint(strings.TrimPrefix(p[0].From, "0x"), 16, 64)
	to, _ := strconv.ParseUint(strings.TrimPrefix(p[0].To, "0x"), 16, 64)
	f.mu.Lock()
	f.calls++
	f.widest = max(f.widest, to-from+1)
	f.mu.Unlock()
	if f.refuseOver > 0 && to-from+1 > f.refuseOver {
		return nil, &jsonrpc.Error{Code: -32602, Message: f.refusal}
	}
	if f.refuseAbove > 0 && to > f.refuseAbove {
		return nil, &jsonrpc.Error{Code: -32602, Message: "block range extends beyond current head block"}
	}
	if req.Served != nil {
		*req.Served = "fake"
	}
	return append(dst, f.answer(from, to)...), nil
}

func (f *logsNode) HeadsFresh() (portico.Heads, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return portico.Heads{Latest: f.head, Finalized: f.finalized}, !f.stale
}
func (f *logsNode) OnHeads(func(portico.Heads)) func() { return func() {} }
func (f *logsNode) View() *chainview.View {
	if f.view != nil {
		return f.view
	}
	return chainview.New(16)
}
func (f *logsNode) Subscribe(context.Context, upstream.SubRequest, func(string, jsontext.Value), func(error)) (func(), string, error) {
	return nil, "", errors.New("no subscriptions")
}
func (f *logsNode) CanSubscribe() bool             { return false }
func (f *logsNode) Observe(string, portico.Header) {}
func (f *logsNode) Poke()                          {}
func (f *logsNode) Header(context.Context, uint64, string) (portico.Header, error) {
	return portico.Header{}, upstream.ErrNoHeaders
}

// getLogs is the call eth_getLogs about filter.
func getLogs(t *testing.T, filter string) Call {
	t.Helper()
	p, err := evm.GetLogsParams(jsontext.Value("[" + filter + "]"))
	if err != nil {
		t.Fatal(err)
	}
	return Call{Method: &portico.Method{Name: "eth_getLogs"}, Params: p}
}

// TestSplitLogs: a range wider than the node range is split and merged in
// order into the node's own answer; the bounds refuse before any node is
// asked; the logs cap stops the query and suggests a range that, asked
// next, fits; a node that refuses wide ranges is split around.
func TestSplitLogs(t *testing.T) {
	every3 := func(b uint64) int { return int(b % 3) }
	tests := []struct {
		name     string
		settings portico.LogSettings
		key      *portico.LogLimits
		node     logsNode
		filter   string
		wantErr  *portico.LogsTooLargeError
		maxCalls int // 0: not checked
	}{
		{name: "whole", settings: portico.LogSettings{NodeRange: 1000, Parallel: 4}, node: logsNode{head: 10000, logsPer: every3},
			filter: `{"fromBlock":"0x10","toBlock":"0x200"}`, maxCalls: 1},
		{name: "split 10000 blocks", settings: portico.LogSettings{NodeRange: 1000, Parallel: 4}, node: logsNode{head: 20000, logsPer: every3},
			filter: `{"fromBlock":"0x1","toBlock":"0x2710"}`, maxCalls: 11},
		{name: "latest", settings: portico.LogSettings{NodeRange: 100, Parallel: 3}, node: logsNode{head: 1234, logsPer: every3},
			filter: `{"fromBlock":"0x0"}`, maxCalls: 13},
		{name: "range over the network's bound", settings: portico.LogSettings{LogLimits: portico.LogLimits{MaxBlockRange: 5000}, NodeRange: 1000},
			node: logsNode{head: 20000, logsPer: every3}, filter: `{"fromBlock":"0x1","toBlock":"0x2710"}`,
			wantErr: &portico.LogsTooLargeError{Bound: portico.LogBoundRange, Max: 5000, Got: 10000, Suggest: true, From: 1, To: 5000}, maxCalls: -1},
		{name: "the key's bound over the network's", settings: portico.LogSettings{LogLimits: portico.LogLimits{MaxBlockRange: 5000}, NodeRange: 1000},
			key: &portico.LogLimits{MaxBlockRange: 20000}, node: logsNode{head: 20000, logsPer: every3}, filter: `{"fromBlock":"0x1","toBlock":"0x2710"}`},
		{name: "addresses", settings: portico.LogSettings{LogLimits: portico.LogLimits{MaxAddresses: 1}},
			node: logsNode{head: 100, logsPer: every3}, filter: `{"fromBlock":"0x1","toBlock":"0x2","address":["0x0000000000000000000000000000000000000001","0x0000000000000000000000000000000000000002"]}`,
			wantErr: &portico.LogsTooLargeError{Bound: portico.LogBoundAddresses, Max: 1, Got: 2}, maxCalls: -1},
		{name: "topics", settings: portico.LogSettings{}, key: &portico.LogLimits{MaxTopics: 2},
			node: logsNode{head: 100, logsPer: every3}, filter: `{"fromBlock":"0x1","toBlock":"0x2","topics":[["0x01","0x02"],null,"0x03"]}`,
			wantErr: &portico.LogsTooLargeError{Bound: portico.LogBoundTopics, Max: 2, Got: 3}, maxCalls: -1},
		{name: "logs cap split", settings: portico.LogSettings{LogLimits: portico.LogLimits{MaxLogs: 100}, NodeRange: 50, Parallel: 2},
			node: logsNode{head: 10000, logsPer: func(uint64) int { return 1 }}, filter: `{"fromBlock":"0xa","toBlock":"0x3e8"}`,
			wantErr: &portico.LogsTooLargeError{Bound: portico.LogBoundLogs, Max: 100, Got: 140, Suggest: true, From: 10, To: 109}, maxCalls: 5},
		{name: "logs cap whole", settings: portico.LogSettings{LogLimits: portico.LogLimits{MaxLogs: 10}, NodeRange: 1000},
			node: logsNode{head: 10000, logsPer: func(uint64) int { return 2 }}, filter: `{"fromBlock":"0x0","toBlock":"0x63"}`,
			wantErr: &portico.LogsTooLargeError{Bound: portico.LogBoundLogs, Max: 10, Got: 200, Suggest: true, From: 0, To: 4}, maxCalls: 1},
		{name: "one block passes the cap", settings: portico.LogSettings{LogLimits: portico.LogLimits{MaxLogs: 2}, NodeRange: 1000},
			node: logsNode{head: 100, logsPer: func(uint64) int { return 3 }}, filter: `{"fromBlock":"0x5","toBlock":"0x9"}`,
			wantErr: &portico.LogsTooLargeError{Bound: portico.LogBoundLogs, Max: 2, Got: 15}},
		{name: "geth refuses", settings: portico.LogSettings{NodeRange: 10000, Parallel: 4},
			node:   logsNode{head: 20000, logsPer: every3, refuseOver: 2001, refusal: "exceed maximum block range 2000"},
			filter: `{"fromBlock":"0x1","toBlock":"0x2710"}`},
		{name: "erigon refuses", settings: portico.LogSettings{NodeRange: 5000, Parallel: 2},
			node:   logsNode{head: 20000, logsPer: every3, refuseOver: 1001, refusal: "query block range exceeds server limit, narrow your filter: 1000"},
			filter: `{"fromBlock":"0x1","toBlock":"0x2710"}`},
		{name: "results refused, halved", settings: portico.LogSettings{NodeRange: 5000, Parallel: 2},
			node:   logsNode{head: 20000, logsPer: every3, refuseOver: 1500, refusal: "query returned more than 10000 results"},
			filter: `{"fromBlock":"0x1","toBlock":"0x2710"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node
			node.mu = new(sync.Mutex)
			n := New(Config{Name: "net", Upstream: &node, Logs: tc.settings, Tags: map[string]portico.Head{"latest": portico.HeadLatest}})
			c := getLogs(t, tc.filter)
			c.Logs = tc.key
			out := n.Call(context.Background(), c, nil)
			if tc.wantErr != nil {
				var e *portico.LogsTooLargeError
				if !errors.As(out.Err, &e) || *e != *tc.wantErr {
					t.Fatalf("error %v, want %v", out.Err, tc.wantErr)
				}
				if tc.maxCalls < 0 && node.callCount() > 0 {
					t.Errorf("%d node calls for a query refused before any", node.callCount())
				}
				if tc.maxCalls > 0 && node.callCount() > tc.maxCalls {
					t.Errorf("%d node calls, want at most %d: the query did not stop at the cap", node.callCount(), tc.maxCalls)
				}
				if e.Suggest {
					// The suggested range, asked next, fits.
					next := getLogs(t, fmt.Sprintf(`{"fromBlock":"0x%x","toBlock":"0x%x"}`, e.From, e.To))
					next.Logs = tc.key
					if out := n.Call(context.Background(), next, nil); out.Err != nil {
						t.Errorf("the suggested range [%d, %d] fails: %v", e.From, e.To, out.Err)
					}
				}
				return
			}
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			r, _ := n.logRange(c.Params.Logs, portico.Heads{Latest: node.head})
			want := node.answer(r.from, r.to)
			if string(out.Result) != string(want) {
				t.Errorf("merged answer differs from the node's own (%d bytes, want %d)", len(out.Result), len(want))
			}
			if logs, _ := logsplit.Entries(want); out.Logs != len(logs) {
				t.Errorf("Logs = %d, want %d", out.Logs, len(logs))
			}
			if tc.maxCalls > 0 && node.callCount() > tc.maxCalls {
				t.Errorf("%d node calls, want at most %d", node.callCount(), tc.maxCalls)
			}
			if node.refuseOver > 0 && node.refusal != "query returned more than 10000 results" && n.nodeRange.Load() > node.refuseOver {
				t.Errorf("node range %d after the node said it takes %d", n.nodeRange.Load(), node.refuseOver)
			}
		})
	}
}

// TestSplitLogsMemoryBudget: with no logs cap, the merged answer of a
// split query is held against the call's memory budget while it grows: a
// query whose logs do not fit is refused with the budget's error, and
// everything taken is given back.
func TestSplitLogsMemoryBudget(t *testing.T) {
	node := logsNode{head: 20000, logsPer: func(uint64) int { return 1 }, mu: new(sync.Mutex)}
	n := New(Config{Name: "net", Upstream: &node, Logs: portico.LogSettings{NodeRange: 1000, Parallel: 2},
		Tags: map[string]portico.Head{"latest": portico.HeadLatest}})
	budget := membudget.New("connection", 64<<10, nil) // 10,000 logs are about 400 KB
	c := getLogs(t, `{"fromBlock":"0x1","toBlock":"0x2710"}`)
	c.Budget = budget
	out := n.Call(context.Background(), c, nil)
	var l *portico.LimitError
	if !errors.As(out.Err, &l) || l.Limit != portico.LimitMemory {
		t.Fatalf("error %v, want the memory budget's", out.Err)
	}
	if budget.Used() != 0 {
		t.Errorf("%d bytes still held after the refusal", budget.Used())
	}
	c.Budget = membudget.New("connection", 1<<20, nil)
	if out := n.Call(context.Background(), c, nil); out.Err != nil || out.Logs != 10000 {
		t.Fatalf("within the budget: %d logs, %v", out.Logs, out.Err)
	}
}

// TestEventsBounded: the rollup's getEvents is held to the same bounds
// (its keys count as topics) but never split: it pages with a token.
func TestEventsBounded(t *testing.T) {
	node := logsNode{head: 50000, logsPer: func(uint64) int { return 0 }, mu: new(sync.Mutex)}
	n := New(Config{Name: "net", Upstream: &node, Logs: portico.LogSettings{LogLimits: portico.LogLimits{MaxBlockRange: 1000, MaxTopics: 2}, NodeRange: 10}})
	for _, tc := range []struct {
		name, params string
		want         portico.LogsTooLargeError
	}{
		{"range", `{"filter":{"from_block":{"block_number":5},"to_block":{"block_number":5004},"chunk_size":10}}`,
			portico.LogsTooLargeError{Bound: portico.LogBoundRange, Max: 1000, Got: 5000, Suggest: true, From: 5, To: 1004}},
		{"keys", `{"filter":{"from_block":{"block_number":5},"to_block":{"block_number":6},"keys":[["0x1","0x2"],["0x3"]],"chunk_size":10}}`,
			portico.LogsTooLargeError{Bound: portico.LogBoundTopics, Max: 2, Got: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := starknet.GetEventsParams(jsontext.Value(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			out := n.Call(context.Background(), Call{Method: &portico.Method{Name: "starknet_getEvents"}, Params: p}, nil)
			var e *portico.LogsTooLargeError
			if !errors.As(out.Err, &e) || *e != tc.want {
				t.Fatalf("error %v, want %v", out.Err, &tc.want)
			}
			if node.callCount() != 0 {
				t.Errorf("%d node calls", node.callCount())
			}
		})
	}
}

// TestSplitLogsCachesFinalChunks: chunks whose blocks are all final are
// kept, and a second query that starts at another block asks the nodes
// only for the chunks that are not final.
func TestSplitLogsCachesFinalChunks(t *testing.T) {
	node := logsNode{head: 20000, finalized: 8000, logsPer: func(b uint64) int { return int(b % 2) }, mu: new(sync.Mutex)}
	cache := NewCache(64<<20, nil)
	t.Cleanup(cache.Close)
	n := New(Config{Name: "net", Upstream: &node, Cache: cache, Logs: portico.LogSettings{NodeRange: 1000, Parallel: 4}})
	first := n.Call(context.Background(), getLogs(t, `{"fromBlock":"0x1","toBlock":"0x2710"}`), nil)
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	if node.callCount() != 11 {
		t.Fatalf("%d node calls for 11 chunks", node.callCount())
	}
	node.mu.Lock()
	node.calls = 0
	node.mu.Unlock()
	// 1,000 to 10,000: a query that starts elsewhere shares the chunks.
	second := n.Call(context.Background(), getLogs(t, `{"fromBlock":"0x3e8","toBlock":"0x2710"}`), nil)
	if second.Err != nil {
		t.Fatal(second.Err)
	}
	if string(second.Result) != string(node.answer(1000, 10000)) {
		t.Error("the answer from cached chunks differs from the node's own")
	}
	// 1,000-7,999 come from the cache (7 chunks); 8,000-8,999, 9,000-9,999
	// and 10,000 are not final.
	if node.callCount() != 3 {
		t.Errorf("%d node calls, want 3 (the chunks that are not final)", node.callCount())
	}
}
