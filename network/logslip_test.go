package network

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/chainview"
)

// TestLogRangesResolved: every tag resolves before a log query's bounds
// (pending as the head; heads that are not fresh still bound; a mark the
// heads do not know at its widest), and a range the served chain shows
// to be wrong is refused with go-ethereum's words before any node is
// asked: past the head, or reversed once its tags are resolved. Heads
// that are not fresh refuse nothing as wrong.
func TestLogRangesResolved(t *testing.T) {
	bound := portico.LogSettings{LogLimits: portico.LogLimits{MaxBlockRange: 5000}, NodeRange: 1000, Parallel: 2,
		Cost: portico.LogCostRange, CostBlocks: 1000}
	tests := []struct {
		name   string
		node   logsNode
		filter string
		// want: "" answered, "range" the range bound, or the start of
		// the refusal's message.
		want  string
		price int // what Price says it costs, when answered
	}{
		{"pending", logsNode{head: 20000}, `{"fromBlock":"0x0","toBlock":"pending"}`, "range", 0},
		{"pending near the head", logsNode{head: 20000}, `{"fromBlock":"0x4269","toBlock":"pending"}`, "", 3 * 255},
		{"pending alone", logsNode{head: 20000}, `{"fromBlock":"pending","toBlock":"pending"}`, "", 255},
		{"latest, heads not fresh", logsNode{head: 20000, stale: true}, `{"fromBlock":"0x0"}`, "range", 0},
		{"finalized not known", logsNode{head: 20000}, `{"fromBlock":"finalized","toBlock":"latest"}`, "range", 0},
		{"finalized known", logsNode{head: 20000, finalized: 19990}, `{"fromBlock":"finalized","toBlock":"latest"}`, "", 255},
		{"safe not known, at the end", logsNode{head: 20000}, `{"fromBlock":"0x4651","toBlock":"safe"}`, "", 2 * 255},
		{"past the head", logsNode{head: 20000}, `{"fromBlock":"0x4e16","toBlock":"0x55f0"}`, "block range extends beyond current head block", 0},
		{"reversed once resolved", logsNode{head: 20000}, `{"fromBlock":"0x4e84"}`, "invalid block range params", 0},
		{"past the head, heads not fresh", logsNode{head: 20000, stale: true}, `{"fromBlock":"0x4e16","toBlock":"0x4e84"}`, "", 255},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node
			node.mu, node.logsPer = new(sync.Mutex), func(b uint64) int { return int(b % 2) }
			n := New(Config{Name: "net", Upstream: &node, Logs: bound, Tags: evmTags})
			c := getLogs(t, tc.filter)
			c.Method.Cost = 255
			price, perr := n.Price(c)
			out := n.Call(context.Background(), c, nil)
			switch tc.want {
			case "":
				if perr != nil || out.Err != nil {
					t.Fatalf("price error %v, call error %v", perr, out.Err)
				}
				if price != tc.price {
					t.Errorf("price %d, want %d", price, tc.price)
				}
				return
			case "range":
				var e *portico.LogsTooLargeError
				if !errors.As(perr, &e) || e.Bound != portico.LogBoundRange || !errors.As(out.Err, &e) {
					t.Fatalf("price error %v, call error %v; want the range bound", perr, out.Err)
				}
			default:
				var wrong *portico.LogRangeError
				if !errors.As(perr, &wrong) || !errors.As(out.Err, &wrong) {
					t.Fatalf("price error %v, call error %v; want a LogRangeError", perr, out.Err)
				}
				// go-ethereum's answer, byte for byte: no data of Portico's.
				e, _, _ := jsonrpc.ErrorFor(perr)
				if e.Code != -32602 || e.Message != tc.want || len(e.Data) != 0 {
					t.Errorf("answered %d %q %s, want -32602 %q", e.Code, e.Message, e.Data, tc.want)
				}
			}
			if node.callCount() != 0 {
				t.Errorf("%d node calls for a query refused before any", node.callCount())
			}
		})
	}
}

// evmTags are the EVM's block tags (families/evm's Chain.Tags).
var evmTags = map[string]portico.Head{"latest": portico.HeadLatest, "safe": portico.HeadSafe, "finalized": portico.HeadFinalized}

