// Package families registers the chain families Portico serves. A family
// is a folder of its own, families/<name>: its method table (the package
// of that folder), its embedded devnet (a package under it) behind the
// Devnet interface, and its verifier (a package under it) behind
// network/verify's Verifier; All lists them, and everything else (config
// checks, portico serve, portico devnet, the ready lines) reads this list
// and calls the family's hooks, never its name. Adding a family is its
// folder and one entry here (docs/architecture.md, "Adding a family").
package families

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/families/evm/evmdevnet"
	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/families/solana"
	"github.com/porticohq/portico/families/solana/solanadevnet"
	"github.com/porticohq/portico/families/starknet"
	"github.com/porticohq/portico/families/starknet/starknetdevnet"
	"github.com/porticohq/portico/families/starknet/starkverify"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// Family is everything Portico knows about one chain family.
type Family struct {
	// Name is the family's name in config ("evm").
	Name portico.Family
	// Network is the name of the family's built-in network, served when a
	// config names no networks ("evm-devnet").
	Network string
	// Probe is a harmless method of the family, for the curl of a ready
	// line.
	Probe string
	// Table returns the family's method table. embedded says that the
	// network is served by the family's own devnet, which may serve more
	// than real nodes do.
	Table func(embedded bool) portico.Table
	// NewDevnet builds the family's embedded devnet; it starts nothing.
	NewDevnet func(DevnetConfig) (Devnet, error)
	// Subscriber opens subscriptions on a started devnet of the family,
	// with a close function; nil means over its own WebSocket endpoint.
	Subscriber func(d Devnet) (upstream.Subscriber, func())
	// Verifier builds the family's verifier for a network with verify:
	// on or strict (docs/verify.md); nil when the family's answers cannot
	// be verified, for the reason NoVerify gives.
	Verifier verify.New
	// NoVerify says why a family without a Verifier cannot verify, as
	// the config check tells it.
	NoVerify string
	// Verify is what the family's verifier takes of a network's verify
	// lines.
	Verify VerifyRules
	// Webhooks is the family's part of webhooks (issue 38); nil when the
	// family has none yet.
	Webhooks portico.Webhooks
}

// VerifyRules are what a family's verifier takes of a network's config.
type VerifyRules struct {
	// Checkpoint is the form of a verify_checkpoint, and CheckpointWant
	// what the config check asks for when it does not match.
	Checkpoint     *regexp.Regexp
	CheckpointWant string
	// ChainID reads a network's chain_id into the chain id the verifier's
	// rules need; nil when the verifier takes none.
	ChainID func(chainID string) (uint64, error)
}

// CheckVerify checks a network's verify lines against what the family's
// verifier takes (config checks the rest); field names the network, as
// "config: networks[0]".
func (f Family) CheckVerify(field string, n *config.Network) error {
	if n.Verify == "" || n.Verify == "off" {
		return nil
	}
	if f.Verifier == nil {
		return fmt.Errorf("%s.verify: %s", field, f.NoVerify)
	}
	if _, err := f.VerifyChainID(n.ChainID); err != nil {
		return fmt.Errorf("%s.chain_id: %v", field, err)
	}
	if n.VerifyCheckpoint != "" && f.Verify.Checkpoint != nil && !f.Verify.Checkpoint.MatchString(n.VerifyCheckpoint) {
		return fmt.Errorf("%s.verify_checkpoint: want %s", field, f.Verify.CheckpointWant)
	}
	return nil
}

// VerifyChainID is the chain id a network's chain_id gives the family's
// verifier: 0 (the one a quorum of nodes reports) when it is empty or
// the verifier takes none.
func (f Family) VerifyChainID(chainID string) (uint64, error) {
	if chainID == "" || f.Verify.ChainID == nil {
		return 0, nil
	}
	return f.Verify.ChainID(chainID)
}

// Devnet is an embedded node of a family: built by Family.NewDevnet,
// serving from Start until Close.
type Devnet interface {
	// Start starts the node; ctx bounds the start only.
	Start(ctx context.Context) error
	// Handler is the node's JSON-RPC handler, for a gateway in the same
	// process; nil before Start.
	Handler() http.Handler
	// HTTPURL and WSURL are where the node listens on its own.
	HTTPURL() string
	WSURL() string
	// Info says what the running node offers (its endpoint, faucet, dev
	// accounts, chain id), for a ready line; it may span lines.
	Info() string
	// Close stops the node and waits for its goroutines.
	Close() error
}

// DevnetConfig configures an embedded devnet. Zero fields keep the
// family's defaults.
type DevnetConfig struct {
	// Listen is the devnet's own listener; empty means 127.0.0.1:0.
	Listen string
	// DataDir keeps the chain across restarts; empty starts fresh.
	DataDir string
	// BlockPeriod is the time between blocks (slots on the slot chain).
	// Negative seals blocks only on request, where the family supports it.
	BlockPeriod time.Duration
	// Traffic makes the devnet send transactions of every kind.
	Traffic bool
	// Accounts is the number of prefunded dev accounts (evm only).
	Accounts int
	// KeepSlots is how many recent slots the ledger keeps (solana only).
	KeepSlots uint64
	// GenesisFile and ChainRLP start the chain from a genesis and import
	// blocks (evm only).
	GenesisFile, ChainRLP string
	// Logger receives the devnet's warnings and errors.
	Logger *slog.Logger
}

