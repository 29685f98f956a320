package evmverify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/internal/evmcontracts"
)

// The checks' costs, each next to its baseline: decoding the same answer
// into Go values with encoding/json, which any handling of the answer
// pays. docs/verify.md shows the ratios.

func decodeBaseline(b *testing.B, raw []byte) {
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyHeader(b *testing.B) {
	raw, _, hash := readGolden(b, 45)
	b.Run("decode", func(b *testing.B) { decodeBaseline(b, raw) })
	b.Run("verify", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := evmverify.VerifyHeader(raw, hash); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkVerifyBlock(b *testing.B) {
	fc := loadFixture(b)
	for _, n := range goldenBlocks {
		raw, _, hash := readGolden(b, n)
		b.Run(blockName(n)+"/decode", func(b *testing.B) { decodeBaseline(b, raw) })
		b.Run(blockName(n)+"/verify", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := fc.chain.VerifyBlock(raw, hash); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyReceipts(b *testing.B) {
	fc := loadFixture(b)
	for _, n := range goldenBlocks {
		raw, receipts, hash := readGolden(b, n)
		blk, err := fc.chain.VerifyBlock(raw, hash)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(blockName(n)+"/decode", func(b *testing.B) { decodeBaseline(b, receipts) })
		b.Run(blockName(n)+"/verify", func(b *testing.B) {
			b.SetBytes(int64(len(receipts)))
			for b.Loop() {
				if _, err := fc.chain.VerifyReceipts(receipts, blk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyLogs(b *testing.B) {
	fc := loadFixture(b)
	raw, receipts, hash := readGolden(b, 5)
	blk, _ := fc.chain.VerifyBlock(raw, hash)
	rs, err := fc.chain.VerifyReceipts(receipts, blk)
	if err != nil {
		b.Fatal(err)
	}
	q, _ := evmverify.ParseFilter([]byte(`{"blockHash":"` + hash.Hex() + `"}`))
	answer, _ := json.Marshal(rs.Logs())
	by := map[common.Hash]*evmverify.Receipts{hash: rs}
	b.Run("decode", func(b *testing.B) { decodeBaseline(b, answer) })
	b.Run("verify", func(b *testing.B) {
		b.SetBytes(int64(len(answer)))
		for b.Loop() {
			if _, err := evmverify.VerifyLogs(answer, q, []*evmverify.Header{blk.Header}, by); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkVerifyProof(b *testing.B) {
	fc := loadFixture(b)
	root := fc.head().Root()
	for _, c := range proofCases(b) {
		if len(c.slots) == 0 {
			continue
		}
		raw := []byte(c.result)
		b.Run("decode", func(b *testing.B) { decodeBaseline(b, raw) })
		b.Run("verify", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := evmverify.VerifyProof(raw, root, c.address, c.slots); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLocalCall is an ERC-20 balanceOf through the reader contract
// and directly, answered by anvil (the baseline: the node's own eth_call
// over loopback HTTP), locally with the block's verified state cached
// (warm), and locally from nothing (cold: access list, proofs and code
// fetched from anvil and verified).
func BenchmarkLocalCall(b *testing.B) {
	a := startAnvil(b)
	h := a.head(b)
	call := map[string]any{"to": a.token, "data": hexutil.Bytes(evmcontracts.BalanceOfCall(a.holder))}
	raw, _ := json.Marshal(call)
	ctx := context.Background()
	b.Run("node", func(b *testing.B) {
		for b.Loop() {
			var out json.RawMessage
			if err := a.c.Call(&out, "eth_call", call, at(h.Hash())); err != nil {
				b.Fatal(err)
			}
		}
	})
	warm := evmverify.NewExecutor(a.chain, rpcSource{a.c}, evmverify.ExecutorOptions{})
	if _, err := warm.Call(ctx, h, raw); err != nil {
		b.Fatal(err)
	}
	b.Run("local-warm", func(b *testing.B) {
		for b.Loop() {
			if _, err := warm.Call(ctx, h, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("local-cold", func(b *testing.B) {
		for b.Loop() {
			ex := evmverify.NewExecutor(a.chain, rpcSource{a.c}, evmverify.ExecutorOptions{})
			if _, err := ex.Call(ctx, h, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("estimate-warm", func(b *testing.B) {
		for b.Loop() {
			if _, err := warm.EstimateGas(ctx, h, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func blockName(n int) string { return fmt.Sprintf("block%d", n) }
