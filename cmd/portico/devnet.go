package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families"
)

// DevnetCmd runs one family's embedded devnet alone, as a node that any
// gateway (another portico, or a client directly) can use as an upstream.
type DevnetCmd struct {
	Family      string        `arg:"" enum:"${families}" help:"The family whose devnet to run: ${families}."`
	Listen      string        `help:"Address to listen on (HTTP and WebSocket); port 0 picks a free port." default:"127.0.0.1:0"`
	DataDir     string        `help:"Directory that keeps the chain across restarts; empty starts fresh each time." type:"path"`
	BlockPeriod time.Duration `help:"Time between blocks (slots on the slot chain); 0 keeps the devnet's default."`
	NoTraffic   bool          `help:"Do not generate background transactions."`
	KeepSlots   uint64        `help:"solana only: how many recent slots the ledger keeps (0 means 4096)."`
	Accounts    int           `help:"evm only: number of prefunded dev accounts (0 means 10)."`
	LogLevel    string        `help:"Log level: debug, info, warn or error." default:"warn" enum:"debug,info,warn,error"`
}

// familyNames is the value of the ${families} help and enum variable.
func familyNames() string {
	var names []string
	for _, n := range families.Names() {
		names = append(names, string(n))
	}
	return strings.Join(names, ",")
}

// Run starts the devnet, prints its ready line and serves until ctx ends.
func (c *DevnetCmd) Run(ctx context.Context, s *Streams) error {
	fam, err := families.Get(portico.Family(c.Family))
	if err != nil {
		return err
	}
	if c.DataDir != "" {
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
	}
	d, err := fam.NewDevnet(families.DevnetConfig{
		Listen: c.Listen, DataDir: c.DataDir, BlockPeriod: c.BlockPeriod, Traffic: !c.NoTraffic,
		Accounts: c.Accounts, KeepSlots: c.KeepSlots, Logger: logger(s.Err, c.LogLevel),
	})
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		d.Close()
		return err
	}
	fmt.Fprintf(s.Out, "portico devnet %s: serving JSON-RPC on %s and %s\n%s\n", c.Family, d.HTTPURL(), d.WSURL(), d.Info())
	<-ctx.Done()
	return d.Close()
}

func logger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
