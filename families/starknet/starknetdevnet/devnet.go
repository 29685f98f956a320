// Package starknetdevnet is an embedded rollup devnet in the shape of a
// Starknet node (JSON-RPC spec v0.8): it seals a block every period while
// building a pending block, runs transactions of a fee token and account
// contracts (INVOKE, DEPLOY_ACCOUNT and DECLARE, version 3), and commits to
// its state with Starknet's own Merkle-Patricia tries and hash functions
// (Pedersen and Poseidon on the Stark field). It answers the methods
// clients need — getEvents and getStateUpdate among them — over JSON-RPC
// 2.0 on loopback HTTP, under the starknet_ and the seed's rollup_ names,
// and on the same port, over a WebSocket, the subscriptions of the spec's
// WebSocket API (subscriptions.go).
//
// Lifecycle: New checks the configuration and has no side effects; Start
// opens the database (a file in DataDir, or a temporary one), writes the
// genesis block on first use, serves HTTP and starts the block producer;
// Close stops every goroutine (subscription streams included), closes the
// database and removes temporary files.
package starknetdevnet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/porticohq/portico/families/starknet/starknettx"
	"github.com/porticohq/portico/jsonrpc"
)

// Defaults of Config.
const (
	DefaultBlockPeriod = 3 * time.Second
	DefaultChainID     = "SN_PORTICO"
	DefaultL1Lag       = 4
	defaultAccounts    = 8
)

// Config configures a devnet. The zero value is a working devnet.
type Config struct {
	// Listen is the HTTP address; empty means 127.0.0.1:0.
	Listen string
	// DataDir keeps the chain across restarts; empty starts fresh each
	// time, in a temporary directory removed by Close.
	DataDir string
	// BlockPeriod is the time between sealed blocks; 0 means 3s. A
	// negative period seals only when SealBlock is called.
	BlockPeriod time.Duration
	// Traffic generates transactions in the background: a round is added
	// to the pending block four times per period. It needs a positive
	// BlockPeriod; otherwise call GenerateTraffic.
	Traffic bool
	// Logger receives the devnet's warnings and errors; nil discards them.
	Logger *slog.Logger
	// ChainID is the chain id as a short string (at most 31 ASCII
	// characters); empty means SN_PORTICO.
	ChainID string
	// L1Lag is how many blocks behind the latest the devnet reports as
	// accepted on L1 (the l1_accepted tag, ACCEPTED_ON_L1 statuses); 0
	// means 4, negative means no block is ever accepted on L1.
	L1Lag int
	// Clock returns the time for block timestamps; nil means time.Now.
	Clock func() time.Time
}

// Devnet is an embedded rollup devnet: built by New, serving from Start
// until Close.
type Devnet struct {
	cfg     Config
	log     *slog.Logger
	chain   chainParams
	handler *jsonrpc.Server
	subs    *hub // the WebSocket subscriptions

	mu      sync.RWMutex // guards everything below; sealing holds it for writing
	db      *sql.DB
	tmpDir  string
	world   *worldState
	head    *blockRow
	pending *pendingBlock
	round   int // traffic rounds run in the pending block

	// proofMu guards proofs and proofsAsked; taken under mu held for
	// reading, or inside a seal.
	proofMu sync.Mutex
	// proofs are the tries of the last sealed blocks that can be proven,
	// oldest first, at most proofWindow: the head's is built on the first
	// request, and once one was asked, each seal builds its block's.
	proofs      []*stateTries
	proofsAsked bool
	started     bool
	closed      bool

	ln     net.Listener
	srv    *http.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

var _ io.Closer = (*Devnet)(nil)

// New checks the configuration. It starts nothing and touches no files;
// Close is safe, and a no-op, on a Devnet that was never started.
func New(cfg Config) (*Devnet, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return nil, fmt.Errorf("starknetdevnet: Listen: %w", err)
	}
	if cfg.BlockPeriod == 0 {
		cfg.BlockPeriod = DefaultBlockPeriod
	}
	if cfg.Traffic && cfg.BlockPeriod < 0 {
		return nil, errors.New("starknetdevnet: Traffic needs a positive BlockPeriod")
	}
	if cfg.BlockPeriod > 0 && cfg.BlockPeriod < 10*time.Millisecond {
		return nil, fmt.Errorf("starknetdevnet: BlockPeriod %v is below 10ms", cfg.BlockPeriod)
	}
	if cfg.ChainID == "" {
		cfg.ChainID = DefaultChainID
	}
	if len(cfg.ChainID) > 31 {
		return nil, fmt.Errorf("starknetdevnet: ChainID %q is longer than 31 bytes", cfg.ChainID)
	}
	for _, c := range []byte(cfg.ChainID) {
		if c < 0x20 || c > 0x7e {
			return nil, fmt.Errorf("starknetdevnet: ChainID %q is not printable ASCII", cfg.ChainID)
		}
	}
	if cfg.L1Lag == 0 {
		cfg.L1Lag = DefaultL1Lag
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	d := &Devnet{cfg: cfg, log: cfg.Logger, chain: chainParams{chainID: starknettx.ShortString(cfg.ChainID)}}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.subs = newHub(d.log)
	d.handler = newServer(d)
	return d, nil
}

// Start opens the database, writes the genesis block if the chain is new,
// listens and starts producing blocks. With Traffic, a chain without
// transactions first gets a sealed block of traffic. ctx bounds the
// start-up only; Close stops the devnet.
func (d *Devnet) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.closed {
		return errors.New("starknetdevnet: Start called twice or after Close")
	}
	d.started = true
	dir := d.cfg.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "starknetdevnet-")
		if err != nil {
			return fmt.Errorf("starknetdevnet: %w", err)
		}
		d.tmpDir, dir = tmp, tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("starknetdevnet: DataDir: %w", err)
	}
	db, err := openDB(ctx, filepath.Join(dir, "starknet-devnet.sqlite"))
	if err != nil {
		return err
	}
	d.db = db
	if err := d.loadOrGenesis(ctx); err != nil {
		return err
	}
	d.subs.head.Store(d.head.number)
	if d.cfg.Traffic {
		if err := d.firstTraffic(ctx); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", d.cfg.Listen)
	if err != nil {
		return fmt.Errorf("starknetdevnet: listen: %w", err)
	}
	d.ln = ln
	d.srv = &http.Server{Handler: d.handler, ReadHeaderTimeout: 10 * time.Second}
	runCtx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("starknet devnet: serve", "err", err)
		}
	}()
	if d.cfg.BlockPeriod > 0 {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.produce(runCtx)
		}()
	}
	return nil
}

