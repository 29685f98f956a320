package network_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/network/upstream"
)

// heldNode answers every call with a block, holding the answer until the
// test lets it go when hold is set.
type heldNode struct {
	srv     *httptest.Server
	calls   atomic.Int64
	arrived chan struct{}
	release chan struct{}
	hold    atomic.Bool
}

func newHeldNode(t *testing.T) *heldNode {
	n := &heldNode{arrived: make(chan struct{}, 16), release: make(chan struct{})}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls, _, _ := jsonrpc.Decode(body)
		n.calls.Add(1)
		if n.hold.Load() {
			n.arrived <- struct{}{}
			<-n.release
		}
		w.Write(jsonrpc.AppendResult(nil, calls[0].ID, jsontext.Value(fmt.Sprintf(`{"answer":%d}`, n.calls.Load()))))
	}))
	t.Cleanup(n.srv.Close)
	return n
}

// branch makes headers from..to on a branch named b, the first linked to
// parent.
func branch(b string, parent portico.Header, from, to uint64) []portico.Header {
	var out []portico.Header
	for n := from; n <= to; n++ {
		h := portico.Header{Number: n, Hash: fmt.Sprintf("0x%s%d", b, n), Parent: parent.Hash, ParentNumber: parent.Number}
		out = append(out, h)
		parent = h
	}
	return out
}

// TestCacheReorgInFlight: an answer about an unfinal block that was on
// its way while a reorg replaced that block is not cached; the same
// answer without a reorg is. The node holds its answer until the test has
// the chain view switch branches: no sleeps, no race to win.
func TestCacheReorgInFlight(t *testing.T) {
	node := newHeldNode(t)
	// No head tracking: the test drives the chain view itself.
	pool := upstream.NewPool(upstream.PoolConfig{Network: "net", Members: []upstream.Member{{Name: "n", Node: upstream.NewHTTP(node.srv.URL, nil)}}})
	t.Cleanup(func() { pool.Close() })
	view := pool.View()
	ctx := context.Background()
	a := branch("a", portico.Header{Hash: "0xg"}, 1, 10)
	for _, h := range a {
		if _, err := view.Follow(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	cache := network.NewCache(1<<20, nil)
	t.Cleanup(cache.Close)
	n := network.New(network.Config{Name: "net", Upstream: pool, Cache: cache})
	methods, err := gateway.NewMethods(evm.Table(), gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	getBlock := methods.Lookup("eth_getBlockByNumber")
	call := func(block uint64) network.Outcome {
		raw := jsontext.Value(fmt.Sprintf(`["0x%x",false]`, block))
		p, err := getBlock.Params(raw)
		if err != nil {
			t.Fatal(err)
		}
		if p.Cache != portico.ByBlock {
			t.Fatalf("eth_getBlockByNumber about a number is %v, want ByBlock", p.Cache)
		}
		return n.Call(ctx, network.Call{Method: getBlock, Params: p}, nil)
	}

	t.Run("no reorg: cached", func(t *testing.T) {
		before := node.calls.Load()
		call(7)
		if out := call(7); out.Err != nil || out.Cache != network.CacheHit {
			t.Fatalf("second call: %+v", out)
		}
		if got := node.calls.Load() - before; got != 1 {
			t.Fatalf("the node got %d calls, want 1", got)
		}
	})

	t.Run("reorg in flight: not cached", func(t *testing.T) {
		before := node.calls.Load()
		node.hold.Store(true)
		done := make(chan network.Outcome)
		go func() { done <- call(8) }()
		<-node.arrived // the call is at the node, its block is 8 on branch a
		// A reorg from 6: blocks 7 to 10 of branch a give way to b.
		sw, err := view.Follow(ctx, branch("b", a[5], 7, 11)[4], func(_ context.Context, n uint64, hash string) (portico.Header, error) {
			for _, h := range branch("b", a[5], 7, 11) {
				if h.Hash == hash {
					return h, nil
				}
			}
			return portico.Header{}, fmt.Errorf("no block %s", hash)
		})
		if err != nil || !sw.Reorg() || sw.Ancestor.Number != 6 {
			t.Fatalf("switch %+v %v", sw, err)
		}
		node.hold.Store(false)
		close(node.release)
		if out := <-done; out.Err != nil {
			t.Fatal(out.Err)
		}
		// Asked again: the answer about a's block 8 was not kept.
		if out := call(8); out.Cache == network.CacheHit {
			t.Fatal("an answer fetched before the reorg was served from cache after it")
		}
		if got := node.calls.Load() - before; got != 2 {
			t.Fatalf("the node got %d calls, want 2", got)
		}
		// And block 7, cached before the reorg, is dropped by it.
		if out := call(7); out.Cache == network.CacheHit {
			t.Fatal("block 7 of the old branch was served from cache after the reorg")
		}
	})
}
