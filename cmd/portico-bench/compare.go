package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/porticohq/portico/internal/loadgen"
)

// This file is the compare setup (issue 34): the small call and the 118 kB
// block of the fixed setup, pass-through and cache hit, on the portico
// binary before a change (--baseline) and after it (--portico), in one
// run, with the CPU each process spends per call: the fake EVM node of the
// fixed setup, both binaries in front of it twice (cache and coalescing
// off; cache on), and the load generator taking turns between the columns
// round by round, so that the machine's load falls on all alike.

// compareColumn is one way to reach the node, and the processes whose CPU
// it costs.
type compareColumn struct {
	column
	gateway *process // nil for direct
}

// compareRound is one round of one column: the load generator's result
// and the CPU the gateway and the node spent over it.
type compareRound struct {
	res              loadgen.Result
	gatewayCPU, node time.Duration
}

// compareSetup measures both requests direct, and pass-through and cache
// hit before and after.
func compareSetup(ctx context.Context, c *cli) error {
	if c.Baseline == "" {
		return errors.New("the compare setup needs --baseline, the portico binary from before the change")
	}
	calls, err := loadFakeCalls(c.Fixtures)
	if err != nil {
		return err
	}
	node, err := startChild(ctx, "fake-evm-node", "127.0.0.1:0", c.Fixtures)
	if err != nil {
		return err
	}
	defer node.stop()
	nodeURL := "http://" + node.addr
	start := func(bin string, cache bool) (*process, error) {
		bc := *c
		bc.Portico = bin
		return startPorticoWith(ctx, &bc, porticoOptions{cache: cache, noCoalesce: true,
			networks: []string{fmt.Sprintf(`{name: evm, family: evm, chain_id: "0x1", upstreams: [{name: fake, url: %q}]}`, nodeURL)}})
	}
	cols := []compareColumn{{column: column{name: "direct", url: nodeURL}}}
	for _, v := range []struct {
		name, bin string
		cache     bool
	}{{"before, pass-through", c.Baseline, false}, {"after, pass-through", c.Portico, false},
		{"before, cache hit", c.Baseline, true}, {"after, cache hit", c.Portico, true}} {
		p, err := start(v.bin, v.cache)
		if err != nil {
			return err
		}
		defer p.stop()
		cols = append(cols, compareColumn{column: column{name: v.name, url: p.urls["evm"], cache: v.cache}, gateway: p})
	}
	targets := []struct {
		name         string
		body, result []byte
	}{
		{"eth_getTransactionByHash (small)", calls.txBody(), calls.txResult},
		{fmt.Sprintf("eth_getBlockByHash, full txs (%.1f kB)", float64(len(calls.block.JSON))/1000), calls.blockBody(), calls.block.JSON},
	}
	fmt.Println()
	fmt.Println("| request | column | req/s | × direct | after / before | Portico CPU per call | node CPU per call | Portico / node | p50 | p99 | errors |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, t := range targets {
		for _, col := range cols {
			if err := checkColumn(ctx, col.column, t.body, t.result); err != nil {
				return fmt.Errorf("%s, %s: %w", t.name, col.name, err)
			}
		}
		rounds := make([][]compareRound, len(cols))
		for round := range c.Rounds {
			for k := range cols {
				i := (k + round) % len(cols)
				r, err := compareRun(ctx, c, cols[i], node, t.body, t.result)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", t.name, cols[i].name, err)
				}
				rounds[i] = append(rounds[i], r)
			}
		}
		printCompare(t.name, cols, rounds)
	}
	return nil
}

// compareRun warms a column up, then measures one round of it with the
// CPU its gateway and the node spend over the round.
func compareRun(ctx context.Context, c *cli, col compareColumn, node *process, body, result []byte) (compareRound, error) {
	cfg := loadgen.Config{URL: col.url, Body: body, Concurrency: c.Concurrency, Duration: c.Warmup,
		Check: func(_ int, b []byte) bool { return len(b) > len(result) && bytes.Contains(b, []byte(`"result"`)) }}
	if _, err := loadgen.Run(ctx, cfg); err != nil {
		return compareRound{}, err
	}
	cpu := func(p *process) time.Duration {
		if p == nil {
			return 0
		}
		d, _ := cpuTime(p.cmd.Process.Pid)
		return d
	}
	g0, n0 := cpu(col.gateway), cpu(node)
	cfg.Duration = c.Duration
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return compareRound{}, err
	}
	return compareRound{res: res, gatewayCPU: cpu(col.gateway) - g0, node: cpu(node) - n0}, nil
}

// printCompare prints one request's rows: medians of the rounds.
func printCompare(name string, cols []compareColumn, rounds [][]compareRound) {
	perCall := func(rs []compareRound, f func(compareRound) time.Duration) time.Duration {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = float64(f(r)) / float64(max(r.res.Requests, 1))
		}
		return time.Duration(medianFloat(v))
	}
	results := func(rs []compareRound) []loadgen.Result {
		out := make([]loadgen.Result, len(rs))
		for i, r := range rs {
			out[i] = r.res
		}
		return out
	}
	direct := median(results(rounds[0]))
	var before loadgen.Result
	for i, col := range cols {
		m := median(results(rounds[i]))
		errs := 0
		for _, r := range rounds[i] {
			errs += r.res.Errors
			if r.res.FirstError != "" {
				fmt.Fprintf(os.Stderr, "portico-bench: %s, %s: %d errors, the first: %s\n", name, col.name, r.res.Errors, r.res.FirstError)
			}
		}
		ratio, gw, share := "", "", ""
		nodeCPU := perCall(rounds[i], func(r compareRound) time.Duration { return r.node })
		if col.gateway != nil {
			g := perCall(rounds[i], func(r compareRound) time.Duration { return r.gatewayCPU })
			gw = fmt.Sprintf("%.1f µs", float64(g)/1e3)
			if nodeCPU > 0 && !col.cache {
				share = fmt.Sprintf("%.2f×", float64(g)/float64(nodeCPU))
			}
			if i%2 == 1 {
				before = m
			} else {
				ratio = fmt.Sprintf("%.3f", m.RPS/before.RPS)
			}
		}
		fmt.Printf("| %s | %s | %.0f | %.2f× | %s | %s | %.1f µs | %s | %s | %s | %d |\n", name, col.name, m.RPS, m.RPS/direct.RPS, ratio, gw,
			float64(nodeCPU)/1e3, share, ms(m.P50), ms(m.P99), errs)
	}
}

// medianFloat is the median of v (the upper one of an even count).
func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}
