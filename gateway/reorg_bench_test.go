package gateway_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

// BenchmarkReorgFanOut measures how long a reorg takes to reach every
// client: 1,000 clients subscribed to newHeads through the gateway, the
// node switches its newest 3 blocks to another branch and sends its new
// head; the time runs from that send to the last client's first block of
// the new branch (ms-to-last-client). Run it with
//
//	go test ./gateway -run '^$' -bench ReorgFanOut -benchtime 5x
func BenchmarkReorgFanOut(b *testing.B) {
	clients := benchClients()
	chain := newFakeChain(b, time.Hour, 0) // the benchmark makes the blocks
	node := newFakeWSNode(b, chain)
	_, url := subsEnv(b, nil, node)
	conns := make(chan struct {
		i   int
		got chan string
	}, clients)
	var setup sync.WaitGroup
	sems := make(chan struct{}, 64)
	gots := make([]chan string, clients)
	for i := range clients {
		gots[i] = make(chan string, 64)
		sems <- struct{}{}
		setup.Go(func() {
			defer func() { <-sems }()
			c := subscribeHeads(b, url)
			go func() {
				for {
					_, msg, err := c.Read(context.Background())
					if err != nil {
						return
					}
					var n struct {
						Params struct {
							Result struct {
								Hash string `json:"hash"`
							} `json:"result"`
						} `json:"params"`
					}
					if json.Unmarshal(msg, &n, json.RejectUnknownMembers(false)) == nil {
						gots[i] <- n.Params.Result.Hash
					}
				}
			}()
		})
	}
	setup.Wait()
	close(conns)
	// waitAll waits until every client got hash.
	waitAll := func(hash string) time.Time {
		var last time.Time
		for _, g := range gots {
			for h := range g {
				if h == hash {
					break
				}
			}
			last = time.Now()
		}
		return last
	}
	grow := func() string {
		chain.mu.Lock()
		chain.head++
		h, ws := chain.head, chain.waiters
		chain.waiters = nil
		chain.mu.Unlock()
		for _, w := range ws {
			w <- h
		}
		return chain.hash(h)
	}
	for range 5 {
		waitAll(grow())
	}
	b.ResetTimer()
	var total time.Duration
	for range b.N {
		waitAll(grow())
		chain.mu.Lock()
		head := chain.head
		chain.mu.Unlock()
		start := time.Now()
		chain.reorg(3)
		// The first block of the new branch is head-2: every client gets it
		// before the new head.
		first := chain.hash(head - 2)
		for i, g := range gots {
		wait:
			for {
				select {
				case h := <-g:
					if h == first {
						break wait
					}
				case <-time.After(10 * time.Second):
					b.Fatalf("client %d never got %s (head %d, new branch from %d)", i, first, head, head-2)
				}
			}
		}
		total += time.Since(start)
		waitAll(chain.hash(head))
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-last-client")
}

// benchClients is the number of clients of BenchmarkReorgFanOut:
// PORTICO_BENCH_CLIENTS, or 1,000.
func benchClients() int {
	if n, err := strconv.Atoi(os.Getenv("PORTICO_BENCH_CLIENTS")); err == nil && n > 0 {
		return n
	}
	return 1000
}
