package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm/evmtx"
	"github.com/porticohq/portico/internal/anvil"
)

// logsAnswer is a JSON-RPC answer as a test reads it.
type logsAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// logsCall posts one call and reads the answer and the credits it cost.
func logsCall(t *testing.T, url, method, params string) (logsAnswer, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var a logsAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("%s: %v: %s", method, err, body)
	}
	return a, resp.Header.Get("X-Credits-Used")
}

// mustResult is the result of a call that must succeed.
func mustResult(t *testing.T, url, method, params string) json.RawMessage {
	t.Helper()
	a, _ := logsCall(t, url, method, params)
	if a.Error != nil {
		t.Fatalf("%s %s: %d %s", method, params, a.Error.Code, a.Error.Message)
	}
	return a.Result
}

// logsFixture is logsChain's chain as anvil_dumpState wrote it (gzip of
// the state anvil --load-state reads):
// loading it takes seconds where mining its blocks takes minutes.
// TestLogsChainFixture (build tag portico_fixtures) writes it again.
const logsFixture = "../../internal/testdata/anvil/logs-chain.json.gz"

// logsChain starts anvil with the chain of logsFixture, or builds it when
// the fixture is not there (see buildLogsChain), and returns the node and
// its head.
func logsChain(t testing.TB) (*anvil.Node, uint64) {
	t.Helper()
	raw, err := os.ReadFile(logsFixture)
	if errors.Is(err, os.ErrNotExist) {
		return buildLogsChain(t)
	}
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	state, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, state, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node, err := anvil.Start(ctx, anvil.Options{Args: []string{"--load-state", path}})
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	var head string
	if err := logsRPC(node.URL(), "eth_blockNumber", `[]`, &head); err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseUint(strings.TrimPrefix(head, "0x"), 16, 64)
	if n < 10_200 {
		t.Fatalf("head %d after loading %s, want more than 10,200 blocks", n, logsFixture)
	}
	return node, n
}

// buildLogsChain starts anvil and builds a chain of more than 10,000 blocks
// with logs spread over it: an emitter contract called one to three times
// in a row (a log each, in blocks of their own), then 101 empty blocks
// (anvil_mine), 100 times. It returns the node and its head.
func buildLogsChain(t testing.TB) (*anvil.Node, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// Mining is what takes the time (thousands of blocks); keeping only
	// the newest states makes it faster, and logs need none.
	node, err := anvil.Start(ctx, anvil.Options{Args: []string{"--prune-history", "64"}})
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	from := crypto.PubkeyToAddress(node.DevKeys()[0].PublicKey).Hex()
	call := func(method, params string) json.RawMessage {
		resp, err := http.Post(node.URL(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a logsAnswer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.Error != nil {
			t.Fatalf("anvil %s: %v %+v", method, err, a.Error)
		}
		return a.Result
	}
	var tx string
	json.Unmarshal(call("eth_sendTransaction", fmt.Sprintf(`[{"from":%q,"data":%q,"gas":"0x30d40"}]`, from, hexutil.Encode(evmtx.EmitterInit))), &tx)
	var receipt struct {
		ContractAddress string `json:"contractAddress"`
	}
	for receipt.ContractAddress == "" {
		// anvil may answer before it has mined the transaction.
		json.Unmarshal(call("eth_getTransactionReceipt", fmt.Sprintf(`[%q]`, tx)), &receipt)
		select {
		case <-ctx.Done():
			t.Fatal("the emitter was not deployed")
		case <-time.After(10 * time.Millisecond):
		}
	}
	for i := range 100 {
		for range 1 + i%3 {
			call("eth_sendTransaction", fmt.Sprintf(`[{"from":%q,"to":%q,"gas":"0x186a0"}]`, from, receipt.ContractAddress))
		}
		call("anvil_mine", `["0x65"]`)
	}
	var head string
	json.Unmarshal(call("eth_blockNumber", `[]`), &head)
	n, _ := strconv.ParseUint(strings.TrimPrefix(head, "0x"), 16, 64)
	if n < 10_200 {
		t.Fatalf("head %d, want more than 10,200 blocks", n)
	}
	return node, n
}

// refusingNode stands in front of a node and refuses eth_getLogs over
// more than max blocks with a real node's message, counting the calls it
// passes and refuses.
type refusingNode struct {
	srv              *httptest.Server
	passed, refused  atomic.Int64
	widestPassed     atomic.Uint64
	max              uint64
	message, backend string
}

func newRefusingNode(t testing.TB, backend string, max uint64, message string) *refusingNode {
	r := &refusingNode{max: max, message: message, backend: backend}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var c struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params []struct {
				From string `json:"fromBlock"`
				To   string `json:"toBlock"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &c) == nil && c.Method == "eth_getLogs" && len(c.Params) == 1 {
			from, err1 := hexutil.DecodeUint64(c.Params[0].From)
			to, err2 := hexutil.DecodeUint64(c.Params[0].To)
			if err1 == nil && err2 == nil && r.max > 0 && to-from+1 > r.max {
				r.refused.Add(1)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":%q}}`, c.ID, r.message)
				return
			}
			if err1 == nil && err2 == nil {
				r.passed.Add(1)
				for w := r.widestPassed.Load(); to-from+1 > w && !r.widestPassed.CompareAndSwap(w, to-from+1); w = r.widestPassed.Load() {
				}
			}
		}
		resp, err := http.Post(r.backend, "application/json", strings.NewReader(string(body)))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// sameLogs fails unless two eth_getLogs results hold the same logs in
// the same order.
func sameLogs(t *testing.T, what string, got, want json.RawMessage) int {
	t.Helper()
	var g, w []map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: %d logs differ from the node's own %d", what, len(g), len(w))
	}
	return len(w)
}