// firstTraffic seals a block of traffic (a period's four rounds) now when
// the chain holds no transaction yet, so that getEvents has events to
// answer as soon as Start returns rather than after the first period. The
// caller holds mu for writing.
func (d *Devnet) firstTraffic(ctx context.Context) error {
	var exists bool
	if err := d.db.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM txs)`).Scan(&exists); err != nil {
		return fmt.Errorf("starknetdevnet: %w", err)
	}
	if exists {
		return nil
	}
	for range trafficRounds {
		d.trafficRound()
	}
	_, err := d.sealLocked(ctx)
	return err
}

// HTTPURL returns the JSON-RPC endpoint, or "" before Start.
func (d *Devnet) HTTPURL() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.ln == nil {
		return ""
	}
	return "http://" + d.ln.Addr().String()
}

// Handler returns the JSON-RPC 2.0 handler (HTTP POST with single calls
// and batches, and WebSocket), for mounting in another server. It answers
// once Start has opened the database.
func (d *Devnet) Handler() http.Handler { return d.handler }

// Close stops the server and the producer, waits for them, and closes the
// database; a temporary data directory is removed. The pending block is not
// persisted.
func (d *Devnet) Close() error {
	d.once.Do(func() {
		d.mu.Lock()
		d.closed = true
		srv, cancel := d.srv, d.cancel
		d.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		var errs []error
		d.handler.Close() // WebSocket connections: Shutdown leaves hijacked ones
		if srv != nil {
			ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, err)
				srv.Close()
			}
			stop()
		}
		d.wg.Wait()
		d.subs.close() // after the connections, so every subscription has ended
		d.mu.Lock()
		if d.db != nil {
			errs = append(errs, d.db.Close())
			d.db = nil
		}
		d.mu.Unlock()
		if d.tmpDir != "" {
			errs = append(errs, os.RemoveAll(d.tmpDir))
		}
		d.err = errors.Join(errs...)
	})
	return d.err
}

// trafficRounds is how many rounds of traffic each block gets.
const trafficRounds = 4

// produce seals a block every period and, with Traffic, adds four rounds
// of transactions to each block: spread over the period, so that the
// pending block fills as a client watches, and whatever rounds a busy
// machine's late ticks left out made up just before the seal, so that no
// block goes without its traffic. (Tickers drop the ticks their reader was
// too late for, and a select between two ready ones picks either: a
// loaded machine sealed empty blocks.)
func (d *Devnet) produce(ctx context.Context) {
	period := d.cfg.BlockPeriod
	seal := time.NewTicker(period)
	defer seal.Stop()
	var traffic <-chan time.Time
	if d.cfg.Traffic {
		t := time.NewTicker(period / trafficRounds)
		defer t.Stop()
		traffic = t.C
	}
	rounds := 0 // added to the pending block
	round := func() {
		if err := d.GenerateTraffic(); err != nil {
			d.log.Error("starknet devnet: traffic", "err", err)
		}
		rounds++
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-traffic:
			if rounds < trafficRounds {
				round()
			}
		case <-seal.C:
			for traffic != nil && rounds < trafficRounds && ctx.Err() == nil {
				round()
			}
			if _, err := d.SealBlock(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("starknet devnet: seal", "err", err)
			}
			rounds = 0
		}
	}
}

// errNotRunning is returned by calls that need a started, open devnet.
var errNotRunning = errors.New("starknetdevnet: devnet is not running")

// SealBlock turns the pending block into the next block now and opens a new
// pending block; it returns the sealed block's number. An empty pending
// block is sealed too, as sequencers do on a timer.
func (d *Devnet) SealBlock(ctx context.Context) (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil || d.closed {
		return 0, errNotRunning
	}
	return d.sealLocked(ctx)
}

// sealLocked seals the pending block; the caller holds mu for writing.
func (d *Devnet) sealLocked(ctx context.Context) (uint64, error) {
	p := d.pending
	p.timestamp = max(uint64(d.cfg.Clock().Unix()), d.head.timestamp)
	_, _, root := d.world.commitment()
	b := &sealedBlock{
		blockRow: blockRow{
			number: p.number, parent: p.parent, oldRoot: p.oldRoot, newRoot: root,
			timestamp: p.timestamp, stateDiff: string(appendStateDiff(nil, p.diff)),
			commit: blockCommitments(p.txs, p.diff),
		},
		txs: p.txs,
	}
	var err error
	if b.hash, err = blockHash(&b.blockRow); err != nil {
		return 0, fmt.Errorf("starknetdevnet: seal block %d: %w", b.number, err)
	}
	if err := writeBlock(ctx, d.db, b, p.diff, d.world); err != nil {
		// The world already holds the pending changes; a devnet that cannot
		// write is broken, so say so loudly and keep the pending block.
		return 0, fmt.Errorf("starknetdevnet: seal block %d: %w", b.number, err)
	}
	d.head = &b.blockRow
	d.sealedTries(d.head)
	d.openPending()
	d.subs.included(b.number, b.txs)
	d.subs.advanced(b.number, d.l1Head())
	return b.number, nil
}

// openPending starts an empty pending block on top of the head.
func (d *Devnet) openPending() {
	d.pending = &pendingBlock{
		number:    d.head.number + 1,
		timestamp: max(uint64(d.cfg.Clock().Unix()), d.head.timestamp),
		parent:    d.head.hash,
		oldRoot:   d.head.newRoot,
		diff:      newStateDiff(),
	}
	d.round = 0
}

// loadOrGenesis loads the head and state of an existing chain or writes
// the genesis block.
func (d *Devnet) loadOrGenesis(ctx context.Context) error {
	head, err := scanBlock(d.db.QueryRowContext(ctx, `SELECT `+blockColumns+` FROM blocks ORDER BY number DESC LIMIT 1`))
	switch {
	case err == nil:
		var chainID string
		if err := d.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k='chain_id'`).Scan(&chainID); err != nil {
			return fmt.Errorf("starknetdevnet: read chain id: %w", err)
		}
		if chainID != d.cfg.ChainID {
			return fmt.Errorf("starknetdevnet: DataDir holds chain %s, not %s", chainID, d.cfg.ChainID)
		}
		w, err := loadState(ctx, d.db)
		if err != nil {
			return fmt.Errorf("starknetdevnet: load state: %w", err)
		}
		if _, _, root := w.commitment(); !root.Equal(&head.newRoot) {
			return fmt.Errorf("starknetdevnet: stored state root %s does not match block %d's %s", starknettx.Hex(&root), head.number, starknettx.Hex(&head.newRoot))
		}
		d.world, d.head = w, head
		d.openPending()
		d.world.ensureWallets(d.pending.diff) // a chain made before the devnet had them
		return nil
	case errors.Is(err, sql.ErrNoRows):
		if _, err := d.db.ExecContext(ctx, `INSERT INTO meta VALUES('chain_id', ?)`, d.cfg.ChainID); err != nil {
			return fmt.Errorf("starknetdevnet: %w", err)
		}
		return d.genesis(ctx)
	default:
		return fmt.Errorf("starknetdevnet: read head: %w", err)
	}
}

