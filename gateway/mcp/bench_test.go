package mcp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGetBalance compares a get_balance tool call with the
// eth_getBalance it stands for over JSON-RPC, on one gateway in front of
// the embedded EVM devnet, metered, in one run. Each reports the
// process's CPU time per call (user + system, cpu-µs/call): client and
// server both, since both run here. mcp-post and jsonrpc send their
// bodies with the same plain HTTP client, so their difference is the
// server's; mcp-sdk is the Go SDK's client end to end.
func BenchmarkGetBalance(b *testing.B) {
	e := newEnv(b, envOptions{})
	key := e.key(b, "bench", 1<<50)
	addr := e.dev.Accounts()[0].Address.Hex()
	cs, err := e.connect(b, key)
	if err != nil {
		b.Fatal(err)
	}
	// A session for the plain POSTs, opened by the SDK's client: its id
	// is what each POST carries.
	sid := cs.ID()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	post := func(b *testing.B, path, host, body string, headers map[string]string) {
		req, _ := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(out), `"result"`) || strings.Contains(string(out), `"isError":true`) {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
	rpcBody := `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["` + addr + `","latest"]}`
	toolBody := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_balance","arguments":{"network":"` + evmNet + `","address":"` + addr + `"}}}`
	mcpHeaders := map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": cs.InitializeResult().ProtocolVersion}
	for _, c := range []struct {
		name string
		call func(b *testing.B)
	}{
		{"jsonrpc", func(b *testing.B) { post(b, "/v3/"+key, evmHost, rpcBody, nil) }},
		{"mcp-post", func(b *testing.B) { post(b, "/mcp/v3/"+key, "127.0.0.1", toolBody, mcpHeaders) }},
		{"mcp-sdk", func(b *testing.B) {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_balance", Arguments: map[string]any{"network": evmNet, "address": addr}})
			if err != nil || res.IsError {
				b.Fatalf("%v %v", err, res)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.call(b) // warm: the answer is cached from here on, on both paths
			b.ReportAllocs()
			start := cpu()
			b.ResetTimer()
			for range b.N {
				c.call(b)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpu()-start).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

// cpu is the process's CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
