package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// guessToken is the admin token of the guess setup's portico.
const guessToken = "guess-setup-admin-token-0123456789"

// guessSetup measures how fast the admin token can be guessed (issue 23):
// wrong bearer tokens sent to /admin/v1/keys for --duration, by one client
// one after another and by --concurrency clients at once, all from one
// address, each against a fresh portico; then the right token from the
// same address, and how long it was held. With --guess-baseline, another
// portico binary (one built before the fix) is measured the same way
// first.
func guessSetup(ctx context.Context, c *cli) error {
	up, err := listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(trivialTx)
	}))
	if err != nil {
		return err
	}
	defer up.Close()
	network := fmt.Sprintf("{name: evm, family: evm, upstreams: [{url: %q}]}", "http://"+up.Addr().String())
	binaries := []string{c.Portico}
	if c.GuessBaseline != "" {
		binaries = []string{c.GuessBaseline, c.Portico}
	}
	fmt.Println()
	fmt.Printf("| portico | clients from one address | wrong tokens answered in %s | the right token afterwards |\n", c.Duration)
	fmt.Println("|---|---|---|---|")
	for _, bin := range binaries {
		for _, clients := range []int{1, c.Concurrency} {
			bc := *c
			bc.Portico = bin
			p, err := startPorticoWith(ctx, &bc, porticoOptions{networks: []string{network},
				extra: []string{fmt.Sprintf("admin: {token: %s}", guessToken)}})
			if err != nil {
				return err
			}
			base := "http://" + p.addr + "/admin/v1/keys"
			answered, err := guess(ctx, base, clients, c.Duration)
			if err != nil {
				p.stop()
				return err
			}
			start := time.Now()
			code, err := adminGet(ctx, base, guessToken)
			held := time.Since(start)
			p.stop()
			if err != nil {
				return err
			}
			fmt.Printf("| %s | %d | %d | %d after %s |\n", bin, clients, answered, code, held.Round(10*time.Millisecond))
		}
	}
	return nil
}

// guess sends wrong tokens from clients goroutines until d is over and
// returns how many were answered (401) by then.
func guess(ctx context.Context, url string, clients int, d time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var answered atomic.Int64
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	for i := range clients {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				code, err := adminGet(ctx, url, fmt.Sprintf("wrong-%d-%d-%s", i, n, guessToken))
				switch {
				case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
					return
				case err != nil:
					once.Do(func() { first = err })
					return
				case code != http.StatusUnauthorized:
					once.Do(func() { first = fmt.Errorf("a wrong token got %d", code) })
					return
				}
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	return answered.Load(), first
}

// adminGet sends GET url with tok as the bearer token and returns the
// status.
func adminGet(ctx context.Context, url, tok string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
