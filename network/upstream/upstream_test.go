package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
)

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"https://mainnet.example.io/v3/0123456789abcdef": "https://mainnet.example.io/***",
		"https://user:pass@node.example:8545":            "https://***@node.example:8545",
		"wss://node.example/ws?apikey=secret":            "wss://node.example/***?***",
		"http://127.0.0.1:8545":                          "http://127.0.0.1:8545",
		"http://127.0.0.1:8545/":                         "http://127.0.0.1:8545",
		"not a url":                                      "<redacted>",
	}
	for in, want := range cases {
		if got := upstream.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// wsServer answers each request after a delay taken from its params, so
// answers come back out of order; "drop" closes the connection.
func wsServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			calls, _, _ := jsonrpc.Decode(data)
			req := calls[0]
			if req.Method == "drop" {
				c.CloseNow()
				return
			}
			go func() {
				var ms int
				fmt.Sscanf(string(req.Params), "[%d]", &ms)
				time.Sleep(time.Duration(ms) * time.Millisecond)
				if req.Method == "fail" {
					c.Write(ctx, websocket.MessageText, jsonrpc.AppendError(nil, req.ID, &jsonrpc.Error{Code: -32000, Message: "boom"}))
					return
				}
				c.Write(ctx, websocket.MessageText, jsonrpc.AppendResult(nil, req.ID, req.Params))
			}()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWebSocketNode(t *testing.T) {
	srv := wsServer(t)
	node, err := upstream.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			params := jsontext.Value(fmt.Sprintf("[%d]", (20-i)*2))
			res, err := node.Call(ctx, "echo", params, nil)
			if err != nil || string(res) != string(params) {
				t.Errorf("call %d: %s, %v", i, res, err)
			}
		})
	}
	wg.Wait()

	_, err = node.Call(ctx, "fail", jsontext.Value("[0]"), nil)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32000 || rpcErr.Message != "boom" {
		t.Fatalf("fail: %v", err)
	}

	// A broken connection fails its calls; the next call dials again.
	_, err = node.Call(ctx, "drop", nil, nil)
	if !errors.Is(err, portico.ErrUpstreamUnavailable) {
		t.Fatalf("drop: %v", err)
	}
	if res, err := node.Call(ctx, "echo", jsontext.Value("[1]"), nil); err != nil || string(res) != "[1]" {
		t.Fatalf("after redial: %s, %v", res, err)
	}
}

func TestPool(t *testing.T) {
	now := time.Unix(1000, 0)
	calls := map[string]int{}
	var mu sync.Mutex
	failing := map[string]bool{"a": true}
	mk := func(name string) upstream.Member {
		return upstream.Member{Name: name, Node: nodeFunc(func() (jsontext.Value, error) {
			mu.Lock()
			defer mu.Unlock()
			calls[name]++
			if failing[name] {
				return nil, errors.New("connection refused")
			}
			if name == "rpc" {
				return nil, &jsonrpc.Error{Code: 3, Message: "execution reverted"}
			}
			return jsontext.Value(`"` + name + `"`), nil
		})}
	}
	pool := upstream.NewPool(upstream.PoolConfig{
		Network: "n",
		Members: []upstream.Member{mk("a"), mk("b")},
		Now:     func() time.Time { return now },
	})
	call := func() string {
		res, err := pool.Call(context.Background(), "m", nil, nil)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(res)
	}
	steps := []struct {
		name    string
		advance time.Duration
		fail    map[string]bool
		want    string
		calls   map[string]int
	}{
		{"a fails, b answers", 0, map[string]bool{"a": true}, `"b"`, map[string]int{"a": 1, "b": 1}},
		{"a benched for 1s", 500 * time.Millisecond, map[string]bool{"a": true}, `"b"`, map[string]int{"a": 1, "b": 2}},
		{"a tried again after its bench", time.Second, map[string]bool{"a": true}, `"b"`, map[string]int{"a": 2, "b": 3}},
		{"second failure doubles the bench", 1500 * time.Millisecond, map[string]bool{"a": true}, `"b"`, map[string]int{"a": 2, "b": 4}},
		{"a recovers", time.Second, map[string]bool{}, `"a"`, map[string]int{"a": 3, "b": 4}},
		{"both fail", 0, map[string]bool{"a": true, "b": true}, "error: network n: upstream b: portico: upstream unavailable: connection refused", map[string]int{"a": 4, "b": 5}},
		{"all benched: still tried", 0, map[string]bool{"a": true, "b": true}, "error: network n: upstream b: portico: upstream unavailable: connection refused", map[string]int{"a": 5, "b": 6}},
	}
	for _, s := range steps {
		mu.Lock()
		now = now.Add(s.advance)
		failing = s.fail
		mu.Unlock()
		if got := call(); got != s.want {
			t.Fatalf("%s: got %s, want %s", s.name, got, s.want)
		}
		mu.Lock()
		for k, v := range s.calls {
			if calls[k] != v {
				t.Fatalf("%s: calls[%s] = %d, want %d", s.name, k, calls[k], v)
			}
		}
		mu.Unlock()
	}

	// A JSON-RPC error is an answer: no failover, no bench.
	rpcPool := upstream.NewPool(upstream.PoolConfig{Network: "n", Members: []upstream.Member{mk("rpc"), mk("b")}})
	_, err := rpcPool.Call(context.Background(), "m", nil, nil)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Message != "execution reverted" || calls["rpc"] != 1 {
		t.Fatalf("rpc error: %v, calls %v", err, calls)
	}
}

type nodeFunc func() (jsontext.Value, error)

func (f nodeFunc) Call(context.Context, string, jsontext.Value, []byte) (jsontext.Value, error) {
	return f()
}
func (f nodeFunc) Send(context.Context, string, jsontext.Value, upstream.Limits, []byte) (jsontext.Value, error) {
	return f()
}
func (f nodeFunc) Close() error { return nil }

// TestResponseID: an answer whose id is not the request's is a failure of
// the node (the next node is asked), never a result for the caller. A
// node's error about the envelope may carry a null id.
func TestResponseID(t *testing.T) {
	cases := []struct {
		name, answer string
		ok           bool
	}{
		{"same id", `{"jsonrpc":"2.0","id":1,"result":"0x1"}`, true},
		{"other id", `{"jsonrpc":"2.0","id":2,"result":"0x1"}`, false},
		{"string id", `{"jsonrpc":"2.0","id":"1","result":"0x1"}`, false},
		{"null id result", `{"jsonrpc":"2.0","id":null,"result":"0x1"}`, false},
		{"null id error", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(tc.answer)) })
			srv := httptest.NewServer(h)
			defer srv.Close()
			for name, node := range map[string]upstream.Node{"http": upstream.NewHTTP(srv.URL, nil), "in-process": upstream.NewInProcess(h, nil)} {
				_, err := node.Call(context.Background(), "eth_chainId", nil, nil)
				var rpcErr *jsonrpc.Error
				if got := err == nil || errors.As(err, &rpcErr); got != tc.ok {
					t.Errorf("%s: err = %v", name, err)
				}
				if !tc.ok && !errors.Is(err, portico.ErrUpstreamUnavailable) {
					t.Errorf("%s: %v is not a node failure", name, err)
				}
			}
		})
	}
}
