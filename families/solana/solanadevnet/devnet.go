// Package solanadevnet is an embedded slot-chain (Solana-style) devnet: a
// ledger that produces a slot every period, with leader-skipped slots,
// blocks that move from processed to confirmed to finalized (and a
// processed block that is sometimes abandoned), real signed transactions
// built with solana-go (transfers, account creation, votes, memos, address
// lookup tables and v0 transactions that use them), fees, fee and epoch
// rewards, and ledger cleanup. It serves the JSON-RPC methods real clients
// need over HTTP on loopback, so the gateway reaches it exactly as it
// reaches a remote node, and agave's PubSub subscriptions (slot, root,
// account, program, logs, signature, block) over a WebSocket on the same
// port.
//
// Lifecycle: New checks the configuration and has no side effects; Start
// loads or creates the ledger, opens the listener and starts producing
// slots; Close stops every goroutine and closes the store.
//
// docs/solana-devnet.md lists where it differs from a real node (agave).
package solanadevnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"

	"github.com/porticohq/portico/jsonrpc"
)

// Config configures a devnet. The zero value is a working devnet.
type Config struct {
	// Listen is the HTTP listen address; empty means "127.0.0.1:0".
	Listen string
	// DataDir keeps the ledger (blocks, accounts, signatures) across
	// restarts in a SQLite file; empty keeps it in memory, fresh at each
	// start. Only finalized blocks are stored: a restart resumes from the
	// newest finalized block.
	DataDir string
	// SlotPeriod is the time between slots; zero means 400ms.
	SlotPeriod time.Duration
	// KeepSlots is how many recent slots the ledger keeps (ledger
	// cleanup); zero means 4096. It must exceed FinalizeDepth.
	KeepSlots uint64
	// Traffic fills blocks with background transactions of every kind the
	// devnet runs. Votes are made with or without it.
	Traffic bool
	// Logger receives the devnet's warnings; nil discards them.
	Logger *slog.Logger

	// SlotsPerEpoch is the epoch length; zero means 432 (about three
	// minutes at 400ms, so rewards show up in a session).
	SlotsPerEpoch uint64
	// ConfirmDepth is how many slots a block waits to be confirmed; zero
	// means 2.
	ConfirmDepth uint64
	// FinalizeDepth is how many slots a block waits to be finalized
	// (rooted); zero means 32.
	FinalizeDepth uint64
	// SkipRate is the chance that a slot's leader produces no block; zero
	// means 0.05, negative means never.
	SkipRate float64
	// DropRate is the chance that a processed block is abandoned (its slot
	// becomes skipped) before it is confirmed; zero means 0.02, negative
	// means never.
	DropRate float64
	// Seed seeds the choice of skipped slots and traffic; zero seeds from
	// the clock.
	Seed uint64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Defaults applied by New.
const (
	DefaultListen        = "127.0.0.1:0"
	DefaultSlotPeriod    = 400 * time.Millisecond
	DefaultKeepSlots     = 4096
	DefaultSlotsPerEpoch = 432
	DefaultConfirmDepth  = 2
	DefaultFinalizeDepth = 32
	DefaultSkipRate      = 0.05
	DefaultDropRate      = 0.02
)

// Devnet is an embedded slot-chain node: built by New, serving from Start
// until Close.
type Devnet struct {
	cfg  Config
	log  *slog.Logger
	keys devKeys

	mu      sync.RWMutex // guards everything below it
	led     *ledger
	mempool []*pending
	rng     *rand.Rand
	traffic trafficState
	store   *store
	slotCh  chan struct{} // closed and replaced at each slot
	// behind is how far before the clock new blocks are stamped: warmUp
	// produces its slots back to back, stamped one period apart up to now.
	behind  time.Duration
	started bool
	closed  bool

	subs   *subHub // PubSub subscriptions; its own lock, taken after mu
	rpc    *jsonrpc.Server
	srv    *http.Server
	url    string
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// pending is a transaction waiting for the next block.
type pending struct {
	raw []byte
	tx  *solana.Transaction
}

// New checks the configuration and applies defaults. It starts nothing.
func New(cfg Config) (*Devnet, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return nil, fmt.Errorf("solanadevnet: Listen: %w", err)
	}
	switch {
	case cfg.SlotPeriod < 0:
		return nil, fmt.Errorf("solanadevnet: SlotPeriod: want a positive duration, got %s", cfg.SlotPeriod)
	case cfg.SlotPeriod == 0:
		cfg.SlotPeriod = DefaultSlotPeriod
	}
	if cfg.SlotsPerEpoch == 0 {
		cfg.SlotsPerEpoch = DefaultSlotsPerEpoch
	}
	if cfg.ConfirmDepth == 0 {
		cfg.ConfirmDepth = DefaultConfirmDepth
	}
	if cfg.FinalizeDepth == 0 {
		cfg.FinalizeDepth = DefaultFinalizeDepth
	}
	if cfg.KeepSlots == 0 {
		cfg.KeepSlots = DefaultKeepSlots
	}
	if cfg.ConfirmDepth >= cfg.FinalizeDepth {
		return nil, fmt.Errorf("solanadevnet: ConfirmDepth (%d) must be below FinalizeDepth (%d)", cfg.ConfirmDepth, cfg.FinalizeDepth)
	}
	if cfg.KeepSlots <= cfg.FinalizeDepth {
		return nil, fmt.Errorf("solanadevnet: KeepSlots (%d) must exceed FinalizeDepth (%d)", cfg.KeepSlots, cfg.FinalizeDepth)
	}
	if cfg.SlotsPerEpoch < 8 {
		return nil, fmt.Errorf("solanadevnet: SlotsPerEpoch: want at least 8, got %d", cfg.SlotsPerEpoch)
	}
	for name, r := range map[string]*float64{"SkipRate": &cfg.SkipRate, "DropRate": &cfg.DropRate} {
		switch {
		case *r >= 1:
			return nil, fmt.Errorf("solanadevnet: %s: want a chance below 1, got %g", name, *r)
		case *r == 0 && name == "SkipRate":
			*r = DefaultSkipRate
		case *r == 0:
			*r = DefaultDropRate
		case *r < 0:
			*r = 0
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(cfg.Now().UnixNano())
	}
	d := &Devnet{cfg: cfg, log: cfg.Logger, keys: newDevKeys(), slotCh: make(chan struct{}), subs: newSubHub()}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.rpc = jsonrpc.NewServer(d, jsonrpc.ServerOptions{Limits: limits, Logger: d.log})
	d.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	return d, nil
}

// Start loads the ledger from DataDir (or creates the genesis), opens the
// listener and starts producing slots. With Traffic, a new chain first gets
// a short history (see warmUp), so that a finalized block with transactions
// exists when Start returns. It may be called once; ctx bounds the start
// only.
func (d *Devnet) Start(ctx context.Context) error {
	d.mu.Lock()
	if d.started || d.closed {
		d.mu.Unlock()
		return errors.New("solanadevnet: Start called twice or after Close")
	}
	d.started = true
	d.mu.Unlock()
	if d.cfg.Traffic {
		d.mu.Lock()
		d.behind = time.Duration(d.warmUpSlots()) * d.cfg.SlotPeriod
		d.mu.Unlock()
	}
	if err := d.init(ctx); err != nil {
		return err
	}
	if d.cfg.Traffic {
		if err := d.warmUp(ctx); err != nil {
			d.closeStore()
			return err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", d.cfg.Listen)
	if err != nil {
		d.closeStore()
		return fmt.Errorf("solanadevnet: %w", err)
	}
	d.srv = &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second}
	d.url = "http://" + ln.Addr().String()
	runCtx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Warn("solana devnet: serve", "err", err)
		}
	}()
	go func() {
		defer d.wg.Done()
		d.run(runCtx)
	}()
	return nil
}

// init loads or creates the ledger. It is separate from Start so that
// in-package tests and benchmarks can drive slots by hand.
func (d *Devnet) init(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.DataDir != "" {
		st, err := openStore(ctx, d.cfg.DataDir)
		if err != nil {
			return err
		}
		d.store = st
		led, err := st.load(ctx)
		if err != nil {
			st.close()
			d.store = nil
			return err
		}
		if led != nil {
			d.led = led
			return nil
		}
	}
	d.led = d.genesis()
	if d.store != nil {
		if err := d.store.save(ctx, d.led, []*block{d.led.root}, nil); err != nil {
			d.store.close()
			d.store = nil
			return err
		}
	}
	return nil
}

// run produces a slot every period until ctx ends.
func (d *Devnet) run(ctx context.Context) {
	t := time.NewTicker(d.cfg.SlotPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.step(ctx)
		}
	}
}

