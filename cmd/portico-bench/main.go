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
	Setup       []string      `help:"setups to run: trivial, geth (embedded in portico), geth-remote (in another process, over HTTP), metering." default:"trivial,geth,geth-remote"`
	Redis       string        `help:"Redis for the metering setup." default:"redis://127.0.0.1:6379/0"`
	Duration    time.Duration `help:"measured time per round." default:"5s"`
	Warmup      time.Duration `help:"warm-up per round." default:"1s"`
	Concurrency int           `help:"concurrent clients." default:"16"`
	Rounds      int           `help:"rounds per target; the median is reported." default:"3"`
	Pprof       string        `help:"pass --pprof ADDR to portico, to profile it during the run."`
	Cache       bool          `help:"run portico with its default result cache (64 MiB) instead of off; repeated calls for immutable data are then answered from it."`
}

func main() {
	if len(os.Args) == 3 && (os.Args[1] == "reverse-proxy" || os.Args[1] == "trivial-upstream") {
		// Child processes: the bare net/http reverse proxy baseline and
		// the trivial upstream, stopped by the parent's SIGINT (so no
		// signal handler here).
		run := reverseProxy
		if os.Args[1] == "trivial-upstream" {
			run = trivialUpstream
		}
		if err := run(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "portico-bench:", err)
			os.Exit(1)
		}
		return
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
