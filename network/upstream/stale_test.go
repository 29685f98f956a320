package upstream_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
)

// closingNode is a node that closes every connection right after its
// answer, without saying so (no Connection: close), as some node software
// and load balancers do. It counts the connections it accepted and the
// requests it served.
type closingNode struct {
	ln            net.Listener
	conns, served atomic.Int64
}

// newClosingNode starts a closing node; mute, it closes every connection
// on the request, without answering.
func newClosingNode(t *testing.T, mute bool) *closingNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &closingNode{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.conns.Add(1)
			wg.Go(func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				if mute {
					return
				}
				n.served.Add(1)
				body := `{"jsonrpc":"2.0","id":1,"result":"0x1"}`
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			})
		}
	})
	return n
}

func (n *closingNode) url() string { return "http://" + n.ln.Addr().String() }

// TestStaleKeepAliveConcurrent: 32 clients call through a pool whose one
// node closes every connection after answering. A request that meets a
// connection the node closed is sent again on a fresh one, as often as it
// takes, so no client sees an error and the node is never benched.
func TestStaleKeepAliveConcurrent(t *testing.T) {
	node := newClosingNode(t, false)
	pool := upstream.NewPool(upstream.PoolConfig{Network: "evm", Members: []upstream.Member{{Name: "a", Node: upstream.NewHTTP(node.url(), nil)}}})
	defer pool.Close()
	const clients, calls = 32, 60
	var failed atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range calls {
				res, err := pool.Call(context.Background(), "eth_chainId", nil, nil)
				if err != nil || string(res) != `"0x1"` {
					failed.Add(1)
					first.CompareAndSwap(nil, fmt.Sprintf("%s, %v", res, err))
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d calls over %d connections", clients*calls, node.conns.Load())
	st := pool.Nodes()[0]
	if failed.Load() != 0 || st.Errors != 0 || st.Benched {
		t.Fatalf("%d of %d calls failed (first: %v); the node has %d errors, benched %v", failed.Load(), clients*calls, first.Load(), st.Errors, st.Benched)
	}
	// Each call reached the node once: a retry never sends again what
	// the node had received.
	if got := node.served.Load(); got != clients*calls {
		t.Fatalf("the node served %d requests for %d calls", got, clients*calls)
	}
}

// TestFreshConnectionFailure: a node that closes fresh connections too is
// failing: the call that met it is tried on a fresh connection once, then
// fails, and the node is benched.
func TestFreshConnectionFailure(t *testing.T) {
	node := newClosingNode(t, true)
	pool := upstream.NewPool(upstream.PoolConfig{Network: "evm", Members: []upstream.Member{{Name: "a", Node: upstream.NewHTTP(node.url(), nil)}}})
	defer pool.Close()
	if _, err := pool.Call(context.Background(), "eth_chainId", nil, nil); !errors.Is(err, portico.ErrUpstreamUnavailable) {
		t.Fatalf("got %v, want the node unavailable", err)
	}
	if st := pool.Nodes()[0]; st.Errors != 1 || !st.Benched {
		t.Fatalf("the node has %d errors, benched %v: want 1 and benched", st.Errors, st.Benched)
	}
	if got := node.conns.Load(); got != 2 {
		t.Fatalf("the call took %d connections, want 2 (its first and a fresh one)", got)
	}
}

// TestKeepsConnections: an answer read to its end leaves its connection
// for the next call, with a Content-Length, chunked, or a short 429 or
// 503; an answer refused for its size does not.
func TestKeepsConnections(t *testing.T) {
	a := newAnswerWriter()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls, _, _ := jsonrpc.Decode(body)
		switch calls[0].Method {
		case "busy":
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte("slow down"))
		case "down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "chunked":
			a.write(w, "1", sizeParam(calls[0].Params), false, w.(http.Flusher).Flush, nil)
		default:
			size := sizeParam(calls[0].Params)
			w.Header().Set("Content-Length", strconv.Itoa(a.length("1", size, false)))
			a.write(w, "1", size, false, nil, nil)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	node := upstream.NewHTTP(srv.URL, nil)
	defer node.Close()
	ctx := context.Background()
	for range 5 {
		for _, m := range []string{"length", "chunked", "busy", "down"} {
			_, err := node.Call(ctx, m, jsontext.Value("[100000]"), nil)
			if (err != nil) != (m == "busy" || m == "down") {
				t.Fatalf("%s: %v", m, err)
			}
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("20 calls in a row took %d connections, want 1", n)
	}
	if _, err := node.Send(ctx, "chunked", jsontext.Value("[100000]"), upstream.Limits{MaxResult: 1000}, nil); err == nil {
		t.Fatal("a refused answer passed")
	}
	if _, err := node.Call(ctx, "length", jsontext.Value("[10]"), nil); err != nil || conns.Load() != 2 {
		t.Fatalf("after a refused answer: %v, %d connections, want 2", err, conns.Load())
	}
}
