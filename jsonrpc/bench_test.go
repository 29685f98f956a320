package jsonrpc_test

import (
	"os"
	"testing"

	"github.com/porticohq/portico/jsonrpc"
)

// BenchmarkDecodeResponse decodes a recorded 138 KB getBlock response.
func BenchmarkDecodeResponse(b *testing.B) {
	body, err := os.ReadFile("../testdata/fixtures/solana/solders_get_block_json_encoding.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonrpc.DecodeResponse(body); err != nil {
			b.Fatal(err)
		}
	}
}
