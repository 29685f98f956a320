// Command portico runs the Portico gateway and its tools. main only wires
// signals and exit codes; the work is done by the command types, so tests
// can run the whole program in-process on port 0.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/metering/membudget"
)

// CLI is the command line of portico.
type CLI struct {
	Serve   ServeCmd   `cmd:"" help:"Run the gateway (with embedded devnets where no upstream is configured)."`
	Devnet  DevnetCmd  `cmd:"" help:"Run one family's embedded devnet alone as a JSON-RPC node."`
	Keys    KeysCmd    `cmd:"" help:"Manage API keys in the key store."`
	Usage   UsageCmd   `cmd:"" help:"Show calls and credits per key, day and method."`
	Config  ConfigCmd  `cmd:"" help:"Check a config file without serving."`
	Version VersionCmd `cmd:"" help:"Print the version."`
	Auth    AuthCmd    `cmd:"" help:"Run the auth server (login pages, session server, key network), a key network node, or migrate an auth SDK config."`
	Wallet  WalletCmd  `cmd:"" help:"Example: log in with the auth SDK and send one transfer on each chain family through the gateway (against make run)."`
	WS      WSCmd      `cmd:"" name:"ws" help:"Send messages over a WebSocket and print what comes back, one a line: a subscription from a shell."`
}

func main() {
	// A gateway allocates short-lived buffers per request and holds little
	// live heap; collecting less often trades a little memory for CPU.
	// 200 gave the request path the same throughput as 400 and keeps an
	// idle WebSocket subscriber under 20 KB (docs/benchmarks.md, issue
	// 17). GOGC, when set, wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	// With GOGC at 200 the heap may grow to three times what is live; a
	// soft limit at half the machine's (or container's) memory makes the
	// collector work harder before that matters, so that the memory budget
	// (limits.memory_bytes, an eighth by default) bounds the process's
	// size too. GOMEMLIMIT, when set, wins.
	if os.Getenv("GOMEMLIMIT") == "" {
		if m := membudget.SystemMemory(); m > 0 {
			debug.SetMemoryLimit(m / membudget.RuntimeLimitShare)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "portico:", err)
		os.Exit(1)
	}
}

// cliVars are the variables of the CLI's help and enum tags.
func cliVars() kong.Vars {
	return kong.Vars{"default_listen": config.DefaultListen, "families": familyNames()}
}

// run parses args and runs the chosen command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runInput(ctx, args, nil, stdout, stderr)
}

// runInput is run with a standard input of its own (nil: os.Stdin).
func runInput(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cli CLI
	parser, err := kong.New(&cli,
		kong.Name("portico"),
		kong.Description("Self-hosted multi-chain JSON-RPC gateway."),
		kong.UsageOnError(),
		kong.Writers(stdout, stderr),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(&Streams{Out: stdout, Err: stderr, In: stdin}),
		cliVars(),
	)
	if err != nil {
		return err
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		return err
	}
	return kctx.Run()
}
