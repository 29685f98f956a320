// Package loadgen is a closed-loop HTTP load generator for JSON-RPC: a fixed
// number of workers post the same body over keep-alive connections for a
// fixed time and record every latency. It measures the gateway and, in the
// same run, the upstream it forwards to, so results are ratios on the same
// noisy machine.
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Config describes one load run.
type Config struct {
	// URL receives POSTs of Body.
	URL  string
	Body []byte
	// Concurrency is the number of workers, each with one request in flight.
	Concurrency int
	// Duration is the measured time; Warmup runs first and is not counted.
	Duration time.Duration
	Warmup   time.Duration
	// Check, when set, validates a response body; a false counts an error.
	Check func(status int, body []byte) bool
	// Timeout, when set, bounds each request: one with no full answer
	// within it counts as a timeout (not an error), and its worker sends
	// the next request.
	Timeout time.Duration
}

// Result summarises a run.
type Result struct {
	// Requests counts every request that ended within the run: answered,
	// failed or timed out.
	Requests int
	// Errors counts failed requests (refused, reset, a status other than
	// 200, a body that fails Check); Timeouts those cut off by Timeout.
	Errors   int
	Timeouts int
	Elapsed  time.Duration
	// RPS is successful requests per second.
	RPS           float64
	P50, P90, P99 time.Duration
	// Max is the slowest successful request.
	Max time.Duration
	// FirstError describes one failed request, for a report to show what
	// went wrong: the error, or the status and the start of the body.
	FirstError string
}

// String formats a result for a table row.
func (r Result) String() string {
	return fmt.Sprintf("%.0f req/s, p50 %s, p99 %s, %d errors, %d timeouts", r.RPS, r.P50, r.P99, r.Errors, r.Timeouts)
}

// Run performs a load run.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Concurrency * 2,
		MaxIdleConnsPerHost: cfg.Concurrency * 2,
		IdleConnTimeout:     time.Minute,
	}}
	defer client.CloseIdleConnections()

	if cfg.Warmup > 0 {
		wctx, cancel := context.WithTimeout(ctx, cfg.Warmup)
		run(wctx, client, cfg)
		cancel()
	}
	mctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	lats, errs, timeouts, first := run(mctx, client, cfg)
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	res := Result{Requests: len(lats) + errs + timeouts, Errors: errs, Timeouts: timeouts, Elapsed: elapsed, FirstError: first}
	if len(lats) == 0 {
		return res, fmt.Errorf("loadgen: no successful request to %s", cfg.URL)
	}
	slices.Sort(lats)
	res.RPS = float64(len(lats)) / elapsed.Seconds()
	res.P50 = lats[len(lats)*50/100]
	res.P90 = lats[len(lats)*90/100]
	res.P99 = lats[len(lats)*99/100]
	res.Max = lats[len(lats)-1]
	return res, nil
}

// run drives the workers until ctx ends and returns the latencies of the
// successful requests and the numbers of failed and timed-out ones.
func run(ctx context.Context, client *http.Client, cfg Config) ([]time.Duration, int, int, string) {
	var (
		mu             sync.Mutex
		all            []time.Duration
		errs, timeouts int
		first          string
		wg             sync.WaitGroup
	)
	for range cfg.Concurrency {
		wg.Go(func() {
			lats := make([]time.Duration, 0, 4096)
			n, nt := 0, 0
			buf := make([]byte, 0, 64<<10)
			for ctx.Err() == nil {
				t0 := time.Now()
				status, body, timedOut, err := post(ctx, client, cfg.URL, cfg.Body, buf[:0], cfg.Timeout)
				d := time.Since(t0)
				if ctx.Err() != nil {
					break // cut off by the end of the run: not a sample
				}
				if timedOut {
					nt++
					continue
				}
				if err != nil || status != http.StatusOK || (cfg.Check != nil && !cfg.Check(status, body)) {
					if n++; n == 1 {
						desc := fmt.Sprintf("HTTP %d: %.300s", status, body)
						if err != nil {
							desc = err.Error()
						}
						mu.Lock()
						if first == "" {
							first = desc
						}
						mu.Unlock()
					}
					continue
				}
				buf = body
				lats = append(lats, d)
			}
			mu.Lock()
			all = append(all, lats...)
			errs += n
			timeouts += nt
			mu.Unlock()
		})
	}
	wg.Wait()
	return all, errs, timeouts, first
}

// post sends one request. With a timeout, it reports whether the answer
// was cut off by it.
func post(ctx context.Context, client *http.Client, url string, body, buf []byte, timeout time.Duration) (status int, answer []byte, timedOut bool, err error) {
	rctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
		defer func() {
			timedOut = err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded)
		}()
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, false, err
	}
	defer resp.Body.Close()
	b := bytes.NewBuffer(buf)
	_, err = io.Copy(b, resp.Body)
	return resp.StatusCode, b.Bytes(), false, err
}
