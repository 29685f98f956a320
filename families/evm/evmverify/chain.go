package evmverify

import (
	"math/big"

	"github.com/ethereum/go-ethereum/params"
)

// Chain is what the checks need to know of one network: its chain id
// (to recover senders) and its fork schedule (to derive receipt fields
// and to run the EVM). Make one per network with NewChain; it is
// immutable and safe for concurrent use.
type Chain struct {
	config *params.ChainConfig
}

// NewChain returns the checks for a network with the given config;
// ConfigFor picks one by chain id.
func NewChain(config *params.ChainConfig) *Chain {
	return &Chain{config: config}
}

// Config returns the network's chain config.
func (c *Chain) Config() *params.ChainConfig { return c.config }

// ConfigFor returns go-ethereum's config for the public networks it
// knows (mainnet 1, Sepolia 11155111, Hoodi 560048) and, for any other
// chain id, a development config with every fork up to Osaka active from
// genesis, which is what anvil and the embedded devnet run. A network
// with its own fork schedule (a custom genesis) should pass that
// genesis's config to NewChain instead.
func ConfigFor(chainID uint64) *params.ChainConfig {
	switch chainID {
	case 1:
		return params.MainnetChainConfig
	case 11155111:
		return params.SepoliaChainConfig
	case 560048:
		return params.HoodiChainConfig
	}
	c := *params.AllDevChainProtocolChanges
	c.ChainID = new(big.Int).SetUint64(chainID)
	// Forks past Osaka are not yet on any network anvil or the devnet
	// runs; leave them off so the EVM matches what nodes execute.
	c.AmsterdamTime, c.BogotaTime, c.UBTTime = nil, nil, nil
	return &c
}
