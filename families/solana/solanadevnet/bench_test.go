package solanadevnet

import (
	"context"
	"fmt"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
)

// bigBlock builds a devnet whose newest block holds n client transfers
// (plus the validators' votes) and returns the block's slot.
func bigBlock(b *testing.B, n int) (*Devnet, uint64) {
	b.Helper()
	d, err := New(Config{Seed: 9})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.init(context.Background()); err != nil {
		b.Fatal(err)
	}
	d.cfg.SkipRate, d.cfg.DropRate = 0, 0
	steps(d, 1)
	recent := d.led.tip().Hash
	users := d.keys.users
	for i := range n {
		from, to := users[i%len(users)], users[(i+1)%len(users)]
		ix := system.NewTransferInstruction(uint64(i+1), from.PublicKey(), to.PublicKey()).Build()
		d.mempool = append(d.mempool, mustSign([]solana.Instruction{ix}, recent, from.PublicKey(), nil, from))
	}
	steps(d, 1)
	slot := d.led.tip().Slot
	if got := len(d.led.blocks[slot].Txs); got != n+len(d.keys.validators) {
		b.Fatalf("block holds %d transactions, want %d", got, n+len(d.keys.validators))
	}
	return d, slot
}

// BenchmarkGetBlock answers getBlock (decode, render, encode) for a block
// of 1,000 transactions in each encoding, full details, rewards on.
func BenchmarkGetBlock(b *testing.B) {
	d, slot := bigBlock(b, 1000)
	for _, enc := range []string{"json", "jsonParsed", "base58", "base64"} {
		body := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[%d,{"encoding":%q,"commitment":"processed","maxSupportedTransactionVersion":0}]}`, slot, enc))
		b.Run(enc, func(b *testing.B) {
			out := d.serve(body)
			if len(out) < 100_000 {
				b.Fatalf("answer too small (%d bytes): %.200s", len(out), out)
			}
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				d.serve(body)
			}
		})
	}
}
