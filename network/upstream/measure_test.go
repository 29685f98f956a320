package upstream_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/network/upstream"
)

// The benchmarks of issue 23 (docs/benchmarks.md). They use only what
// main had too (NewHTTP, NewPool, Call), so that the same file measures
// before and after.

// BenchmarkClosingNode: clients calling through a pool whose node closes
// every connection after its answer, without saying so. failed/op is the
// share of calls that failed.
func BenchmarkClosingNode(b *testing.B) {
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			node := newClosingNode(&testing.T{}, false)
			pool := upstream.NewPool(upstream.PoolConfig{Network: "evm", Members: []upstream.Member{{Name: "a", Node: upstream.NewHTTP(node.url(), nil)}}})
			defer pool.Close()
			var failed, calls atomic.Int64
			b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					calls.Add(1)
					if _, err := pool.Call(context.Background(), "eth_chainId", nil, nil); err != nil {
						failed.Add(1)
					}
				}
			})
			b.ReportMetric(float64(failed.Load())/float64(calls.Load()), "failed/op")
			b.ReportMetric(float64(pool.Nodes()[0].Errors), "node-errors")
		})
	}
}

// heapPeak samples the heap's objects (live and not yet swept) while f
// runs and returns the most it saw above where it started.
func heapPeak(f func()) (peak uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	metrics.Read(s)
	base := s[0].Value.Uint64()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > base {
				peak = max(peak, v-base)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return peak
}

// BenchmarkLargeAnswer: a node answers 200 MB (with a Content-Length or
// chunked), once or to three calls at once, with the node's default
// bound. peak-MiB is the most the heap grew while the calls ran, sampled
// every 200 µs; alloc-MiB all that was allocated; refused the calls that
// got an error.
func BenchmarkLargeAnswer(b *testing.B) {
	for _, c := range []struct {
		name    string
		chunked bool
		calls   int
	}{{"content-length", false, 1}, {"chunked", true, 1}, {"chunked-x3", true, 3}} {
		b.Run(c.name, func(b *testing.B) {
			n := newBigHTTPNode(&testing.T{}, c.chunked, nil)
			defer n.srv.Close()
			node := upstream.NewHTTP(n.srv.URL, nil)
			defer node.Close()
			var peak, alloc uint64
			var refused atomic.Int64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				peak = max(peak, heapPeak(func() {
					var wg sync.WaitGroup
					for range c.calls {
						wg.Go(func() {
							res, err := node.Call(context.Background(), "big", jsontext.Value(fmt.Sprintf("[%d]", 200*mib)), nil)
							if err != nil {
								refused.Add(1)
							}
							runtime.KeepAlive(res)
						})
					}
					wg.Wait()
				}))
				for range c.calls {
					<-n.written
				}
				runtime.ReadMemStats(&after)
				alloc = max(alloc, after.TotalAlloc-before.TotalAlloc)
			}
			b.ReportMetric(float64(peak)/mib, "peak-MiB")
			b.ReportMetric(float64(alloc)/mib, "alloc-MiB")
			b.ReportMetric(float64(refused.Load())/float64(b.N*c.calls), "refused/op")
		})
	}
}
