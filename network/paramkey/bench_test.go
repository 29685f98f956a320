package paramkey

import (
	"testing"

	"github.com/porticohq/portico"
)

// benchParams are params of cached calls as clients send them.
var benchParams = []struct {
	name, params string
}{
	{"getBalance", `["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df","0xa38f2a6f7d276298d8e7a9bfa28625e4dc8948021f5a7369d0a04571879e98d2"]`},
	{"getBalance checksummed, spaced", `["0x7dcd17433742f4C0cA53122Ab541D0Ba67fC27dF", "0xa38f2a6f7d276298d8e7a9bfa28625e4dc8948021f5a7369d0a04571879e98d2"]`},
	{"call, members unsorted", `[{"to":"0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2","data":"0x70a08231000000000000000000000000c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2","from":"0x0000000000000000000000000000000000000000"},"0x1234"]`},
	{"getEvents", `{"filter":{"from_block":{"block_number":8437},"to_block":{"block_number":8440},"address":"0x4718f5a0fc34cc1af16a1cdee98ffb20c31f5cd61d6ab07201858f4287c938d","keys":[["0x99cd8bde557814842a3121e8ddfd433a539b8c9f14bf31ebf108d12e6196e9"],[]],"chunk_size":10}}`},
}

// BenchmarkKey compares the key's params part with the raw params the
// cache keyed on before (copy), per kind of params: the cost a cache hit
// pays for sharing keys across spellings. docs/benchmarks.md records it.
func BenchmarkKey(b *testing.B) {
	for _, p := range benchParams {
		params := []byte(p.params)
		buf := make([]byte, 0, 512)
		b.Run(p.name+"/copy", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = append(buf[:0], params...)
			}
		})
		b.Run(p.name+"/canonical", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = Append(buf[:0], params, portico.KeyHexFold)
			}
		})
	}
}