// only refuses the fields of DevnetConfig that family f has no use for,
// so that a setting is never silently ignored.
func (c DevnetConfig) only(f portico.Family, accounts, keepSlots, genesis bool) error {
	var bad []string
	if c.Accounts != 0 && !accounts {
		bad = append(bad, "accounts")
	}
	if c.KeepSlots != 0 && !keepSlots {
		bad = append(bad, "keep_slots")
	}
	if (c.GenesisFile != "" || c.ChainRLP != "") && !genesis {
		bad = append(bad, "genesis/chain_rlp")
	}
	if len(bad) > 0 {
		return fmt.Errorf("the %s devnet has no setting %s", f, strings.Join(bad, ", "))
	}
	return nil
}

// All returns the registered families in a stable order: the order of the
// built-in networks and of the ready lines.
func All() []Family {
	return []Family{
		{
			Name:     solana.Family,
			Network:  "solana-devnet",
			Probe:    "getSlot",
			NoVerify: "the slot chain's answers cannot be verified: its RPC gives no proofs (docs/verify.md)",
			// The devnet serves processed blocks, as the seed describes
			// them; agave does not.
			Table: func(embedded bool) portico.Table {
				return solana.TableFor(solana.Options{NodeServesProcessed: embedded})
			},
			NewDevnet: func(c DevnetConfig) (Devnet, error) {
				if err := c.only(solana.Family, false, true, false); err != nil {
					return nil, err
				}
				return devnet(solanadevnet.New(solanadevnet.Config{Listen: c.Listen, DataDir: c.DataDir,
					SlotPeriod: c.BlockPeriod, KeepSlots: c.KeepSlots, Traffic: c.Traffic, Logger: c.Logger}))
			},
		},
		{
			Name:     evm.Family,
			Network:  "evm-devnet",
			Probe:    "eth_blockNumber",
			Table:    func(bool) portico.Table { return evm.Table() },
			Verifier: evmverify.NewVerifier,
			Webhooks: evm.Webhooks{},
			Verify: VerifyRules{Checkpoint: regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`), CheckpointWant: "a block hash, 0x and 64 hex digits",
				ChainID: func(s string) (uint64, error) {
					id, err := strconv.ParseUint(s, 0, 64)
					if err != nil {
						return 0, fmt.Errorf("verify needs an EVM chain id, a number such as \"0x1\" or \"1\", got %q", s)
					}
					return id, nil
				}},
			// go-ethereum's own subscriptions, in-process.
			Subscriber: func(d Devnet) (upstream.Subscriber, func()) {
				c := d.(*evmdevnet.Devnet).Dial()
				return &upstream.RPCSubscriber{Sub: func(ctx context.Context, ns string, ch any, args ...any) (upstream.ClientSubscription, error) {
					return c.Subscribe(ctx, ns, ch, args...)
				}}, c.Close
			},
			NewDevnet: func(c DevnetConfig) (Devnet, error) {
				if err := c.only(evm.Family, true, false, true); err != nil {
					return nil, err
				}
				return devnet(evmdevnet.New(evmdevnet.Config{Listen: c.Listen, DataDir: c.DataDir,
					BlockPeriod: c.BlockPeriod, Accounts: c.Accounts, Traffic: c.Traffic,
					GenesisFile: c.GenesisFile, ChainRLP: c.ChainRLP, Logger: c.Logger}))
			},
		},
		{
			Name:     starknet.Family,
			Network:  "starknet-devnet",
			Probe:    "starknet_blockNumber",
			Table:    func(bool) portico.Table { return starknet.Table() },
			Verifier: starkverify.New,
			Verify:   VerifyRules{Checkpoint: regexp.MustCompile(`^0x[0-9a-fA-F]{1,64}$`), CheckpointWant: "a block hash, 0x and 1 to 64 hex digits"},
			NewDevnet: func(c DevnetConfig) (Devnet, error) {
				if err := c.only(starknet.Family, false, false, false); err != nil {
					return nil, err
				}
				// Traffic needs blocks sealed on a period.
				return devnet(starknetdevnet.New(starknetdevnet.Config{Listen: c.Listen, DataDir: c.DataDir,
					BlockPeriod: c.BlockPeriod, Traffic: c.Traffic && c.BlockPeriod >= 0, Logger: c.Logger}))
			},
		},
	}
}

// devnet turns a devnet package's New into a Devnet, keeping a nil
// pointer from becoming a non-nil interface.
func devnet[D Devnet](d D, err error) (Devnet, error) {
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Names returns the registered family names, in order.
func Names() []portico.Family {
	var out []portico.Family
	for _, f := range All() {
		out = append(out, f.Name)
	}
	return out
}

// ErrUnknown is returned by Get for a name no family is registered under.
var ErrUnknown = errors.New("unknown family")

// Get returns the family registered under name.
func Get(name portico.Family) (Family, error) {
	for _, f := range All() {
		if f.Name == name {
			return f, nil
		}
	}
	names := make([]string, 0, 3)
	for _, n := range Names() {
		names = append(names, string(n))
	}
	return Family{}, fmt.Errorf("%w %q: not one of %s", ErrUnknown, name, strings.Join(names, ", "))
}
