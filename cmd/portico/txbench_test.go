package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/ethclient"
)

// countingFront passes every call on to node and counts them.
type countingFront struct {
	calls atomic.Int64
	srv   *httptest.Server
}

func newCountingFront(b testing.TB, next http.Handler) *countingFront {
	f := &countingFront{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		next.ServeHTTP(w, r)
	}))
	b.Cleanup(f.srv.Close)
	return f
}

// BenchmarkTxInclusion: the time from eth_sendRawTransactionSync to its
// receipt, against anvil mining a block a second, sent to anvil alone
// and through Portico in front of three fronts of it, one of which drops
// every transaction; and the node calls Portico made per transaction
// (sends, receipts, head polling, at 1 s polls). Not in make test: run
// with -bench (docs/benchmarks.md).
func BenchmarkTxInclusion(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	node := startAnvil(b, ctx, "--block-time", "1").URL()
	pass := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		forwardTo(w, node, body)
	})
	b.Run("node", func(b *testing.B) {
		benchSync(b, ctx, node, nil)
	})
	b.Run("portico-one-of-three-dropping", func(b *testing.B) {
		drop := newTxFront(b, &txFront{node: node, drop: true})
		fronts := []*countingFront{newCountingFront(b, drop.srv.Config.Handler), newCountingFront(b, pass), newCountingFront(b, pass)}
		cfg := verifyConfigFor(map[string]string{"drop": fronts[0].srv.URL, "a": fronts[1].srv.URL, "b": fronts[2].srv.URL},
			[]string{"drop", "a", "b"}, "off")
		cfg.Networks[0].PollInterval = time.Second
		benchSync(b, ctx, start(b, cfg).url(b, "anvil"), fronts)
	})
}

// benchSync sends b.N transfers with eth_sendRawTransactionSync to url,
// one after the other, and reports the node calls the fronts counted per
// transaction.
func benchSync(b *testing.B, ctx context.Context, url string, fronts []*countingFront) {
	client, err := ethclient.DialContext(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	txs := transfers(b, ctx, client, b.N)
	var before int64
	for _, f := range fronts {
		before += f.calls.Load()
	}
	// [signedTransaction] alone: anvil refuses a second param (it reads
	// [raw, timeout] as the bytes), even null as ethclient sends it; its
	// default wait and Portico's (20 s) are far above a block.
	raw := make([]hexutil.Bytes, len(txs))
	for i, tx := range txs {
		raw[i], _ = tx.MarshalBinary()
	}
	b.ResetTimer()
	for _, r := range raw {
		var receipt json.RawMessage
		if err := client.Client().CallContext(ctx, &receipt, "eth_sendRawTransactionSync", r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if fronts != nil {
		var after int64
		for _, f := range fronts {
			after += f.calls.Load()
		}
		b.ReportMetric(float64(after-before)/float64(b.N), "nodecalls/tx")
	}
}
