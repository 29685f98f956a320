package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"time"

	"github.com/porticohq/portico/internal/loadgen"
)

// This file is the fixed setup (issue 15): one fake EVM node answering
// fixed bytes, and in front of it, measured in one run with the same load,
// Portico passing calls through (cache off), Portico answering from its
// cache, and erpc and proxyd when --erpc and --proxyd name their binaries. Direct is the node itself.

// column is one way to reach the fake node.
type column struct {
	name string
	url  string
	// cache: the column is meant to answer from a cache, which is checked
	// before the run (X-Cache: HIT on a repeated call).
	cache bool
}

// fixedSetup measures the small transaction lookup and the large block
// through every column.
func fixedSetup(ctx context.Context, c *cli) error {
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
	network := func() porticoOptions {
		return porticoOptions{networks: []string{fmt.Sprintf(`{name: evm, family: evm, chain_id: "0x1", upstreams: [{name: fake, url: %q}]}`, nodeURL)}}
	}
	passOpts, hitOpts, coalOpts := network(), network(), network()
	hitOpts.cache = true
	// The pass-through column forwards every call; the coalescing column
	// lets identical calls in flight share one (all the load generator's
	// calls are identical, the best case of it).
	passOpts.noCoalesce = true
	// With --pprof ADDR, the pass-through instance serves its profile at
	// ADDR and the cache instance at the next port.
	if c.Pprof != "" {
		passOpts.pprof = c.Pprof
		host, port, err := net.SplitHostPort(c.Pprof)
		if err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		hitOpts.pprof = net.JoinHostPort(host, strconv.Itoa(n+1))
	}
	pass, err := startPorticoWith(ctx, c, passOpts)
	if err != nil {
		return err
	}
	defer pass.stop()
	hit, err := startPorticoWith(ctx, c, hitOpts)
	if err != nil {
		return err
	}
	defer hit.stop()
	coal, err := startPorticoWith(ctx, c, coalOpts)
	if err != nil {
		return err
	}
	defer coal.stop()
	cols := []column{
		{name: "direct", url: nodeURL},
		{name: "Portico pass-through (cache and coalescing off)", url: pass.urls["evm"]},
		{name: "Portico coalescing identical calls (cache off)", url: coal.urls["evm"]},
		{name: "Portico cache hit (cache on)", url: hit.urls["evm"], cache: true},
	}
	if c.Erpc != "" {
		for _, mux := range []bool{false, true} {
			e, err := startErpc(ctx, c.Erpc, nodeURL, mux)
			if err != nil {
				return err
			}
			defer e.stop()
			name := "erpc 0.1.2, multiplexing off"
			if mux {
				name = "erpc 0.1.2, defaults (multiplexing on)"
			}
			cols = append(cols, column{name: name, url: e.urls["evm"]})
		}
	}
	if c.Proxyd != "" {
		p, err := startProxyd(ctx, c.Proxyd, nodeURL)
		if err != nil {
			return err
		}
		defer p.stop()
		cols = append(cols, column{name: "proxyd", url: p.urls["evm"]})
	}
	type target struct {
		name   string
		body   []byte
		result []byte
	}
	var targets []target
	for _, r := range c.Request {
		switch r {
		case "small":
			targets = append(targets, target{"eth_getTransactionByHash (recorded legacy tx)", calls.txBody(), calls.txResult})
		case "block":
			targets = append(targets, target{fmt.Sprintf("eth_getBlockByHash, full txs (%d txs, %.1f kB)", blockTxs, float64(len(calls.block.JSON))/1000), calls.blockBody(), calls.block.JSON})
		default:
			return fmt.Errorf("unknown request %q (small, block)", r)
		}
	}
	fmt.Println()
	fmt.Println("| request | column | req/s | × direct | p50 | p99 | errors |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, t := range targets {
		// Every column must give the node's result, byte for byte, and the
		// cache columns must answer from their cache.
		for _, col := range cols {
			if err := checkColumn(ctx, col, t.body, t.result); err != nil {
				return fmt.Errorf("%s, %s: %w", t.name, col.name, err)
			}
		}
		res := make([][]loadgen.Result, len(cols))
		for range c.Rounds {
			for i, col := range cols {
				r, err := loadgen.Run(ctx, loadgen.Config{
					URL: col.url, Body: t.body, Concurrency: c.Concurrency, Duration: c.Duration, Warmup: c.Warmup,
					Check: func(_ int, b []byte) bool { return len(b) > len(t.result) && bytes.Contains(b, []byte(`"result"`)) },
				})
				if err != nil {
					return fmt.Errorf("%s, %s: %w", t.name, col.name, err)
				}
				res[i] = append(res[i], r)
			}
		}
		direct := median(res[0])
		for i, col := range cols {
			m := median(res[i])
			errs := 0
			for _, r := range res[i] {
				errs += r.Errors
				if r.FirstError != "" {
					fmt.Fprintf(os.Stderr, "portico-bench: %s, %s: %d errors, the first: %s\n", t.name, col.name, r.Errors, r.FirstError)
				}
			}
			fmt.Printf("| %s | %s | %.0f | %.2f× | %s | %s | %d |\n", t.name, col.name, m.RPS, m.RPS/direct.RPS, ms(m.P50), ms(m.P99), errs)
		}
	}
	return nil
}

// checkColumn sends body twice and checks that the answers hold result:
// byte for byte, or else as the same JSON value re-encoded, which is
// reported. For a cache column, it checks that the second answer came from
// the cache.
func checkColumn(ctx context.Context, col column, body, result []byte) error {
	for i := range 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, col.url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if !bytes.Contains(b, result) {
			var got, want struct {
				Result any `json:"result"`
			}
			if json.Unmarshal(b, &got) != nil || json.Unmarshal(append(append([]byte(`{"result":`), result...), '}'), &want) != nil ||
				!reflect.DeepEqual(got.Result, want.Result) {
				return fmt.Errorf("the answer does not hold the node's result: %.200s", b)
			}
			if i == 0 {
				fmt.Fprintf(os.Stderr, "portico-bench: %s re-encodes the node's result (the same JSON value, other bytes)\n", col.name)
			}
		}
		if i == 1 && col.cache && resp.Header.Get("X-Cache") != "HIT" {
			return fmt.Errorf("a repeated call was not answered from the cache (X-Cache: %q)", resp.Header.Get("X-Cache"))
		}
	}
	return nil
}

// waitAnswer polls url with body until it answers with a result, for a
// process that takes a while to start serving.
func waitAnswer(ctx context.Context, url string, body []byte, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(`"result"`)) {
				return nil
			}
			err = fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s gave no answer within %s: %v", url, within, last)
}
