package network

import (
	"encoding/binary"
	"testing"

	"github.com/porticohq/portico"
)

// BenchmarkCacheKey measures the cache key of a hit as built now
// (canonical params) against the key the cache built before (the raw
// params, rawKey below), in the same run: the increment a hit pays.
func BenchmarkCacheKey(b *testing.B) {
	const hash = `"0xa38f2a6f7d276298d8e7a9bfa28625e4dc8948021f5a7369d0a04571879e98d2"`
	for _, c := range []struct{ name, method, params string }{
		{"getBalance", "eth_getBalance", `["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",` + hash + `]`},
		{"getBalance checksummed, spaced", "eth_getBalance", `["0x7dcd17433742f4C0cA53122Ab541D0Ba67fC27dF", ` + hash + `]`},
		{"call", "eth_call", `[{"to":"0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2","data":"0x70a08231000000000000000000000000c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2","from":"0x0000000000000000000000000000000000000000"},` + hash + `]`},
	} {
		params := []byte(c.params)
		b.Run(c.name+"/raw", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = rawKey("eth-mainnet", c.method, params, 0)
			}
		})
		b.Run(c.name+"/canonical", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = cacheKey(portico.KeyHexFold, "eth-mainnet", c.method, params, 0)
			}
		})
	}
}

// rawKey is the cache key before params were canonical.
func rawKey(network, method string, params []byte, at uint64) string {
	b := make([]byte, 0, len(network)+len(method)+len(params)+11)
	b = append(b, network...)
	b = append(b, 0)
	b = append(b, method...)
	b = append(b, 0)
	if at != 0 {
		b = binary.BigEndian.AppendUint64(b, at)
		b = append(b, 0)
	}
	b = append(b, params...)
	return string(b)
}
