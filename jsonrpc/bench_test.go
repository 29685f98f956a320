package jsonrpc_test

import (
	"os"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// Node answers the benchmarks read: a recorded 138 KB Solana getBlock
// (25 transactions in json encoding) and a 116 KB EVM block with its 98
// transactions in full, as go-ethereum sends them.
var benchBodies = []struct{ name, path string }{
	{"solana", "../internal/testdata/fixtures/solana/solders_get_block_json_encoding.json"},
	{"evm", "testdata/evm_block_full_txs.json"},
}

// BenchmarkDecodeResponse decodes each recorded response: the fast path,
// which finds the result and validates it.
func BenchmarkDecodeResponse(b *testing.B) {
	for _, f := range benchBodies {
		b.Run(f.name, func(b *testing.B) {
			body := readBody(b, f.path)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonrpc.DecodeResponse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidate checks each recorded result with the fast path's
// validator and with jsontext (the full decoder's rules, which it must
// match), against a plain copy of the same bytes: the floor any check
// that reads every byte is measured against. fastjson with utf8.Valid,
// the fast path's check before, was measured here too until it was
// dropped; its numbers are in docs/benchmarks.md.
func BenchmarkValidate(b *testing.B) {
	checks := []struct {
		name  string
		check func(dst, src []byte) bool
	}{
		{"copy", func(dst, src []byte) bool { return copy(dst, src) == len(src) }},
		{"ours", func(_, src []byte) bool { return jsonrpc.ValidJSON(src) }},
		{"jsontext", func(_, src []byte) bool {
			return jsontext.Value(src).IsValid(jsontext.AllowDuplicateNames(true))
		}},
	}
	for _, f := range benchBodies {
		r, err := jsonrpc.DecodeResponse(readBody(b, f.path))
		if err != nil {
			b.Fatal(err)
		}
		src := []byte(r.Result)
		dst := make([]byte, len(src))
		for _, c := range checks {
			b.Run(f.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				for b.Loop() {
					if !c.check(dst, src) {
						b.Fatal("refused a valid result")
					}
				}
			})
		}
	}
}

func readBody(b *testing.B, path string) []byte {
	body, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return body
}