// TestLogsAnvil runs eth_getLogs against a real node with more than
// 10,000 blocks of logs: a 10,000-block range, split and merged, equals
// the node's own answer and costs by its range; the logs cap refuses
// with a range that, asked next, succeeds; nodes that refuse wide ranges
// with geth's and erigon's real messages are split around.
func TestLogsAnvil(t *testing.T) {
	node, head := logsChain(t)
	geth := newRefusingNode(t, node.URL(), 2001, "exceed maximum block range 2000")
	erigon := newRefusingNode(t, node.URL(), 501, "query block range exceeds server limit, narrow your filter: 500")

	settings := func(edit func(*portico.LogSettings)) config.Logs {
		s := portico.DefaultLogSettings()
		edit(&s)
		return config.LogsOf(s)
	}
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: "test0123456789abcdef0123456789ab"}}
	cfg.Networks = []config.Network{
		{Name: "anvil", Family: "evm", Upstreams: []config.Upstream{{URL: node.URL()}}, Logs: settings(func(*portico.LogSettings) {})},
		{Name: "capped", Family: "evm", Upstreams: []config.Upstream{{URL: node.URL()}}, Logs: settings(func(s *portico.LogSettings) { s.MaxLogs = 50 })},
		{Name: "perlog", Family: "evm", Upstreams: []config.Upstream{{URL: node.URL()}}, Logs: settings(func(s *portico.LogSettings) { s.Cost, s.CostPerLog = portico.LogCostLogs, 2 })},
		{Name: "narrow", Family: "evm", Upstreams: []config.Upstream{{URL: node.URL()}}, Logs: settings(func(s *portico.LogSettings) { s.MaxBlockRange = 5000 })},
		{Name: "geth", Family: "evm", Upstreams: []config.Upstream{{URL: geth.srv.URL}}, Logs: settings(func(s *portico.LogSettings) { s.NodeRange = 5000 })},
		{Name: "erigon", Family: "evm", Upstreams: []config.Upstream{{URL: erigon.srv.URL}}, Logs: settings(func(s *portico.LogSettings) { s.NodeRange = 0 })},
	}
	s := start(t, cfg)

	const filter = `[{"fromBlock":"0x1","toBlock":"0x2710"}]` // 10,000 blocks
	want := mustResult(t, node.URL(), "eth_getLogs", filter)

	t.Run("split and merged", func(t *testing.T) {
		a, credits := logsCall(t, s.url(t, "anvil"), "eth_getLogs", filter)
		if a.Error != nil {
			t.Fatalf("%d %s", a.Error.Code, a.Error.Message)
		}
		if n := sameLogs(t, "10,000 blocks", a.Result, want); n < 150 {
			t.Fatalf("only %d logs in the range: the chain is too thin for the test", n)
		}
		// 255 credits per started 1,000 blocks.
		if credits != "2550" {
			t.Errorf("X-Credits-Used %q, want 2550", credits)
		}
		// A range that starts elsewhere, through the latest block.
		latest := fmt.Sprintf(`[{"fromBlock":"0x%x"}]`, head-4321)
		got := mustResult(t, s.url(t, "anvil"), "eth_getLogs", latest)
		sameLogs(t, "to latest", got, mustResult(t, node.URL(), "eth_getLogs", fmt.Sprintf(`[{"fromBlock":"0x%x","toBlock":"0x%x"}]`, head-4321, head)))
	})

	t.Run("cost per log", func(t *testing.T) {
		a, credits := logsCall(t, s.url(t, "perlog"), "eth_getLogs", filter)
		if a.Error != nil {
			t.Fatalf("%d %s", a.Error.Code, a.Error.Message)
		}
		n := sameLogs(t, "per log", a.Result, want)
		if want := fmt.Sprint(255 + 2*n); credits != want {
			t.Errorf("X-Credits-Used %q, want %s (255 and 2 for each of %d logs)", credits, want, n)
		}
	})

	t.Run("logs cap suggests a range that fits", func(t *testing.T) {
		a, _ := logsCall(t, s.url(t, "capped"), "eth_getLogs", filter)
		if a.Error == nil || a.Error.Code != portico.CodeLogsTooLarge {
			t.Fatalf("answer %+v, want error %d", a, portico.CodeLogsTooLarge)
		}
		var data struct {
			Bound    string `json:"bound"`
			From, To string
		}
		if err := json.Unmarshal(a.Error.Data, &data); err != nil || data.Bound != portico.LogBoundLogs || data.From != "0x1" {
			t.Fatalf("data %s, want the logs bound and a range from 0x1 (%s)", a.Error.Data, a.Error.Message)
		}
		next := fmt.Sprintf(`[{"fromBlock":%q,"toBlock":%q}]`, data.From, data.To)
		got := mustResult(t, s.url(t, "capped"), "eth_getLogs", next)
		n := sameLogs(t, "the suggested range", got, mustResult(t, node.URL(), "eth_getLogs", next))
		if n > 50 || n < 45 {
			t.Errorf("the suggested range holds %d logs, want up to the cap of 50 and close to it", n)
		}
	})

	t.Run("range over the bound", func(t *testing.T) {
		a, credits := logsCall(t, s.url(t, "narrow"), "eth_getLogs", filter)
		if a.Error == nil || a.Error.Code != portico.CodeLogsTooLarge || !strings.Contains(a.Error.Message, "[0x1, 0x1388]") {
			t.Fatalf("answer %+v, want -32059 suggesting [0x1, 0x1388]", a.Error)
		}
		if !uncharged(credits) {
			t.Errorf("X-Credits-Used %q for a query refused before any node was asked, want 0 or none", credits)
		}
	})

	for _, tc := range []struct {
		name string
		node *refusingNode
	}{{"geth", geth}, {"erigon", erigon}} {
		t.Run(tc.name+" refuses wide ranges", func(t *testing.T) {
			got := mustResult(t, s.url(t, tc.name), "eth_getLogs", filter)
			sameLogs(t, tc.name, got, want)
			if tc.node.refused.Load() == 0 {
				t.Error("the node refused nothing: the test did not test the split around it")
			}
			if w := tc.node.widestPassed.Load(); w > tc.node.max {
				t.Errorf("the node answered a range of %d blocks, more than its %d", w, tc.node.max)
			}
			// Learned: the next query is sent in ranges the node takes.
			refused := tc.node.refused.Load()
			mustResult(t, s.url(t, tc.name), "eth_getLogs", `[{"fromBlock":"0x2000","toBlock":"0x2711"}]`)
			if tc.node.refused.Load() != refused {
				t.Error("the node refused again after it said what it takes")
			}
		})
	}
}

// logsRPC calls a node directly and decodes its result into v.
func logsRPC(url, method, params string, v any) error {
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var a logsAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return err
	}
	if a.Error != nil {
		return fmt.Errorf("%s: %d %s", method, a.Error.Code, a.Error.Message)
	}
	return json.Unmarshal(a.Result, v)
}
