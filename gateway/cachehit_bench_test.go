package gateway_test

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/gateway"
)

// BenchmarkCacheHit is one cached EVM call answered from the cache, the
// request handed to the network's handler in memory (no socket, so that
// what the cache key adds is not lost in loopback noise). The calls are
// about a block named by hash (cached for good): a lower-case address, a
// checksummed one with a space after the comma, and an eth_call whose
// members come unsorted.
func BenchmarkCacheHit(b *testing.B) {
	t := &testing.T{}
	node := newChainNode(t, evmNode)
	e := newCacheEnv(t, evm.Table(), node)
	e.await(t, func(h portico.Heads) bool { return h.Latest > 0 })
	handler := e.gw.NetworkHandler("net")
	const hash = `"0xa38f2a6f7d276298d8e7a9bfa28625e4dc8948021f5a7369d0a04571879e98d2"`
	for _, c := range []struct{ name, method, params string }{
		{"getBalance", "eth_getBalance", `["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",` + hash + `]`},
		{"getBalance checksummed, spaced", "eth_getBalance", `["0x7dcd17433742f4C0cA53122Ab541D0Ba67fC27dF", ` + hash + `]`},
		{"call", "eth_call", `[{"to":"0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2","data":"0x70a08231000000000000000000000000c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2","from":"0x0000000000000000000000000000000000000000"},` + hash + `]`},
	} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + c.method + `","params":` + c.params + `}`)
		var req fasthttp.Request
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURI("/v3/" + testKey)
		req.Header.SetContentType("application/json")
		req.SetBody(body)
		var ctx fasthttp.RequestCtx
		serve := func() string {
			ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
			handler(&ctx)
			return string(ctx.Response.Header.Peek(gateway.HeaderCache))
		}
		serve()
		if state := serve(); state != "HIT" {
			b.Fatalf("%s: X-Cache %q: %s", c.name, state, ctx.Response.Body())
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}
