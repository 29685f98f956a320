// Package evmdevnet runs an in-process go-ethereum node for development: a
// simulated beacon seals a block every period, deterministic dev accounts
// are prefunded, and optional traffic fills blocks with transactions of
// every type. The node serves JSON-RPC over HTTP and WebSocket on loopback,
// so the gateway reaches it exactly as it reaches a remote node.
//
// Lifecycle: New checks the configuration and has no side effects; Start
// opens the database, serves RPC, imports a chain file when given and
// starts sealing; Close stops every goroutine and closes the database.
package evmdevnet

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/eth/tracers"
	_ "github.com/ethereum/go-ethereum/eth/tracers/native" // callTracer, prestateTracer and the other native tracers
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/log"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/families/evm/evmtx"
)

// Config configures a devnet. The zero value is a working devnet.
type Config struct {
	// Listen is the HTTP and WebSocket address (one port serves both);
	// empty means 127.0.0.1:0.
	Listen string
	// DataDir keeps the chain across restarts; empty keeps it in memory.
	DataDir string
	// ChainID of the dev chain; 0 means 1337. A genesis file sets its own.
	ChainID uint64
	// BlockPeriod is the time between sealed blocks, in whole seconds; 0
	// means 2s. A negative period seals only on Commit.
	BlockPeriod time.Duration
	// Accounts is the number of prefunded dev accounts; 0 means 10 (at
	// least 7 are made, as traffic needs them).
	Accounts int
	// Traffic sends a round of transactions of every type before each
	// periodic block. It needs a positive BlockPeriod; with a negative one,
	// call SendTraffic and Commit instead.
	Traffic bool
	// GenesisFile starts the chain from a genesis.json instead of the dev
	// genesis. The dev accounts are then still derived but funded only if
	// that genesis funds them, so traffic on such a chain fails (and is
	// logged). New blocks build on the imported head, with the current time
	// as their timestamp.
	GenesisFile string
	// ChainRLP, if set, is a file of RLP-encoded blocks (as `geth export`
	// writes) that Start imports on top of the genesis, and indexes, before
	// it returns; the imported head is then safe and finalized. Blocks the
	// data directory already holds are skipped.
	ChainRLP string
	// Logger receives the node's warnings and errors; nil discards them.
	Logger *slog.Logger
}

// Account is a prefunded dev account. Its key is a public test key.
type Account struct {
	Address common.Address
	Key     *ecdsa.PrivateKey
}

// KeyHex returns the private key as 0x-prefixed hex.
func (a Account) KeyHex() string { return hexutil.Encode(crypto.FromECDSA(a.Key)) }

// Devnet is an embedded go-ethereum dev node: built by New, serving from
// Start until Close.
type Devnet struct {
	cfg      Config
	stack    *node.Node
	eth      *eth.Ethereum
	beacon   *catalyst.SimulatedBeacon
	accounts []Account
	chainID  *big.Int
	log      *slog.Logger

	genesisSpec *core.Genesis

	commitMu sync.Mutex
	stop     chan struct{}
	ctx      context.Context // canceled by Close, so a traffic round ends with it
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	started  bool // set by Start; Commit and SendTraffic need it
	closed   bool // set by Close under commitMu
	once     sync.Once
	closeErr error

	trafficMu sync.Mutex // one round at a time; guards deployed and sender
	deployed  bool
	sender    *evmtx.Sender
	client    *ethclient.Client
}

var _ io.Closer = (*Devnet)(nil)

// New checks the configuration, derives the dev accounts and reads the
// genesis. It starts nothing and opens no database; Close is safe, and a
// no-op, on a Devnet that was never started.
func New(cfg Config) (*Devnet, error) {
	if cfg.BlockPeriod == 0 {
		cfg.BlockPeriod = 2 * time.Second
	}
	if cfg.Accounts <= 0 {
		cfg.Accounts = 10
	}
	cfg.Accounts = max(cfg.Accounts, 7)
	if cfg.ChainID == 0 {
		cfg.ChainID = 1337
	}
	d := &Devnet{cfg: cfg, log: cfg.Logger, stop: make(chan struct{})}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	for i := range cfg.Accounts {
		key, _ := crypto.ToECDSA(crypto.Keccak256([]byte("portico-devnet-" + strconv.Itoa(i))))
		d.accounts = append(d.accounts, Account{Address: crypto.PubkeyToAddress(key.PublicKey), Key: key})
	}

	genesis, err := d.genesis()
	if err != nil {
		return nil, err
	}
	d.chainID = genesis.Config.ChainID

	if cfg.ChainRLP != "" {
		if _, err := os.Stat(cfg.ChainRLP); err != nil {
			return nil, fmt.Errorf("evmdevnet: %w", err)
		}
	}
	d.genesisSpec = genesis
	return d, nil
}

