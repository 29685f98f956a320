package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/porticohq/portico/internal/loadgen"
)

// This file is the chaos setup (issue 15): three fake nodes of one chain,
// each a process of its own, Portico in front of them (max_lag 5,
// poll_interval 100ms, hedging on as by default), and clients calling
// without pause while the preferred node (the first configured) is
// killed, frozen and held back in turn, one phase each.

const chaosAdminToken = "portico-bench-admin-token"

// fakeProc is one fake node's process; it can be killed and started
// again on the same address.
type fakeProc struct {
	name, addr, fixtures string
	proc                 *process
	stopped, dead        bool
}

func (f *fakeProc) signal(s syscall.Signal) error { return f.proc.cmd.Process.Signal(s) }

func (f *fakeProc) kill() error {
	if err := f.proc.cmd.Process.Kill(); err != nil {
		return err
	}
	f.proc.cmd.Wait()
	f.dead = true
	return nil
}

func (f *fakeProc) restart(ctx context.Context) error {
	p, err := startChild(ctx, "fake-evm-node", f.addr, f.fixtures)
	if err != nil {
		return err
	}
	f.proc, f.dead = p, false
	return nil
}

func (f *fakeProc) close() {
	if f.dead {
		return
	}
	f.signal(syscall.SIGCONT) // a stopped process would not see SIGINT
	f.proc.stop()
}

// chaosPhase is one phase: a fault done to node1 under load, once calls
// go to it first, and how it is undone after the phase.
type chaosPhase struct {
	name    string
	fault   func(ctx context.Context, n *fakeProc) error
	recover func(ctx context.Context, n *fakeProc) error
}

var chaosPhases = []chaosPhase{
	{name: "all healthy"},
	{
		name:    "node1 killed (SIGKILL), started again after the phase",
		fault:   func(_ context.Context, n *fakeProc) error { return n.kill() },
		recover: func(ctx context.Context, n *fakeProc) error { return n.restart(ctx) },
	},
	{
		name:    "node1 frozen (SIGSTOP: connects, never answers), SIGCONT after",
		fault:   func(_ context.Context, n *fakeProc) error { return n.signal(syscall.SIGSTOP) },
		recover: func(_ context.Context, n *fakeProc) error { return n.signal(syscall.SIGCONT) },
	},
	{
		name:    fmt.Sprintf("node1 lagging (head held %d blocks back, max_lag 5)", fakeLag),
		fault:   func(_ context.Context, n *fakeProc) error { return n.signal(syscall.SIGUSR1) },
		recover: func(_ context.Context, n *fakeProc) error { return n.signal(syscall.SIGUSR2) },
	},
}