// TestSplitLogsRefund: a split query that a node refuses part way (a node
// behind the served chain refuses the chunks past its head) gives back
// the price of the chunks no node answered; one refused from its first
// chunk keeps the method's cost once, as any call a node answered with an
// error does.
func TestSplitLogsRefund(t *testing.T) {
	settings := portico.LogSettings{NodeRange: 1000, Parallel: 4, Cost: portico.LogCostRange, CostBlocks: 1000}
	for _, tc := range []struct {
		name        string
		refuseAbove uint64
		filter      string
		charged     int // 10,000 blocks: 10 units of 255
		refund      int
	}{
		// Chunks 1-999, 1000-1999, ..., 7000-7999 answered (7,999
		// blocks: 8 units); 8000-8999 refused.
		{"part answered", 8500, `{"fromBlock":"0x1","toBlock":"0x2710"}`, 2550, 2550 - 8*255},
		{"first chunk refused", 500, `{"fromBlock":"0x1","toBlock":"0x2710"}`, 2550, 2550 - 255},
		{"not split, refused", 500, `{"fromBlock":"0x1","toBlock":"0x3e8"}`, 255, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := logsNode{head: 20000, refuseAbove: tc.refuseAbove, logsPer: func(uint64) int { return 1 }, mu: new(sync.Mutex)}
			n := New(Config{Name: "net", Upstream: &node, Logs: settings, Tags: evmTags})
			c := getLogs(t, tc.filter)
			c.Method.Cost = 255
			if p, err := n.Price(c); err != nil || p != tc.charged {
				t.Fatalf("price %d, %v; want %d", p, err, tc.charged)
			}
			c.Charged = tc.charged
			out := n.Call(context.Background(), c, nil)
			var rpcErr *jsonrpc.Error
			if !errors.As(out.Err, &rpcErr) || rpcErr.Code != -32602 {
				t.Fatalf("error %v, want the node's -32602", out.Err)
			}
			if out.Refund != tc.refund {
				t.Errorf("refund %d, want %d", out.Refund, tc.refund)
			}
		})
	}
}

// filterCall is a call of an EVM filter method with params.
func filterMethodCall(t *testing.T, method, params string, key string) Call {
	t.Helper()
	var rule func(jsontext.Value) (portico.Params, error)
	for _, m := range evm.Table().Known {
		if m.Name == method {
			rule = m.Params
		}
	}
	if rule == nil {
		t.Fatalf("no rule for %s", method)
	}
	p, err := rule(jsontext.Value(params))
	if err != nil {
		t.Fatal(err)
	}
	c := Call{Method: &portico.Method{Name: method, Cost: 255}, Params: p}
	c.Key.Name = key
	return c
}

// TestLogFilters: a log filter is kept by the network and read as
// eth_getLogs: made only within the bounds of a log query, its logs split
// into chunks and priced by its range, its changes the blocks added since
// the last poll (at most the range bound at a time), another key's id not
// found and not sent to a node, forgotten when uninstalled or unread for
// five minutes, and at most 256 of them per key.
func TestLogFilters(t *testing.T) {
	node := logsNode{head: 20000, logsPer: func(b uint64) int { return int(b % 3) }, mu: new(sync.Mutex)}
	n := New(Config{Name: "net", Upstream: &node, Tags: evmTags,
		Logs: portico.LogSettings{LogLimits: portico.LogLimits{MaxBlockRange: 5000}, NodeRange: 1000, Parallel: 2, Cost: portico.LogCostRange, CostBlocks: 1000}})
	now := time.Unix(1_800_000_000, 0)
	n.now = func() time.Time { return now }
	ctx := context.Background()

	whole := filterMethodCall(t, "eth_newFilter", `[{"fromBlock":"0x0"}]`, "a")
	if _, err := n.Price(whole); err == nil {
		t.Fatal("a filter over 20,001 blocks was priced: want the range bound")
	}
	if out := n.Call(ctx, whole, nil); out.Err == nil {
		t.Fatal("a filter over 20,001 blocks was made")
	}

	made := n.Call(ctx, filterMethodCall(t, "eth_newFilter", `[{"fromBlock":"0x4a38"}]`, "a"), nil) // 19,000
	if made.Err != nil {
		t.Fatal(made.Err)
	}
	id := string(made.Result)

	read := filterMethodCall(t, "eth_getFilterLogs", "["+id+"]", "a")
	if p, err := n.Price(read); err != nil || p != 2*255 {
		t.Fatalf("eth_getFilterLogs over 1,001 blocks priced %d, %v; want 510", p, err)
	}
	out := n.Call(ctx, read, nil)
	if out.Err != nil || string(out.Result) != string(node.answer(19000, 20000)) {
		t.Fatalf("the filter's logs: %v, %d bytes; want the node's own", out.Err, len(out.Result))
	}
	if node.callCount() != 2 || node.widest > 1000 {
		t.Errorf("%d node calls, the widest %d blocks; want 2 chunks of at most 1,000", node.callCount(), node.widest)
	}

	other := filterMethodCall(t, "eth_getFilterLogs", "["+id+"]", "b")
	if _, err := n.Price(other); !errors.Is(err, portico.ErrFilterNotFound) {
		t.Errorf("another key's read: %v, want filter not found", err)
	}

	poll := filterMethodCall(t, "eth_getFilterChanges", "["+id+"]", "a")
	if out := n.Call(ctx, poll, nil); out.Err != nil || string(out.Result) != "[]" {
		t.Fatalf("a poll before any new block: %s, %v", out.Result, out.Err)
	}
	node.mu.Lock()
	node.head = 20010
	node.mu.Unlock()
	if out := n.Call(ctx, poll, nil); out.Err != nil || string(out.Result) != string(node.answer(20001, 20010)) {
		t.Fatalf("a poll after 10 blocks: %s, %v", out.Result, out.Err)
	}
	// A poll long after: at most the range bound at once, the rest next.
	node.mu.Lock()
	node.head = 28000
	node.mu.Unlock()
	if p, err := n.Price(poll); err != nil || p != 5*255 {
		t.Errorf("a poll over 5,000 blocks priced %d, %v; want 5 units", p, err)
	}
	if out := n.Call(ctx, poll, nil); out.Err != nil || string(out.Result) != string(node.answer(20011, 25010)) {
		t.Fatalf("a poll over 7,990 blocks: %v; want the first 5,000", out.Err)
	}
	if out := n.Call(ctx, poll, nil); out.Err != nil || string(out.Result) != string(node.answer(25011, 28000)) {
		t.Fatalf("the next poll: %v; want the rest", out.Err)
	}

	calls := node.callCount()
	uninstall := filterMethodCall(t, "eth_uninstallFilter", "["+id+"]", "a")
	if out := n.Call(ctx, uninstall, nil); out.Err != nil || string(out.Result) != "true" {
		t.Fatalf("uninstall: %s, %v", out.Result, out.Err)
	}
	if out := n.Call(ctx, read, nil); !errors.Is(out.Err, portico.ErrFilterNotFound) {
		t.Errorf("a read after uninstall: %v", out.Err)
	}
	if node.callCount() != calls {
		t.Errorf("%d node calls for a filter the network keeps", node.callCount()-calls)
	}

	// Unread for five minutes: gone.
	id = string(n.Call(ctx, filterMethodCall(t, "eth_newFilter", `[{}]`, "a"), nil).Result)
	now = now.Add(filterTimeout + filterSweep)
	if out := n.Call(ctx, filterMethodCall(t, "eth_getFilterLogs", "["+id+"]", "a"), nil); !errors.Is(out.Err, portico.ErrFilterNotFound) {
		t.Errorf("a read five minutes on: %v, want filter not found", out.Err)
	}

	for i := range maxKeyFilters + 1 {
		out := n.Call(ctx, filterMethodCall(t, "eth_newFilter", `[{}]`, "c"), nil)
		var limit *portico.LimitError
		switch {
		case i < maxKeyFilters && out.Err != nil:
			t.Fatalf("filter %d: %v", i, out.Err)
		case i == maxKeyFilters && (!errors.As(out.Err, &limit) || limit.Limit != portico.LimitKeyFilters):
			t.Fatalf("filter %d: %v, want the bound on a key's filters", i, out.Err)
		}
	}
	if out := n.Call(ctx, filterMethodCall(t, "eth_newFilter", `[{}]`, "d"), nil); out.Err != nil {
		t.Errorf("another key's filter: %v", out.Err)
	}
}

