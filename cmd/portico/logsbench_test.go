//go:build portico_bench

package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
)

// TestLogsBenchmark measures eth_getLogs over 10,000 blocks through
// portico with 3 nodes: split into chunks of 1,000 blocks (4 at the nodes
// at once) versus sent whole to a node that takes it, each asked once on
// a network of its own (so that no chunk comes from the cache). The nodes
// are three anvils with one chain (logsFixture). It is built only with
// the tag portico_bench; docs/benchmarks.md has its numbers.
func TestLogsBenchmark(t *testing.T) {
	var urls []string
	for range 3 {
		n, _ := logsChain(t)
		urls = append(urls, n.URL())
	}
	var counters []*refusingNode
	var ups []config.Upstream
	for i, u := range urls {
		c := newRefusingNode(t, u, 0, "")
		counters = append(counters, c)
		ups = append(ups, config.Upstream{Name: fmt.Sprintf("node%d", i), URL: c.srv.URL})
	}
	split := portico.DefaultLogSettings()
	whole := split
	whole.NodeRange = 0
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: "test0123456789abcdef0123456789ab"}}
	cfg.Networks = []config.Network{
		{Name: "split", Family: "evm", Upstreams: ups, Logs: config.LogsOf(split)},
		{Name: "whole", Family: "evm", Upstreams: ups, Logs: config.LogsOf(whole)},
	}
	s := start(t, cfg)
	const filter = `[{"fromBlock":"0x1","toBlock":"0x2710"}]`
	want := mustResult(t, urls[0], "eth_getLogs", filter)
	calls := func() (n int64) {
		for _, c := range counters {
			n += c.passed.Load()
		}
		return n
	}
	type run struct {
		took  time.Duration
		calls int64
	}
	measure := func(network string) run {
		// The network's heads are known before the clock starts.
		mustResult(t, s.url(t, network), "eth_blockNumber", `[]`)
		before := calls()
		start := time.Now()
		got := mustResult(t, s.url(t, network), "eth_getLogs", filter)
		r := run{took: time.Since(start), calls: calls() - before}
		t.Logf("%s: %d logs", network, sameLogs(t, network, got, want))
		return r
	}
	w := measure("whole")
	sp := measure("split")
	t.Logf("| sent whole | %s | %d |", w.took.Round(time.Millisecond), w.calls)
	t.Logf("| split (1,000 blocks, 4 at once) | %s | %d |", sp.took.Round(time.Millisecond), sp.calls)
	t.Logf("split/whole time ratio: %.2f", float64(sp.took)/float64(w.took))
}
