package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/porticohq/portico/internal/loadgen"
)

// This file is the allowlist setup (issue 33): the small call and the
// 118 kB block through a key with a contract-address allowlist, on the
// portico binary before a change (--baseline) and after it (--portico),
// in one run: the fake EVM node of the fixed setup, both binaries in front
// of it with the same config, and the load generator taking turns between
// them round by round, so that the machine's load falls on both alike.

// allowlistTarget is the contract the key may call, and the small call's
// target.
const allowlistTarget = "0x1111111111111111111111111111111111111111"

// allowlistSetup measures both requests direct, before and after.
func allowlistSetup(ctx context.Context, c *cli) error {
	if c.Baseline == "" {
		return errors.New("the allowlist setup needs --baseline, the portico binary from before the change")
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
	// Pass-through (cache and coalescing off), so that every call takes
	// the whole path, the key's check included.
	opts := porticoOptions{noCoalesce: true,
		keyRules: fmt.Sprintf("allow_addresses: [%q, %q]", allowlistTarget, "0x2222222222222222222222222222222222222222"),
		networks: []string{fmt.Sprintf(`{name: evm, family: evm, chain_id: "0x1", upstreams: [{name: fake, url: %q}]}`, nodeURL)}}
	after, err := startPorticoWith(ctx, c, opts)
	if err != nil {
		return err
	}
	defer after.stop()
	bc := *c
	bc.Portico = c.Baseline
	before, err := startPorticoWith(ctx, &bc, opts)
	if err != nil {
		return err
	}
	defer before.stop()
	cols := []column{
		{name: "direct", url: nodeURL},
		{name: "before (" + c.Baseline + ")", url: before.urls["evm"]},
		{name: "after (" + c.Portico + ")", url: after.urls["evm"]},
	}
	type target struct {
		name   string
		body   []byte
		result []byte
	}
	targets := []target{
		{"eth_call to a listed contract (small)", []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + allowlistTarget + `","data":"0x70a08231000000000000000000000000000000000000000000000000000000000000abcd"},"latest"]}`), []byte(fakeCallResult)},
		{fmt.Sprintf("eth_getBlockByHash, full txs (%d txs, %.1f kB)", blockTxs, float64(len(calls.block.JSON))/1000), calls.blockBody(), calls.block.JSON},
	}
	fmt.Println()
	fmt.Println("| request | column | req/s | × direct | after / before | p50 | p99 | errors |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, t := range targets {
		for _, col := range cols {
			if err := checkColumn(ctx, col, t.body, t.result); err != nil {
				return fmt.Errorf("%s, %s: %w", t.name, col.name, err)
			}
		}
		res := make([][]loadgen.Result, len(cols))
		for round := range c.Rounds {
			// Each round starts with another column, so that none is
			// always the one measured first.
			for k := range cols {
				i := (k + round) % len(cols)
				r, err := loadgen.Run(ctx, loadgen.Config{
					URL: cols[i].url, Body: t.body, Concurrency: c.Concurrency, Duration: c.Duration, Warmup: c.Warmup,
					Check: func(_ int, b []byte) bool { return len(b) > len(t.result) && bytes.Contains(b, []byte(`"result"`)) },
				})
				if err != nil {
					return fmt.Errorf("%s, %s: %w", t.name, cols[i].name, err)
				}
				res[i] = append(res[i], r)
			}
		}
		direct, base := median(res[0]), median(res[1])
		for i, col := range cols {
			m := median(res[i])
			errs := 0
			for _, r := range res[i] {
				errs += r.Errors
				if r.FirstError != "" {
					fmt.Fprintf(os.Stderr, "portico-bench: %s, %s: %d errors, the first: %s\n", t.name, col.name, r.Errors, r.FirstError)
				}
			}
			ratio := ""
			if i == 2 {
				ratio = fmt.Sprintf("%.3f", m.RPS/base.RPS)
			}
			fmt.Printf("| %s | %s | %.0f | %.2f× | %s | %s | %s | %d |\n", t.name, col.name, m.RPS, m.RPS/direct.RPS, ratio, ms(m.P50), ms(m.P99), errs)
		}
	}
	return nil
}