// TestLogFilterReorg: a reorg that replaces blocks a poll reported sends
// the next poll back to the first replaced block, so the new branch's
// logs are reported.
func TestLogFilterReorg(t *testing.T) {
	view := chainview.New(64)
	hash := func(b uint64, branch string) string { return fmt.Sprintf("0x%s%063x", branch, b)[:66] }
	headers := map[string]portico.Header{}
	follow := func(to uint64, branch string, fork uint64) {
		t.Helper()
		for b := uint64(1); b <= to; b++ {
			br := "a"
			if b > fork {
				br = branch
			}
			pb := "a"
			if b-1 > fork {
				pb = branch
			}
			headers[hash(b, br)] = portico.Header{Number: b, Hash: hash(b, br), Parent: hash(b-1, pb), ParentNumber: b - 1}
		}
		br := branch
		if to <= fork {
			br = "a"
		}
		fetch := func(_ context.Context, _ uint64, h string) (portico.Header, error) { return headers[h], nil }
		if _, err := view.Follow(context.Background(), headers[hash(to, br)], fetch); err != nil {
			t.Fatal(err)
		}
	}
	follow(20, "a", 100)
	node := logsNode{head: 20, logsPer: func(uint64) int { return 1 }, mu: new(sync.Mutex), view: view}
	n := New(Config{Name: "net", Upstream: &node, Tags: evmTags, Logs: portico.LogSettings{NodeRange: 1000, Parallel: 1}})
	ctx := context.Background()
	id := string(n.Call(ctx, filterMethodCall(t, "eth_newFilter", `[{}]`, "a"), nil).Result)
	poll := filterMethodCall(t, "eth_getFilterChanges", "["+id+"]", "a")

	follow(25, "a", 100)
	node.mu.Lock()
	node.head = 25
	node.mu.Unlock()
	if out := n.Call(ctx, poll, nil); out.Err != nil || string(out.Result) != string(node.answer(21, 25)) {
		t.Fatalf("blocks 21 to 25: %s, %v", out.Result, out.Err)
	}
	// Blocks 23 to 25 replaced by another branch, to 26.
	follow(26, "b", 22)
	node.mu.Lock()
	node.head = 26
	node.mu.Unlock()
	out := n.Call(ctx, poll, nil)
	if out.Err != nil || string(out.Result) != string(node.answer(23, 26)) {
		t.Fatalf("after the reorg: %s, %v; want blocks 23 to 26 again", out.Result, out.Err)
	}
	if !strings.Contains(string(out.Result), `"0x17"`) {
		t.Errorf("block 23's log missing: %s", out.Result)
	}
}
