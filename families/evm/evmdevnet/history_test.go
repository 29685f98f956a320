package evmdevnet_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/porticohq/portico/families/evm/evmdevnet"
)

// TestStartWithTraffic: with traffic, Start returns with a latest block
// that holds a round of traffic (the README's eth_getTransactionByBlock-
// HashAndIndex on the latest block finds a transaction at once), indexed
// and with the storage contract deployed; without traffic, Start seals
// nothing; a restart on a data directory whose head has transactions seals
// nothing more. The period is an hour, so no block comes from the timer
// during the test.
func TestStartWithTraffic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("traffic", func(t *testing.T) {
		d := start(t, evmdevnet.Config{BlockPeriod: time.Hour, Traffic: true})
		ec := dial(t, d.HTTPURL())
		head, err := ec.BlockByNumber(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if head.NumberU64() != 1 || head.Transactions().Len() < 5 {
			t.Fatalf("latest block %d holds %d transactions", head.NumberU64(), head.Transactions().Len())
		}
		first, err := ec.TransactionInBlock(ctx, head.Hash(), 0)
		if err != nil {
			t.Fatal(err)
		}
		// Looked up by hash, the transaction needs the index Start waited
		// for.
		if _, pending, err := ec.TransactionByHash(ctx, first.Hash()); err != nil || pending {
			t.Fatalf("transaction %s by hash: pending %v, %v", first.Hash(), pending, err)
		}
		v, err := ec.StorageAt(ctx, d.StorageContract(), common.Hash{}, nil)
		if err != nil || new(big.Int).SetBytes(v).Int64() != 42 {
			t.Fatalf("storage contract slot 0 = %x, %v", v, err)
		}
	})

	t.Run("no traffic", func(t *testing.T) {
		d := start(t, evmdevnet.Config{BlockPeriod: time.Hour})
		n, err := dial(t, d.HTTPURL()).BlockNumber(ctx)
		if err != nil || n != 0 {
			t.Fatalf("without traffic Start sealed up to block %d (%v)", n, err)
		}
	})

	t.Run("restart", func(t *testing.T) {
		cfg := evmdevnet.Config{BlockPeriod: time.Hour, Traffic: true, DataDir: t.TempDir()}
		d1, err := evmdevnet.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := d1.Start(ctx); err != nil {
			d1.Close()
			t.Fatal(err)
		}
		if err := d1.Close(); err != nil {
			t.Fatal(err)
		}
		d2 := start(t, cfg)
		n, err := dial(t, d2.HTTPURL()).BlockNumber(ctx)
		if err != nil || n != 1 {
			t.Fatalf("after a restart the head is block %d (%v), want the first run's block 1", n, err)
		}
	})
}
