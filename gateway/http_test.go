package gateway_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/network/upstream"
)

func TestHTTP(t *testing.T) {
	e := newEnv(t, options{})
	big := `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":["` + strings.Repeat("x", 5000) + `"]}`
	batch6 := "[" + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"real_echo"},`, 5) + `{"jsonrpc":"2.0","id":1,"method":"real_echo"}]`
	cases := []struct {
		name      string
		key       string
		body      string
		status    int
		want      string
		forwarded bool
	}{
		{"single", testKey, `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":[1]}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":[1]}`, true},
		{"prefix alias", testKey, `{"jsonrpc":"2.0","id":7,"method":"test_echo","params":{"a":1}}`, 200,
			`{"jsonrpc":"2.0","id":7,"result":{"a":1}}`, true},
		{"string id echoed", testKey, `{"jsonrpc":"2.0","id":"a\u00e9b","method":"real_echo"}`, 200,
			`{"jsonrpc":"2.0","id":"a\u00e9b","result":null}`, true},
		{"null id echoed", testKey, `{"jsonrpc":"2.0","id":null,"method":"real_echo"}`, 200,
			`{"jsonrpc":"2.0","id":null,"result":null}`, true},
		{"number id byte for byte", testKey, `{"jsonrpc":"2.0","id":1.50e0,"method":"real_echo"}`, 200,
			`{"jsonrpc":"2.0","id":1.50e0,"result":null}`, true},
		{"validated and rewritten", testKey, `{"jsonrpc":"2.0","id":1,"method":"seed_checked","params":["ok"]}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":["ok","added"]}`, true},
		{"invalid params", testKey, `{"jsonrpc":"2.0","id":2,"method":"real_checked","params":["no"]}`, 200,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"invalid params: param 1 (word): want \"ok\"","data":{"source":"portico"}}}`, false},
		{"method not found", testKey, `{"jsonrpc":"2.0","id":3,"method":"real_nope"}`, 200,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"the method real_nope does not exist/is not available","data":{"source":"portico"}}}`, false},
		{"parse error", testKey, `{"jsonrpc":"2.0",`, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: unexpected EOF after offset 17"}}`, false},
		{"invalid request", testKey, `{"jsonrpc":"1.0","id":4,"method":"real_echo"}`, 400,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"invalid request: jsonrpc must be \"2.0\", got \"1.0\""}}`, false},
		{"empty batch", testKey, `[]`, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: empty batch"}}`, false},
		{"notification", testKey, `{"jsonrpc":"2.0","method":"real_echo"}`, 204, ``, true},
		{"batch of notifications", testKey, `[{"jsonrpc":"2.0","method":"real_echo"},{"jsonrpc":"2.0","method":"real_echo"}]`, 204, ``, true},
		{"mixed batch", testKey, `[{"jsonrpc":"2.0","id":1,"method":"real_echo","params":[1]},{"jsonrpc":"2.0","method":"real_echo"},1,{"jsonrpc":"2.0","id":"b","method":"real_checked","params":[]}]`, 200,
			`[{"jsonrpc":"2.0","id":1,"result":[1]},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: want a JSON object, got number"}},{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"invalid params: param 1 (word): want \"ok\"","data":{"source":"portico"}}}]`, true},
		{"batch too large", testKey, batch6, 413,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32043,"message":"batch too large: limit is 5 calls, got 6"}}`, false},
		{"body too large", testKey, big, 413,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32042,"message":"request body too large: limit is 4096 bytes"}}`, false},
		{"key missing", "", `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`, 401,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32040,"message":"unauthorized: API key missing: put it in the path, /v3/<API_KEY>","data":{"reason":"missing"}}}`, false},
		{"key malformed", "short", `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`, 401,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32040,"message":"unauthorized: API key malformed: want 32 to 64 characters of [0-9A-Za-z_-]","data":{"reason":"malformed"}}}`, false},
		{"key unknown", strings.Repeat("f", 32), `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`, 401,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32040,"message":"unauthorized: API key unknown or revoked","data":{"reason":"unknown"}}}`, false},
		{"key with extra segment", testKey + "/x", `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`, 401,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32040,"message":"unauthorized: API key malformed: want 32 to 64 characters of [0-9A-Za-z_-]","data":{"reason":"malformed"}}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.node.calls.Load()
			status, got := e.post(t, tc.key, tc.body)
			if status != tc.status || got != tc.want {
				t.Errorf("got %d %s\nwant %d %s", status, got, tc.status, tc.want)
			}
			if forwarded := e.node.calls.Load() > before; forwarded != tc.forwarded {
				t.Errorf("forwarded = %v, want %v", forwarded, tc.forwarded)
			}
		})
	}
}

func TestHTTPRefusals(t *testing.T) {
	e := newEnv(t, options{})
	do := func(method, contentType string) (*http.Response, string) {
		req, _ := http.NewRequest(method, e.srv.URL+"/v3/"+testKey, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"real_echo"}`))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	cases := []struct {
		name, method, ct string
		status           int
		want             string
	}{
		{"GET", http.MethodGet, "", 405, `{"jsonrpc":"2.0","id":null,"error":{"code":-32050,"message":"HTTP method must be POST"}}`},
		{"text/plain", http.MethodPost, "text/plain", 415, `{"jsonrpc":"2.0","id":null,"error":{"code":-32049,"message":"Content-Type must be application/json"}}`},
		{"no content type", http.MethodPost, "", 415, `{"jsonrpc":"2.0","id":null,"error":{"code":-32049,"message":"Content-Type must be application/json"}}`},
		{"charset allowed", http.MethodPost, "application/json; charset=utf-8", 200, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"preflight", http.MethodOptions, "", 204, ``},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(tc.method, tc.ct)
			if resp.StatusCode != tc.status || body != tc.want {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, body, tc.status, tc.want)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Error("no CORS header")
			}
		})
	}
}