// genesis returns the genesis from the file, or the dev genesis: every fork
// go-ethereum's dev mode enables, active from block 0, with the dev
// accounts funded.
func (d *Devnet) genesis() (*core.Genesis, error) {
	if d.cfg.GenesisFile != "" {
		data, err := os.ReadFile(d.cfg.GenesisFile)
		if err != nil {
			return nil, fmt.Errorf("evmdevnet: %w", err)
		}
		g := new(core.Genesis)
		if err := g.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("evmdevnet: genesis %s: %w", d.cfg.GenesisFile, err)
		}
		return g, nil
	}
	g := core.DeveloperGenesisBlock(ethconfig.Defaults.Miner.GasCeil, nil)
	conf := *g.Config
	conf.ChainID = new(big.Int).SetUint64(d.cfg.ChainID)
	g.Config = &conf
	alloc := maps.Clone(g.Alloc)
	funds := new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))
	for _, a := range d.accounts {
		alloc[a.Address] = types.Account{Balance: funds}
	}
	g.Alloc = alloc
	return g, nil
}

// importChain inserts the RLP blocks of a chain file, as `geth import`
// does.
func (d *Devnet) importChain(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("evmdevnet: %w", err)
	}
	defer f.Close()
	stream := rlp.NewStream(f, 0)
	var blocks types.Blocks
	for {
		b := new(types.Block)
		if err := stream.Decode(b); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("evmdevnet: %s: block %d: %w", path, len(blocks)+1, err)
		}
		blocks = append(blocks, b)
	}
	chain := d.eth.BlockChain()
	// Blocks already present (a restart on the same data directory) are
	// skipped.
	for len(blocks) > 0 && chain.HasBlock(blocks[0].Hash(), blocks[0].NumberU64()) {
		blocks = blocks[1:]
	}
	if len(blocks) == 0 {
		return nil
	}
	if n, err := chain.InsertChain(blocks); err != nil {
		return fmt.Errorf("evmdevnet: %s: importing block %d: %w", path, blocks[n].NumberU64(), err)
	}
	// An imported chain is final, as a consensus client's forkchoice after
	// a sync says (the conformance suite sends head = safe = finalized):
	// calls about "safe" and "finalized" find its head.
	head := chain.CurrentBlock()
	chain.SetFinalized(head)
	chain.SetSafe(head)
	return nil
}

