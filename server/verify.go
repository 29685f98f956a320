package server

import (
	"fmt"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/network"
)

// verifyConfig reads a network's verify lines (checked by config) into
// what the network runs with.
func verifyConfig(n *config.Network) (network.VerifyConfig, error) {
	mode, err := network.ParseVerifyMode(n.Verify)
	if err != nil {
		return network.VerifyConfig{}, fmt.Errorf("network %s: verify: %w", n.Name, err)
	}
	fam, _ := families.Get(n.Family) // checked by checkConfig
	cfg := network.VerifyConfig{Verifier: fam.Verifier, Mode: mode, Quorum: n.VerifyQuorum, Checkpoint: n.VerifyCheckpoint}
	if mode != network.VerifyOff && n.ChainID != "" {
		if cfg.ChainID, err = fam.VerifyChainID(n.ChainID); err != nil {
			return network.VerifyConfig{}, fmt.Errorf("network %s: chain_id %q: verify needs an EVM chain id", n.Name, n.ChainID)
		}
	}
	return cfg, nil
}

// verifyCallCost is what each node call of a verification costs on a
// network (docs/metering.md): its default_cost, what a read the method
// table gives no figure of its own costs (the table's default, 80 on the
// EVM, unless the config sets one).
func verifyCallCost(t portico.Table, n *config.Network) int {
	if n.DefaultCost > 0 {
		return n.DefaultCost
	}
	return t.DefaultCost
}