func TestResultBytesUntouched(t *testing.T) {
	e := newEnv(t, options{})
	const odd = `{ "b" : [1 ,2.500, "\u0041"] ,"a":null }`
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Write([]byte(`{"jsonrpc":"2.0","result":` + odd + `,"id":` + string(req["id"]) + `}`))
	})
	_, got := e.post(t, testKey, `{"jsonrpc":"2.0","id":9,"method":"real_echo"}`)
	if want := `{"jsonrpc":"2.0","id":9,"result":` + odd + `}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestUpstreamErrorPassesThrough(t *testing.T) {
	e := newEnv(t, options{})
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"error":{"code":-32015,"message":"Transaction version (0) is not supported","data":{"x":[1]}}}`))
	})
	status, got := e.post(t, testKey, `{"jsonrpc":"2.0","id":"q","method":"real_echo"}`)
	want := `{"jsonrpc":"2.0","id":"q","error":{"code":-32015,"message":"Transaction version (0) is not supported","data":{"x":[1]}}}`
	if status != 200 || got != want {
		t.Fatalf("got %d %s\nwant %s", status, got, want)
	}
}

func TestCache(t *testing.T) {
	e := newEnv(t, options{})
	body := `{"jsonrpc":"2.0","id":1,"method":"real_checked","params":["ok"]}`
	for i := range 3 {
		if _, got := e.post(t, testKey, body); got != `{"jsonrpc":"2.0","id":1,"result":["ok","added"]}` {
			t.Fatalf("call %d: %s", i, got)
		}
	}
	if n := e.node.calls.Load(); n != 1 {
		t.Fatalf("upstream called %d times, want 1", n)
	}
	if got := e.node.lastBody(); got != `{"jsonrpc":"2.0","id":1,"method":"real_checked","params":["ok","added"]}` {
		t.Fatalf("upstream got %s", got)
	}
}

