package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/porticohq/portico/devnet/evmdevnet"
	"github.com/porticohq/portico/devnet/solanadevnet"
	"github.com/porticohq/portico/devnet/starknetdevnet"
)

// DevnetCmd runs one embedded devnet alone, as a node that any gateway
// (another portico, or a client directly) can use as an upstream.
type DevnetCmd struct {
	Solana   DevnetSolanaCmd   `cmd:"" help:"Run the slot-chain (Solana-style) devnet as a JSON-RPC node."`
	EVM      DevnetEVMCmd      `cmd:"" name:"evm" help:"Run the go-ethereum devnet as a JSON-RPC node (HTTP and WebSocket on one port)."`
	Starknet DevnetStarknetCmd `cmd:"" help:"Run the rollup (Starknet-style) devnet as a JSON-RPC node."`
}

// devnetFlags are the flags every devnet command has.
type devnetFlags struct {
	Listen      string        `help:"Address to listen on; port 0 picks a free port." default:"127.0.0.1:0"`
	DataDir     string        `help:"Directory that keeps the chain across restarts; empty starts fresh each time." type:"path"`
	BlockPeriod time.Duration `help:"Time between blocks (slots); 0 keeps the devnet's default."`
	NoTraffic   bool          `help:"Do not generate background transactions."`
	LogLevel    string        `help:"Log level: debug, info, warn or error." default:"warn" enum:"debug,info,warn,error"`
}

func (f devnetFlags) logger(w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(f.LogLevel))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func (f devnetFlags) dataDir() error {
	if f.DataDir == "" {
		return nil
	}
	if err := os.MkdirAll(f.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return nil
}

// runningDevnet is what serve and the devnet commands need of a devnet.
type runningDevnet interface {
	Start(ctx context.Context) error
	HTTPURL() string
	Close() error
}

// runDevnet takes the result of a devnet's New, starts it, prints the
// ready line (ready adds to it once the devnet runs) and serves until ctx
// ends.
func runDevnet(ctx context.Context, s *Streams, what string, d runningDevnet, newErr error, ready func() string) error {
	if newErr != nil {
		return newErr
	}
	if err := d.Start(ctx); err != nil {
		d.Close()
		return err
	}
	fmt.Fprintf(s.Out, "portico devnet %s: serving JSON-RPC on %s%s\n", what, d.HTTPURL(), ready())
	<-ctx.Done()
	return d.Close()
}

// DevnetSolanaCmd runs the slot-chain devnet.
type DevnetSolanaCmd struct {
	devnetFlags
	KeepSlots uint64 `help:"How many recent slots the ledger keeps (0 means 4096)."`
}

// Run starts the devnet and serves until ctx ends.
func (c *DevnetSolanaCmd) Run(ctx context.Context, s *Streams) error {
	if err := c.dataDir(); err != nil {
		return err
	}
	d, err := solanadevnet.New(solanadevnet.Config{
		Listen: c.Listen, DataDir: c.DataDir, SlotPeriod: c.BlockPeriod, KeepSlots: c.KeepSlots,
		Traffic: !c.NoTraffic, Logger: c.logger(s.Err),
	})
	return runDevnet(ctx, s, "solana", d, err, func() string { return fmt.Sprintf(" (faucet %s)", d.Faucet().PublicKey()) })
}

// DevnetEVMCmd runs the go-ethereum devnet.
type DevnetEVMCmd struct {
	devnetFlags
	Accounts int `help:"Number of prefunded dev accounts (0 means 10)."`
}

// Run starts the devnet and serves until ctx ends.
func (c *DevnetEVMCmd) Run(ctx context.Context, s *Streams) error {
	if err := c.dataDir(); err != nil {
		return err
	}
	d, err := evmdevnet.New(evmdevnet.Config{
		Listen: c.Listen, DataDir: c.DataDir, BlockPeriod: c.BlockPeriod, Accounts: c.Accounts,
		Traffic: !c.NoTraffic, Logger: c.logger(s.Err),
	})
	return runDevnet(ctx, s, "evm", d, err, func() string {
		fmt.Fprintf(s.Out, "chain id %s, prefunded dev accounts (test keys, never use them elsewhere):\n", d.ChainID())
		for _, a := range d.Accounts() {
			fmt.Fprintf(s.Out, "  %s  key %s\n", a.Address.Hex(), a.KeyHex())
		}
		return " and " + d.WSURL()
	})
}

// DevnetStarknetCmd runs the rollup devnet.
type DevnetStarknetCmd struct {
	devnetFlags
}

// Run starts the devnet and serves until ctx ends.
func (c *DevnetStarknetCmd) Run(ctx context.Context, s *Streams) error {
	if err := c.dataDir(); err != nil {
		return err
	}
	d, err := starknetdevnet.New(starknetdevnet.Config{
		Listen: c.Listen, DataDir: c.DataDir, BlockPeriod: c.BlockPeriod,
		Traffic: !c.NoTraffic && c.BlockPeriod >= 0, Logger: c.logger(s.Err),
	})
	return runDevnet(ctx, s, "starknet", d, err, func() string {
		return fmt.Sprintf(" (chain id %s, spec %s)", starknetdevnet.DefaultChainID, starknetdevnet.SpecVersion)
	})
}