// HTTPURL returns the JSON-RPC endpoint, or "" before Start.
func (d *Devnet) HTTPURL() string { return d.url }

// Close stops producing slots, closes the listener and the store, and
// waits for every goroutine. It is idempotent and a no-op before Start.
func (d *Devnet) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	var err error
	if d.cancel != nil {
		d.cancel()
	}
	d.rpc.Close() // WebSocket connections: Shutdown leaves hijacked ones
	if d.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = d.srv.Shutdown(ctx)
		cancel()
		if err != nil {
			err = d.srv.Close()
		}
	}
	d.wg.Wait()
	if cerr := d.closeStore(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

func (d *Devnet) closeStore() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.store == nil {
		return nil
	}
	err := d.store.close()
	d.store = nil
	return err
}

// Faucet returns the key of the faucet account that requestAirdrop spends
// from. It holds 500,000,000 SOL at genesis.
func (d *Devnet) Faucet() solana.PrivateKey { return d.keys.faucet }

// Slot returns the newest slot at a commitment level ("processed",
// "confirmed" or "finalized"; anything else is processed), or 0 before
// Start.
func (d *Devnet) Slot(commitment string) uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.led == nil {
		return 0
	}
	c := processed
	switch commitment {
	case "confirmed":
		c = confirmed
	case "finalized":
		c = finalized
	}
	return d.led.at(c).Slot
}

// WaitForSlot waits until the devnet has reached slot at a commitment level
// (as Slot names them) or ctx ends.
func (d *Devnet) WaitForSlot(ctx context.Context, commitment string, slot uint64) error {
	for {
		d.mu.RLock()
		ch := d.slotCh
		d.mu.RUnlock()
		if d.Slot(commitment) >= slot {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
