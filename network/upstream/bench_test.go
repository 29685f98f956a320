package upstream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/network/upstream"
)

// BenchmarkHTTPNode is one call to a node over loopback HTTP as the
// gateway makes it: kept-alive connections, the result appended to a
// buffer that is reused. "tx" is a recorded transaction (a Content-Length
// answer of 400 bytes), "block" the recorded 138 KB getBlock (chunked, as
// net/http servers such as geth send large answers).
func BenchmarkHTTPNode(b *testing.B) {
	block, err := os.ReadFile("../../internal/testdata/fixtures/solana/solders_get_block_json_encoding.json")
	if err != nil {
		b.Fatal(err)
	}
	tx := []byte(`{"jsonrpc":"2.0","id":1,"result":{"blockHash":"0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e","blockNumber":"0x1","from":"0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f","gas":"0x5208","hash":"0x5b4bf0e1e5b3a7ad3b6ccd8a9f5d2f0b1e7c8d9a0b1c2d3e4f5a6b7c8d9e0f1a","input":"0x","nonce":"0x0","value":"0x1"}}`)
	for _, c := range []struct {
		name   string
		answer []byte
	}{{"tx", tx}, {"block", block}} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(c.answer)
			}))
			defer srv.Close()
			node := upstream.NewHTTP(srv.URL, nil)
			defer node.Close()
			params := jsontext.Value(`["0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e","0x0"]`)
			b.SetBytes(int64(len(c.answer)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var dst []byte
				for pb.Next() {
					res, err := node.Call(context.Background(), "eth_getTransactionByBlockHashAndIndex", params, dst[:0])
					if err != nil {
						b.Fatal(err)
					}
					dst = res
				}
			})
		})
	}
}