// chaosSetup runs the phases and prints one row per phase.
func chaosSetup(ctx context.Context, c *cli) error {
	calls, err := loadFakeCalls(c.Fixtures)
	if err != nil {
		return err
	}
	nodes := make([]*fakeProc, 3)
	var ups []string
	for i := range nodes {
		p, err := startChild(ctx, "fake-evm-node", "127.0.0.1:0", c.Fixtures)
		if err != nil {
			return err
		}
		nodes[i] = &fakeProc{name: fmt.Sprintf("node%d", i+1), addr: p.addr, fixtures: c.Fixtures, proc: p}
		defer nodes[i].close()
		ups = append(ups, fmt.Sprintf("{name: %s, url: %q}", nodes[i].name, "http://"+p.addr))
	}
	// Portico's log (a warning per failed call) goes to a file: it is
	// evidence, and too long for the terminal.
	logFile, err := os.CreateTemp("", "portico-bench-chaos-*.log")
	if err != nil {
		return err
	}
	defer logFile.Close()
	gw, err := startPorticoWith(ctx, c, porticoOptions{
		stderr: logFile,
		pprof:  c.Pprof,
		extra:  []string{fmt.Sprintf("admin: {token: %s}", chaosAdminToken)},
		networks: []string{fmt.Sprintf(`{name: evm, family: evm, chain_id: "0x1", max_lag: 5, poll_interval: 100ms, upstreams: [%s]}`,
			strings.Join(ups, ", "))},
	})
	if err != nil {
		return err
	}
	defer gw.stop()
	admin := &adminClient{url: "http://" + gw.addr + "/admin/v1/nodes"}
	body := calls.txBody()
	fmt.Printf("\nchaos: %d clients calling eth_getTransactionByHash through Portico (cache off) in front of three fake nodes; phases of %s, the fault once node1 is the first node calls go to, client timeout %s; Portico's log in %s\n\n",
		c.Concurrency, c.ChaosPhase, c.Timeout, logFile.Name())
	fmt.Println("| phase | fault at | req/s | client errors | client timeouts | p50 | p99 | max | calls to node1 / node2 / node3 after the fault | hedges | node failures | oldest heads of node2/3 | node1 first again after |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, ph := range chaosPhases {
		// Each phase starts with node1 serving as the preferred node.
		if _, err := admin.waitHealthy(ctx, 0, time.Minute); err != nil {
			return fmt.Errorf("%s: %w", ph.name, err)
		}
		before, err := admin.nodes(ctx)
		if err != nil {
			return err
		}
		var (
			res    loadgen.Result
			runErr error
			wg     sync.WaitGroup
		)
		wg.Go(func() {
			res, runErr = loadgen.Run(ctx, loadgen.Config{
				URL: gw.urls["evm"], Body: body, Concurrency: c.Concurrency, Duration: c.ChaosPhase, Timeout: c.Timeout,
				Check: func(_ int, b []byte) bool { return bytes.Contains(b, calls.txResult) },
			})
		})
		// The fault comes once the load runs and node1 is the node calls
		// go to first (not suspect after a hedge under load, not benched),
		// so that it hits calls in flight; at the latest 5 s in.
		var at time.Duration
		preferred := true
		start := time.Now()
		if ph.fault != nil {
			time.Sleep(200 * time.Millisecond)
			for {
				st, err := admin.nodes(ctx)
				if err != nil {
					return err
				}
				if n := st[0]; !n.Benched && !n.Suspect && !n.Lagging {
					before = st // count calls from the fault on
					break
				}
				if time.Since(start) > 5*time.Second {
					preferred, before = false, st
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			at = time.Since(start)
			if err := ph.fault(ctx, nodes[0]); err != nil {
				return fmt.Errorf("%s: %w", ph.name, err)
			}
		}
		// Sample the other nodes' heads while the phase runs: a node that
		// never answers must not hold up tracking the others.
		var oldest time.Duration
		for time.Since(start) < c.ChaosPhase {
			if st, err := admin.nodes(ctx); err == nil {
				for _, n := range st[1:] {
					oldest = max(oldest, n.HeadsAge)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		wg.Wait()
		if runErr != nil {
			return fmt.Errorf("%s: %w", ph.name, runErr)
		}
		after, err := admin.nodes(ctx)
		if err != nil {
			return err
		}
		var callsPer []string
		var hedges, failures uint64
		for i := range after {
			callsPer = append(callsPer, fmt.Sprint(after[i].Calls-before[i].Calls))
			hedges += after[i].Hedged - before[i].Hedged
			failures += after[i].Errors - before[i].Errors
		}
		backStr, atStr := "—", "—"
		if ph.fault != nil {
			atStr = fmt.Sprintf("%.1f s", at.Seconds())
			if !preferred {
				atStr += " (node1 was not first)"
			}
			// Undo the fault and time how long until Portico routes to
			// node1 first again.
			if err := ph.recover(ctx, nodes[0]); err != nil {
				return fmt.Errorf("%s: %w", ph.name, err)
			}
			start := time.Now()
			if _, err := admin.waitHealthy(ctx, 0, time.Minute); err != nil {
				backStr = "not within 1 min"
			} else {
				backStr = fmt.Sprintf("%.1f s", time.Since(start).Seconds())
			}
		}
		fmt.Printf("| %s | %s | %.0f | %d | %d | %s | %s | %s | %s | %d | %d | %s | %s |\n", ph.name, atStr, res.RPS, res.Errors, res.Timeouts,
			ms(res.P50), ms(res.P99), ms(res.Max), strings.Join(callsPer, " / "), hedges, failures, ms(oldest), backStr)
	}
	return nil
}

// nodeState is what the chaos setup reads of a node in portico's admin
// API (GET /admin/v1/nodes).
type nodeState struct {
	Name     string        `json:"name"`
	HeadsAge time.Duration `json:"headsAgeNs"`
	Lagging  bool          `json:"lagging"`
	Benched  bool          `json:"benched"`
	Suspect  bool          `json:"suspect"`
	Calls    uint64        `json:"calls"`
	Errors   uint64        `json:"errors"`
	Hedged   uint64        `json:"hedged"`
}

type adminClient struct{ url string }

// nodes returns the nodes of the one network.
func (a *adminClient) nodes(ctx context.Context) ([]nodeState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+chaosAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var nets []struct {
		Nodes []nodeState `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&nets); err != nil {
		return nil, fmt.Errorf("admin API: %w", err)
	}
	if len(nets) != 1 || len(nets[0].Nodes) != 3 {
		return nil, fmt.Errorf("admin API: want one network of three nodes, got %+v", nets)
	}
	return nets[0].Nodes, nil
}

// waitHealthy waits until node i is neither benched, suspect nor lagging
// and its heads are fresh, and says how long that took.
func (a *adminClient) waitHealthy(ctx context.Context, i int, within time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < within {
		st, err := a.nodes(ctx)
		if err == nil {
			n := st[i]
			if !n.Benched && !n.Suspect && !n.Lagging && n.HeadsAge >= 0 && n.HeadsAge < 500*time.Millisecond {
				return time.Since(start), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	fmt.Fprintf(os.Stderr, "portico-bench: node%d not healthy within %s\n", i+1, within)
	return 0, fmt.Errorf("node%d not healthy within %s", i+1, within)
}
