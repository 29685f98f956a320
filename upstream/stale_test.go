package upstream_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/porticohq/portico/upstream"
)

// closingNode is a node that closes every connection right after its
// answer, without saying so (no Connection: close), as some node software
// and load balancers do. It counts the connections it accepted and the
// calls it answered.
type closingNode struct {
	ln              net.Listener
	conns, answered atomic.Int64
}

func newClosingNode(t *testing.T) *closingNode {
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
				body := `{"jsonrpc":"2.0","id":1,"result":"0x1"}`
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				n.answered.Add(1)
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
	node := newClosingNode(t)
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
	st := pool.Nodes()[0]
	if failed.Load() != 0 || st.Errors != 0 || st.Benched {
		t.Fatalf("%d of %d calls failed (first: %v); the node has %d errors, benched %v", failed.Load(), clients*calls, first.Load(), st.Errors, st.Benched)
	}
	if got := node.answered.Load(); got != clients*calls {
		t.Fatalf("the node answered %d calls, want %d", got, clients*calls)
	}
}