// genesis writes block 0: the token and account classes declared, a Cairo
// 0 class declared, the fee token and the dev accounts deployed and funded.
// Block 0 has no transactions; its old root is 0.
func (d *Devnet) genesis(ctx context.Context) error {
	d.world = newWorldState()
	d.head = &blockRow{number: 0, timestamp: uint64(d.cfg.Clock().Unix())}
	d.pending = &pendingBlock{number: 0, timestamp: d.head.timestamp, diff: newStateDiff()}
	w, diff := d.world, d.pending.diff
	w.declare(diff, accountClass, compiledHash(accountClass))
	w.declare(diff, tokenClass, compiledHash(tokenClass))
	w.declareLegacy(diff, legacyClass)
	w.deploy(diff, tokenAddress, tokenClass)
	supply := uint64(0)
	for i := range defaultAccounts {
		pub := devPublicKey(uint64(i))
		addr := contractAddress(Felt{}, starknettx.FeltU64(uint64(i)), accountClass, []Felt{pub})
		w.deploy(diff, addr, accountClass)
		w.setStorage(diff, addr, varPublicKey, pub)
		w.setStorage(diff, tokenAddress, mapSlot(varBalances, addr), starknettx.FeltU64(initialBalance))
		supply += initialBalance
	}
	w.setStorage(diff, tokenAddress, varTotalSupply, starknettx.FeltU64(supply))
	w.ensureWallets(diff)
	_, err := d.sealLocked(ctx)
	return err
}
