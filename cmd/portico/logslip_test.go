package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
)

// laggingNode stands in front of a node, counts the calls it passes by
// method, and refuses eth_getLogs whose toBlock is past its own head
// (behind the node's by lag blocks) as go-ethereum does: -32602, "block
// range extends beyond current head block".
type laggingNode struct {
	srv     *httptest.Server
	backend string
	head    uint64 // 0: never refuses

	mu     sync.Mutex
	calls  map[string]int
	chunks [][2]uint64 // eth_getLogs ranges answered
}

func newLaggingNode(t testing.TB, backend string, head uint64) *laggingNode {
	l := &laggingNode{backend: backend, head: head, calls: map[string]int{}}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var c struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params []struct {
				From string `json:"fromBlock"`
				To   string `json:"toBlock"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &c) == nil {
			l.mu.Lock()
			l.calls[c.Method]++
			l.mu.Unlock()
			if c.Method == "eth_getLogs" && len(c.Params) == 1 {
				from, err1 := hexutil.DecodeUint64(c.Params[0].From)
				to, err2 := hexutil.DecodeUint64(c.Params[0].To)
				if err1 == nil && err2 == nil && l.head > 0 && to > l.head {
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"block range extends beyond current head block"}}`, c.ID)
					return
				}
				if err1 == nil && err2 == nil {
					l.mu.Lock()
					l.chunks = append(l.chunks, [2]uint64{from, to})
					l.mu.Unlock()
				}
			}
		}
		resp, err := http.Post(l.backend, "application/json", strings.NewReader(string(body)))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

// asked are the eth_getLogs ranges the node answered, in order.
func (l *laggingNode) asked() [][2]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][2]uint64(nil), l.chunks...)
}

// count is how many calls of method the node was sent.
func (l *laggingNode) count(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[method]
}

