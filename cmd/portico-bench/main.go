// Command portico-bench measures the gateway against the same upstream
// called directly, in one run: it starts an upstream (a trivial one that
// answers fixed bytes, or the embedded go-ethereum devnet), runs a portico
// binary in front of it as a separate process, and drives both with the
// same load generator, alternating rounds. It prints a Markdown table for
// docs/benchmarks.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
)

type cli struct {
	Portico     string        `help:"portico binary to run." default:"bin/portico"`
	Fixtures    string        `help:"fixtures directory (testdata/fixtures)." default:"testdata/fixtures"`
	Setup       []string      `help:"setups to run: trivial, geth (embedded in portico), geth-remote (in another process, over HTTP), metering, fixed (issue 15: a fake EVM node, pass-through, cache hit, erpc), chaos (issue 15: three fake nodes, one killed, frozen, lagging), observe (issue 16: metrics, access log and traces on vs off), subs (issue 17: WebSocket clients subscribed to new heads), guess (issue 23: wrong admin tokens from one address), allowlist (issue 33: a key with a contract-address allowlist, --baseline before and --portico after), compare (issue 34: the small call and the block, pass-through and cache hit, --baseline before and --portico after, with CPU per call), leases (issue 37: the small call through --instances instances sharing Redis and PostgreSQL: metering off, Redis call by call, --baseline, leases; Redis and PostgreSQL operations per call)." default:"trivial,geth,geth-remote"`
	Redis       string        `help:"Redis for the metering setup." default:"redis://127.0.0.1:6379/0"`
	RedisServer string        `help:"leases setup: the redis-server binary the run starts a server of its own with." default:"redis-server"`
	Postgres    string        `help:"leases setup: a PostgreSQL server the run makes (and drops) a database on." default:"postgres://postgres@127.0.0.1:5432/test?sslmode=disable"`
	Instances   int           `help:"leases setup: portico instances sharing Redis and PostgreSQL per mode." default:"3"`
	Duration    time.Duration `help:"measured time per round." default:"5s"`
	Warmup      time.Duration `help:"warm-up per round." default:"1s"`
	Concurrency int           `help:"concurrent clients." default:"16"`
	Rounds      int           `help:"rounds per target; the median is reported." default:"3"`
	Pprof       string        `help:"pass --pprof ADDR to portico, to profile it during the run (fixed: the cache-on instance gets the next port)."`
	Cache       bool          `help:"run portico with its default result cache (64 MiB) instead of off; repeated calls for immutable data are then answered from it (setups trivial, geth, geth-remote, metering; fixed runs both)."`
	Request     []string      `help:"requests the fixed setup measures: small (the transaction lookup), block (the 118 kB block)." default:"small,block"`
	Erpc        string        `help:"erpc binary (0.1.2, built outside this repository; docs/benchmarks.md): the fixed setup adds its columns."`
	Proxyd      string        `help:"proxyd binary (built outside this repository; docs/benchmarks.md): the fixed setup adds its column."`
	ChaosPhase  time.Duration `help:"length of each phase of the chaos setup." default:"10s"`
	Timeout     time.Duration `help:"client timeout per request in the chaos setup." default:"2s"`
	// The subs setup (subs.go).
	Subscribers     []int         `help:"subs setup: WebSocket clients subscribed to newHeads through Portico; one run per value." default:"10000"`
	Heads           int           `help:"subs setup: heads measured once every client has subscribed." default:"20"`
	HeadInterval    time.Duration `help:"subs setup: how often the fake node makes a new head." default:"500ms"`
	DialConcurrency int           `help:"subs setup: clients connecting and subscribing at once." default:"64"`
	Floor           bool          `help:"subs setup: after each run through Portico, the same clients subscribed to the fake node in floor mode, which writes each head to every client itself in a plain loop (floor.go): the machine's own cost, in the same run." default:"true" negatable:""`
	// The guess setup (guess.go).
	GuessBaseline string `help:"guess setup: another portico binary (built before the fix) measured the same way first."`
	// The allowlist setup (allowlist.go).
	Baseline string `help:"allowlist and compare setups: the portico binary from before the change, measured beside --portico in the same run."`

	// logs receives the log of every portico and devnet process the run
	// starts, so that their lines do not break up the table on a terminal.
	logs *os.File `kong:"-"`
}

// children are the modes in which this binary runs as a child process
// of a setup: a node or a baseline proxy in a process of its own, stopped
// by its parent's signal (so no signal handler here).
var children = map[string]func(args []string) error{
	"reverse-proxy":    func(a []string) error { return reverseProxy(a[0]) },
	"trivial-upstream": func(a []string) error { return trivialUpstream(a[0]) },
	// fake-evm-node LISTEN FIXTURES
	"fake-evm-node": func(a []string) error { return fakeEVMNode(a[0], a[1]) },
	// fake-heads-node LISTEN INTERVAL [floor]
	"fake-heads-node": func(a []string) error { return fakeHeadsNode(a[0], a[1], len(a) > 2 && a[2] == "floor") },
}

func main() {
	if len(os.Args) >= 3 {
		if child, ok := children[os.Args[1]]; ok {
			if err := child(os.Args[2:]); err != nil {
				fmt.Fprintln(os.Stderr, "portico-bench:", err)
				os.Exit(1)
			}
			return
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var c cli
	kong.Parse(&c, kong.Name("portico-bench"), kong.Description("Gateway vs direct upstream benchmark."))
	if err := run(ctx, &c); err != nil {
		fmt.Fprintln(os.Stderr, "portico-bench:", err)
		os.Exit(1)
	}
}
