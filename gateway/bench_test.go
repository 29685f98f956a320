package gateway_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/metrics"
)

// BenchmarkHTTPPassThrough measures one call through the gateway to a
// trivial upstream, over real loopback HTTP on both sides.
func BenchmarkHTTPPassThrough(b *testing.B) {
	t := &testing.T{}
	e := newEnv(t, options{})
	const result = `{"blockHash":"0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e","blockNumber":"0x1","from":"0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f","gas":"0x5208","hash":"0x5b4bf0e1e5b3a7ad3b6ccd8a9f5d2f0b1e7c8d9a0b1c2d3e4f5a6b7c8d9e0f1a","input":"0x","nonce":"0x0","value":"0x1"}`
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + result + `}`))
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":["0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e","0x0"]}`
	url := e.srv.URL + "/v3/" + testKey
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := http.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// BenchmarkObserve is the pass-through call without observers, with
// metrics, and with metrics and an access-log line per call (to a
// discarding handler at info): the allocations and CPU each adds.
func BenchmarkObserve(b *testing.B) {
	for _, c := range []struct {
		name string
		o    func() options
	}{
		{"off", func() options { return options{} }},
		{"metrics", func() options { return options{metrics: metrics.New()} }},
		{"metrics+log", func() options {
			return options{metrics: metrics.New(), access: &gateway.AccessLog{Sample: 1}, logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			t := &testing.T{}
			e := newEnv(t, c.o())
			e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
				w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`))
			})
			body := `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":["0x0"]}`
			url := e.srv.URL + "/v3/" + testKey
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := http.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