// TestLogsCannotSlip: a log query cannot ask the node for more than its
// bounds and price say, whatever names its range. On anvil with more than
// 10,000 blocks of logs and max_block_range 5,000: toBlock pending is
// bounded and priced as the head; a range past the head is refused at the
// edge, unsent and uncharged, with go-ethereum's words; a log filter over
// the whole chain is refused when made, and one within the bound is read
// as eth_getLogs, split into chunks and priced by its range, its changes
// by theirs; a filter id the key did not make is refused, uncharged; a
// split query that a node refuses part of is charged for the chunks it
// answered.
func TestLogsCannotSlip(t *testing.T) {
	node, head := logsChain(t)
	direct := newLaggingNode(t, node.URL(), 0)
	// A node that lags 1,500 blocks behind: the chunks past its head are
	// refused (what the issue saw for a range past every node's head).
	lagging := newLaggingNode(t, node.URL(), head-1500)

	logs := portico.DefaultLogSettings()
	logs.MaxBlockRange = 5000
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: "test0123456789abcdef0123456789ab"}}
	cfg.Networks = []config.Network{
		{Name: "anvil", Family: "evm", Upstreams: []config.Upstream{{URL: direct.srv.URL}}, Logs: config.LogsOf(logs),
			PollInterval: 100 * time.Millisecond},
		{Name: "lagging", Family: "evm", Upstreams: []config.Upstream{{URL: lagging.srv.URL}}, Logs: config.LogsOf(portico.DefaultLogSettings())},
	}
	s := start(t, cfg)
	url := s.url(t, "anvil")
	hex := func(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

	t.Run("pending is bounded as the head", func(t *testing.T) {
		before := direct.count("eth_getLogs")
		a, credits := logsCall(t, url, "eth_getLogs", `[{"fromBlock":"0x0","toBlock":"pending"}]`)
		if a.Error == nil || a.Error.Code != portico.CodeLogsTooLarge {
			t.Fatalf("fromBlock 0 to pending over %d blocks: %+v, want -32059 (the range bound)", head+1, a.Error)
		}
		if d := direct.count("eth_getLogs") - before; d != 0 || !uncharged(credits) {
			t.Errorf("refused query: %d node calls, %s credits; want 0, 0", d, credits)
		}
		from := head - 2999
		a, credits = logsCall(t, url, "eth_getLogs", fmt.Sprintf(`[{"fromBlock":%q,"toBlock":"pending"}]`, hex(from)))
		if a.Error != nil {
			t.Fatalf("%d %s", a.Error.Code, a.Error.Message)
		}
		sameLogs(t, "to pending", a.Result, mustResult(t, node.URL(), "eth_getLogs", fmt.Sprintf(`[{"fromBlock":%q,"toBlock":%q}]`, hex(from), hex(head))))
		// 3,000 blocks to the head: 3 units of 255, not one.
		if credits != "765" {
			t.Errorf("X-Credits-Used %s, want 765", credits)
		}
	})

	t.Run("a range past the head is refused at the edge", func(t *testing.T) {
		before := direct.count("eth_getLogs")
		a, credits := logsCall(t, url, "eth_getLogs", fmt.Sprintf(`[{"fromBlock":%q,"toBlock":%q}]`, hex(head-10), hex(head+2000)))
		if a.Error == nil || a.Error.Code != -32602 || !strings.HasPrefix(a.Error.Message, "block range extends beyond current head block") {
			t.Fatalf("answer %+v, want -32602 block range extends beyond current head block", a.Error)
		}
		if d := direct.count("eth_getLogs") - before; d != 0 || !uncharged(credits) {
			t.Errorf("%d node calls, %s credits; want 0, 0", d, credits)
		}
		// Started past the head and ended at latest: reversed once latest
		// is resolved, as go-ethereum says.
		a, credits = logsCall(t, url, "eth_getLogs", fmt.Sprintf(`[{"fromBlock":%q}]`, hex(head+100)))
		if a.Error == nil || a.Error.Code != -32602 || !strings.HasPrefix(a.Error.Message, "invalid block range params") || !uncharged(credits) {
			t.Fatalf("answer %+v, %s credits; want -32602 invalid block range params, 0", a.Error, credits)
		}
	})

	t.Run("filters carry the same bounds and prices", func(t *testing.T) {
		a, credits := logsCall(t, url, "eth_newFilter", `[{"fromBlock":"0x0"}]`)
		if a.Error == nil || a.Error.Code != portico.CodeLogsTooLarge || !uncharged(credits) {
			t.Fatalf("a filter over the whole chain: %+v (%s), %s credits; want -32059, 0", a.Error, a.Result, credits)
		}
		from := head - 2999
		id := string(mustResult(t, url, "eth_newFilter", fmt.Sprintf(`[{"fromBlock":%q}]`, hex(from))))
		before := direct.asked()
		a, credits = logsCall(t, url, "eth_getFilterLogs", "["+id+"]")
		if a.Error != nil {
			t.Fatalf("eth_getFilterLogs: %d %s", a.Error.Code, a.Error.Message)
		}
		sameLogs(t, "the filter's logs", a.Result, mustResult(t, node.URL(), "eth_getLogs", fmt.Sprintf(`[{"fromBlock":%q,"toBlock":%q}]`, hex(from), hex(head))))
		if credits != "765" {
			t.Errorf("eth_getFilterLogs over 3,000 blocks: X-Credits-Used %s, want 765", credits)
		}
		// Chunks of at most node_range blocks (those of final blocks the
		// last subtest asked come from the cache).
		for _, c := range direct.asked()[len(before):] {
			if c[1]-c[0]+1 > 1000 {
				t.Errorf("a node was asked for blocks %d to %d, more than node_range", c[0], c[1])
			}
		}
		if n := direct.count("eth_newFilter") + direct.count("eth_getFilterLogs"); n != 0 {
			t.Errorf("%d filter calls reached the node: the network keeps log filters", n)
		}
		// Changes: none yet, then the log of a new block.
		if got := string(mustResult(t, url, "eth_getFilterChanges", "["+id+"]")); got != "[]" {
			t.Fatalf("changes before any new block: %s", got)
		}
		emitter := logsEmitter(t, node.URL(), from, head)
		var dev []string
		if err := logsRPC(node.URL(), "eth_accounts", `[]`, &dev); err != nil {
			t.Fatal(err)
		}
		var tx string
		if err := logsRPC(node.URL(), "eth_sendTransaction", fmt.Sprintf(`[{"from":%q,"to":%q,"gas":"0x186a0"}]`, dev[0], emitter), &tx); err != nil {
			t.Fatal(err)
		}
		var got json.RawMessage
		deadline := time.Now().Add(30 * time.Second)
		for {
			a, credits = logsCall(t, url, "eth_getFilterChanges", "["+id+"]")
			if a.Error != nil {
				t.Fatalf("eth_getFilterChanges: %d %s", a.Error.Code, a.Error.Message)
			}
			if credits != "140" {
				t.Errorf("a poll: X-Credits-Used %s, want 140", credits)
			}
			if string(a.Result) != "[]" {
				got = a.Result
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the new block's log never came")
			}
			time.Sleep(50 * time.Millisecond)
		}
		var changes []struct {
			TransactionHash string `json:"transactionHash"`
		}
		if err := json.Unmarshal(got, &changes); err != nil || len(changes) != 1 || changes[0].TransactionHash != tx {
			t.Fatalf("changes %s, want the one log of %s", got, tx)
		}
		// Another key's id, or none: not found, uncharged.
		a, credits = logsCall(t, url, "eth_getFilterLogs", `["0x5e1f0000000000000000000000000000"]`)
		if a.Error == nil || a.Error.Code != -32000 || a.Error.Message != "filter not found" || !uncharged(credits) {
			t.Errorf("an unknown filter: %+v, %s credits; want -32000 filter not found, 0", a.Error, credits)
		}
		if got := string(mustResult(t, url, "eth_uninstallFilter", "["+id+"]")); got != "true" {
			t.Errorf("uninstall: %s", got)
		}
		if got := string(mustResult(t, url, "eth_uninstallFilter", "["+id+"]")); got != "false" {
			t.Errorf("uninstall again: %s, want the node's false", got)
		}
	})

	t.Run("a split query pays for the chunks answered", func(t *testing.T) {
		from := head - 9999
		a, credits := logsCall(t, s.url(t, "lagging"), "eth_getLogs", fmt.Sprintf(`[{"fromBlock":%q,"toBlock":%q}]`, hex(from), hex(head)))
		if a.Error == nil || a.Error.Code != -32602 {
			t.Fatalf("answer %+v, want the lagging node's -32602", a.Error)
		}
		// The chunks (aligned on 1,000) are taken in order; the ones up to
		// the node's head were answered, the first past it was refused.
		var answered uint64
		for lo := from; lo <= head; {
			hi := min((lo/1000+1)*1000-1, head)
			if hi > lagging.head {
				break
			}
			answered += hi - lo + 1
			lo = hi + 1
		}
		want := 255 * ((answered + 999) / 1000)
		if credits != fmt.Sprint(want) {
			t.Errorf("X-Credits-Used %s, want %d (255 for each started 1,000 of the %d blocks answered), not the 2550 charged before", credits, want, answered)
		}
	})
}

// uncharged reports whether X-Credits-Used says nothing was charged: 0,
// or no header, as for any call refused before it was charged.
func uncharged(credits string) bool { return credits == "" || credits == "0" }

// logsEmitter is the address of the contract that made the logs of the
// range from..to of node.
func logsEmitter(t *testing.T, node string, from, to uint64) string {
	t.Helper()
	var logs []struct {
		Address string `json:"address"`
	}
	if err := logsRPC(node, "eth_getLogs", fmt.Sprintf(`[{"fromBlock":"0x%x","toBlock":"0x%x"}]`, from, to), &logs); err != nil || len(logs) == 0 {
		t.Fatalf("no logs in %d..%d: %v", from, to, err)
	}
	return logs[0].Address
}
