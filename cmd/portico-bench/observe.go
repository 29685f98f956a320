package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// observeSetup measures what observability costs: the same gateway, with
// key checks and metering on, without metrics or an access log against
// itself with them (and, in the last row, with every call traced to an
// OTLP collector), in front of the trivial upstream, in one run. Prometheus
// is stood in for by a scrape of /metrics every second.
func observeSetup(ctx context.Context, c *cli) error {
	txResp := []byte(`{"jsonrpc":"2.0","id":1,"result":{"blockHash":"0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e","blockNumber":"0x1","hash":"0x5b4bf0e1e5b3a7ad3b6ccd8a9f5d2f0b1e7c8d9a0b1c2d3e4f5a6b7c8d9e0f1a","transactionIndex":"0x0","type":"0x0"}}`)
	up, err := listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(txResp)
	}))
	if err != nil {
		return err
	}
	defer up.Close()
	// The collector takes every batch of spans and keeps nothing.
	collector, err := listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	if err != nil {
		return err
	}
	defer collector.Close()
	upURL := "http://" + up.Addr().String()
	network := fmt.Sprintf("{name: evm, family: evm, upstreams: [{url: %q}]}", upURL)
	off, err := startPorticoWith(ctx, c, porticoOptions{cache: c.Cache, pprof: c.Pprof, networks: []string{network},
		extra: []string{"metrics: {disabled: true}"}})
	if err != nil {
		return err
	}
	defer off.stop()
	logs, err := os.CreateTemp("", "portico-bench-access-*.log")
	if err != nil {
		return err
	}
	defer os.Remove(logs.Name())
	defer logs.Close()
	targets := []target{txLookup("0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e")}
	fmt.Println()
	fmt.Println("| observability (off: no metrics, log at warn) | request | off req/s | on req/s | ratio | off p50 | on p50 | added p50 | off p99 | on p99 | added p99 |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, mode := range []struct {
		name, log string
		extra     []string
	}{
		{"metrics scraped every 1 s, access log of every call (text, to a file)", "{level: info, access_sample: 1}", nil},
		{"metrics scraped every 1 s, access log of 1% of calls", "{level: info, access_sample: 0.01}", nil},
		{"metrics, access log of every call, every call traced (OTLP/HTTP to a local collector)", "{level: info, access_sample: 1}",
			[]string{fmt.Sprintf("tracing: {endpoint: %q, sample_ratio: 1}", "http://"+collector.Addr().String())}},
	} {
		on, err := startPorticoWith(ctx, c, porticoOptions{cache: c.Cache, networks: []string{network}, log: mode.log, extra: mode.extra, stderr: logs})
		if err != nil {
			return err
		}
		sctx, stop := context.WithCancel(ctx)
		go scrape(sctx, "http://"+on.addr+"/metrics", time.Second)
		err = measure(ctx, c, mode.name, off.urls["evm"], on, targets)
		stop()
		on.stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// scrape reads url every interval until ctx ends, as Prometheus would.
func scrape(ctx context.Context, url string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		resp, err := http.Get(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "scrape:", err)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Fprintln(os.Stderr, "scrape:", resp.Status)
		}
	}
}