func TestUpstreamFailures(t *testing.T) {
	dead := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/key-in-path"
	}
	t.Run("dead upstream", func(t *testing.T) {
		e := newEnv(t, options{members: func(*node) []upstream.Member {
			return []upstream.Member{{Name: "dead", Node: upstream.NewHTTP(dead(), nil)}}
		}})
		status, got := e.post(t, testKey, `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`)
		if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32045,"message":"upstream unavailable for network testnet"}}`; status != 502 || got != want {
			t.Fatalf("got %d %s", status, got)
		}
	})
	t.Run("slow upstream times out", func(t *testing.T) {
		e := newEnv(t, options{pool: upstream.PoolConfig{Timeout: 300 * time.Millisecond, AttemptTimeout: 200 * time.Millisecond}})
		release := make(chan struct{})
		defer close(release)
		e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) { <-release })
		status, got := e.post(t, testKey, `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`)
		if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32046,"message":"upstream timed out for network testnet"}}`; status != 504 || got != want {
			t.Fatalf("got %d %s", status, got)
		}
	})
	t.Run("failover to the next node", func(t *testing.T) {
		e := newEnv(t, options{members: func(n *node) []upstream.Member {
			return []upstream.Member{
				{Name: "dead", Node: upstream.NewHTTP(dead(), nil)},
				{Name: "live", Node: upstream.NewHTTP(n.srv.URL, nil)},
			}
		}})
		for range 3 {
			if status, got := e.post(t, testKey, `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":[2]}`); status != 200 || got != `{"jsonrpc":"2.0","id":1,"result":[2]}` {
				t.Fatalf("got %d %s", status, got)
			}
		}
	})
	t.Run("5xx fails over", func(t *testing.T) {
		bad := newNode(t)
		bad.setReply(func(w http.ResponseWriter, _ map[string]jsontext.Value) { w.WriteHeader(503) })
		e := newEnv(t, options{members: func(n *node) []upstream.Member {
			return []upstream.Member{
				{Name: "bad", Node: upstream.NewHTTP(bad.srv.URL, nil)},
				{Name: "good", Node: upstream.NewHTTP(n.srv.URL, nil)},
			}
		}})
		if status, got := e.post(t, testKey, `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`); status != 200 || got != `{"jsonrpc":"2.0","id":1,"result":null}` {
			t.Fatalf("got %d %s", status, got)
		}
	})
	t.Run("no upstream", func(t *testing.T) {
		e := newEnv(t, options{members: func(*node) []upstream.Member { return nil }})
		status, got := e.post(t, testKey, `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`)
		if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32045,"message":"no upstream configured for network testnet"}}`; status != 502 || got != want {
			t.Fatalf("got %d %s", status, got)
		}
	})
}

func TestSharedListenerRoutesByHost(t *testing.T) {
	e := newEnv(t, options{})
	shared := startServer(t, e.gw, e.gw.Handler())
	defer shared.close()
	cases := []struct {
		host   string
		status int
		want   string
	}{
		{"testnet.localhost", 200, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"TESTNET.localhost.:8700", 200, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"other.localhost", 404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32048,"message":"unknown network host \"other.localhost\""}}`},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, shared.URL+"/v3/"+testKey, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"real_echo"}`))
			req.Host = tc.host
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(b) != tc.want {
				t.Fatalf("got %d %s", resp.StatusCode, b)
			}
		})
	}
}

// TestMalformedHTTP sends what net/http clients never send: headers over
// the limit and bytes that are not HTTP. Both get a JSON-RPC error from
// docs/errors.md, and the key in the request line reaches no log.
func TestMalformedHTTP(t *testing.T) {
	e := newEnv(t, options{})
	cases := []struct {
		name, request, status, want string
	}{
		{"headers too large", "POST /v3/" + testKey + " HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 20<<10) + "\r\n\r\n",
			"HTTP/1.1 431", `{"jsonrpc":"2.0","id":null,"error":{"code":-32053,"message":"request headers too large: limit is 16384 bytes"}}`},
		{"not HTTP", "POST /v3/" + testKey + " HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
			"HTTP/1.1 400", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: malformed HTTP request"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			go c.Write([]byte(tc.request))
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, _ := io.ReadAll(c)
			if !strings.HasPrefix(string(got), tc.status) || !strings.HasSuffix(string(got), tc.want) {
				t.Fatalf("got %q", got)
			}
		})
	}
}