// Start opens the node's database, serves RPC on loopback, imports the
// chain file if one is configured, and starts sealing blocks (and traffic,
// if configured; a head without transactions then gets a block of traffic
// before Start returns). The endpoints are bound before the import, but
// their ports are unknown to callers until Start returns. It may be called
// once; ctx bounds the start only.
func (d *Devnet) Start(ctx context.Context) error {
	if d.started || d.stack != nil {
		return errors.New("evmdevnet: already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	nodeConf := node.DefaultConfig
	nodeConf.Name = "portico-devnet"
	nodeConf.DataDir = d.cfg.DataDir
	nodeConf.P2P = p2p.Config{NoDiscovery: true, MaxPeers: 0, ListenAddr: ""}
	host, port, err := listenAddr(d.cfg.Listen)
	if err != nil {
		return err
	}
	nodeConf.HTTPHost, nodeConf.HTTPPort = host, port
	nodeConf.WSHost, nodeConf.WSPort = host, port
	nodeConf.HTTPModules = Modules()
	nodeConf.WSModules = nodeConf.HTTPModules
	nodeConf.HTTPVirtualHosts = []string{"*"}
	nodeConf.HTTPCors = []string{"*"}
	nodeConf.WSOrigins = []string{"*"}
	nodeConf.AuthPort = 0
	nodeConf.IPCPath = ""
	nodeConf.Logger = log.NewLogger(warnOnly{d.log.Handler()})
	stack, err := node.New(&nodeConf)
	if err != nil {
		return fmt.Errorf("evmdevnet: %w", err)
	}
	ethConf := ethconfig.Defaults
	ethConf.Genesis = d.genesisSpec
	ethConf.NetworkId = d.chainID.Uint64()
	ethConf.SyncMode = ethconfig.FullSync
	ethConf.TxPool.NoLocals = true
	ethConf.Miner.GasPrice = big.NewInt(1)
	backend, err := eth.New(stack, &ethConf)
	if err != nil {
		stack.Close()
		return fmt.Errorf("evmdevnet: %w", err)
	}
	filterSystem := filters.NewFilterSystem(backend.APIBackend, filters.Config{})
	stack.RegisterAPIs([]rpc.API{{Namespace: "eth", Service: filters.NewFilterAPI(filterSystem)}})
	// The tracing half of the debug namespace, as geth registers it: the
	// struct logger and the native tracers (callTracer, prestateTracer…).
	stack.RegisterAPIs(tracers.APIs(backend.APIBackend))
	d.stack, d.eth = stack, backend
	// From here on Close closes the node, which stops the backend.
	if err := stack.Start(); err != nil {
		return fmt.Errorf("evmdevnet: %w", err)
	}
	if d.cfg.ChainRLP != "" {
		if err := d.importChain(d.cfg.ChainRLP); err != nil {
			return err
		}
	}
	if err := d.waitIndexed(ctx, ethConf.TransactionHistory); err != nil {
		return err
	}
	beacon, err := catalyst.NewSimulatedBeacon(0, common.Address{}, d.eth)
	if err != nil {
		return fmt.Errorf("evmdevnet: %w", err)
	}
	d.beacon = beacon
	d.started = true
	if d.cfg.BlockPeriod > 0 {
		if d.cfg.Traffic {
			if err := d.firstTraffic(ctx, ethConf.TransactionHistory); err != nil {
				return err
			}
		}
		d.wg.Go(d.seal)
	}
	return nil
}

// firstTraffic seals a block of traffic now when the head holds no
// transaction (a new chain, or one kept by a run without traffic), so that
// the latest block has transactions as soon as Start returns rather than
// after the first period. A round that fails (a genesis file that does not
// fund the dev accounts) is logged, as in the sealing loop, and Start goes
// on.
func (d *Devnet) firstTraffic(ctx context.Context, history uint64) error {
	if d.eth.BlockChain().CurrentBlock().TxHash != types.EmptyTxsHash {
		return nil
	}
	hashes, err := d.SendTraffic(ctx)
	if err != nil {
		d.log.Warn("devnet traffic failed", "err", err)
	}
	if len(hashes) == 0 {
		return nil
	}
	if _, err := d.Commit(); err != nil {
		return err
	}
	return d.waitIndexed(ctx, history)
}

// waitIndexed waits until the transaction indexer has caught up with the
// head, so that a lookup of an unknown transaction answers null rather than
// "transaction indexing is in progress" (the indexer runs in the
// background, and an imported chain arrives all at once). history is the
// number of recent blocks indexed, 0 for all.
func (d *Devnet) waitIndexed(ctx context.Context, history uint64) error {
	chain := d.eth.BlockChain()
	head := chain.CurrentBlock().Number.Uint64()
	if head == 0 {
		return nil // go-ethereum indexes nothing until the first block
	}
	want := head + 1
	if history != 0 {
		want = min(want, history)
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		p, err := chain.TxIndexProgress()
		if err != nil || p.Done() && p.Indexed >= want {
			return nil // err: indexing is off, nothing to wait for
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("evmdevnet: waiting for the transaction index: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// seal commits a block every period, after sending a round of traffic.
// The beacon's own loop is not used, so that traffic and sealing take turns
// and Commit from tests never races a timer.
func (d *Devnet) seal() {
	period := max(d.cfg.BlockPeriod.Truncate(time.Second), time.Second)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		if d.cfg.Traffic {
			// A round takes a few milliseconds once the blob proofs are
			// made; the first takes about a second.
			ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
			if _, err := d.SendTraffic(ctx); err != nil {
				d.log.Warn("devnet traffic failed", "err", err)
			}
			cancel()
		}
		if _, err := d.Commit(); err != nil {
			d.log.Warn("devnet sealing failed", "err", err)
		}
	}
}

// SendTraffic sends one transaction of each type 0 to 4 (and, the first
// time, a contract that writes storage) and returns their hashes. They land
// in the next sealed block.
func (d *Devnet) SendTraffic(ctx context.Context) ([]common.Hash, error) {
	d.trafficMu.Lock()
	defer d.trafficMu.Unlock()
	if !d.started || d.closed {
		return nil, errors.New("evmdevnet: not running")
	}
	if d.sender == nil {
		keys := make([]*ecdsa.PrivateKey, 6)
		for i := range keys {
			keys[i] = d.accounts[i].Key
		}
		d.client = ethclient.NewClient(d.stack.Attach())
		d.sender = &evmtx.Sender{Client: d.client, ChainID: d.chainID, Keys: keys}
	}
	s := d.sender
	hashes, err := s.Round(ctx)
	if err != nil {
		return hashes, err
	}
	if !d.deployed {
		h, _, err := s.Deploy(ctx, d.accounts[6].Key, evmtx.StorageInit)
		if err != nil {
			return hashes, err
		}
		d.deployed = true
		hashes = append(hashes, h)
	}
	return hashes, nil
}

// StorageContract returns the address of the contract traffic deploys
// first: slot 0 holds 42 and slot 1 holds 7 once it is sealed.
func (d *Devnet) StorageContract() common.Address {
	return crypto.CreateAddress(d.accounts[6].Address, 0)
}

// Commit seals a block now with the pending transactions and returns its
// hash.
func (d *Devnet) Commit() (common.Hash, error) {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	if !d.started || d.closed {
		return common.Hash{}, errors.New("evmdevnet: not running")
	}
	before := d.eth.BlockChain().CurrentBlock().Number.Uint64()
	h := d.beacon.Commit()
	if d.eth.BlockChain().CurrentBlock().Number.Uint64() == before {
		return common.Hash{}, errors.New("evmdevnet: no block was sealed")
	}
	return h, nil
}

// HTTPURL returns the node's HTTP JSON-RPC endpoint, or "" before Start.
func (d *Devnet) HTTPURL() string {
	if !d.started {
		return ""
	}
	return d.stack.HTTPEndpoint()
}

// Modules returns the RPC namespaces the node serves over HTTP and
// WebSocket.
func Modules() []string { return []string{"eth", "net", "web3", "debug", "txpool"} }

// WSURL returns the node's WebSocket JSON-RPC endpoint, or "" before Start.
func (d *Devnet) WSURL() string {
	if !d.started {
		return ""
	}
	return d.stack.WSEndpoint()
}

// Accounts returns the prefunded dev accounts.
func (d *Devnet) Accounts() []Account { return d.accounts }

// ChainID returns the chain id.
func (d *Devnet) ChainID() *big.Int { return new(big.Int).Set(d.chainID) }

// Close stops sealing and traffic and closes the node. It is idempotent,
// and a no-op for a Devnet that was never started.
func (d *Devnet) Close() error {
	d.once.Do(func() {
		close(d.stop)
		d.cancel()
		d.wg.Wait()
		// Waiting for a traffic round or Commit in flight, then marking
		// the devnet closed, keeps both from touching a closed node.
		d.trafficMu.Lock()
		defer d.trafficMu.Unlock()
		d.commitMu.Lock()
		defer d.commitMu.Unlock()
		d.closed = true
		if d.client != nil {
			d.client.Close()
		}
		if d.beacon != nil {
			d.beacon.Stop()
		}
		if d.stack != nil {
			if err := d.stack.Close(); err != nil && !errors.Is(err, node.ErrNodeStopped) {
				d.closeErr = fmt.Errorf("evmdevnet: %w", err)
			}
		}
	})
	return d.closeErr
}

// warnOnly passes the node's warnings and errors on; its info and debug
// lines are too chatty for a gateway's log.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(a)} }
func (w warnOnly) WithGroup(n string) slog.Handler      { return warnOnly{w.Handler.WithGroup(n)} }

// listenAddr splits a Listen address; empty means 127.0.0.1:0.
func listenAddr(addr string) (string, int, error) {
	if addr == "" {
		return "127.0.0.1", 0, nil
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("evmdevnet: listen: %w", err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("evmdevnet: listen: bad port %q", p)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}
