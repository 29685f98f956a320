package keynet

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/idtoken"
)

// Networks are the network names a client may ask for.
func Networks() []string {
	return []string{"mainnet", "testnet", "cyan", "aqua", "celeste", "sapphire_devnet", "sapphire_mainnet"}
}

// Threshold is the number of shares that rebuild a key among n nodes:
// ⌊n/2⌋+1.
func Threshold(n int) int { return n/2 + 1 }

// CommitmentQuorum is how many signed commitments a client waits for
// among n nodes: ⌊3n/4⌋+1.
func CommitmentQuorum(n int) int { return 3*n/4 + 1 }

// Peer is one node of a network as the others and clients know it.
type Peer struct {
	Index int    `json:"index"`
	URL   string `json:"url"`
	// PublicKey is the node's signing key, compressed or uncompressed hex.
	PublicKey string `json:"publicKey"`
}

// NetworkConfig is a network's node set.
type NetworkConfig struct {
	Name  string `json:"name"`
	Nodes []Peer `json:"nodes"`
}

// Threshold is the network's share threshold.
func (c NetworkConfig) Threshold() int { return Threshold(len(c.Nodes)) }

// Validate checks the node set: indexes 1..n once each, http(s) URLs,
// parseable keys.
func (c NetworkConfig) Validate() error {
	if c.Name == "" {
		return &ConfigError{Field: "network", Reason: "empty"}
	}
	if len(c.Nodes) == 0 {
		return &ConfigError{Field: "nodes", Reason: "empty"}
	}
	seen := map[int]bool{}
	for i, p := range c.Nodes {
		if p.Index < 1 || p.Index > len(c.Nodes) || seen[p.Index] {
			return &ConfigError{Field: fmt.Sprintf("nodes[%d].index", i), Reason: fmt.Sprintf("%d: indexes must be 1..%d, each once", p.Index, len(c.Nodes))}
		}
		seen[p.Index] = true
		if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &ConfigError{Field: fmt.Sprintf("nodes[%d].url", i), Reason: "not an http(s) URL"}
		}
		if _, err := eccrypto.ParsePublicKeyHex(p.PublicKey); err != nil {
			return &ConfigError{Field: fmt.Sprintf("nodes[%d].publicKey", i), Reason: err.Error()}
		}
	}
	return nil
}

// peer returns the node with that index.
func (c NetworkConfig) peer(index int) (Peer, bool) {
	i := slices.IndexFunc(c.Nodes, func(p Peer) bool { return p.Index == index })
	if i < 0 {
		return Peer{}, false
	}
	return c.Nodes[i], true
}

// NodeConfig is everything one node needs; it can run in-process or as
// `portico auth node`.
type NodeConfig struct {
	// Network is the node's network and all its nodes, this one included.
	Network NetworkConfig `json:"network"`
	// Index is this node's index in Network.Nodes.
	Index int `json:"index"`
	// SigningKey is the node's private key (hex): it signs commitments and
	// deals and decrypts deals sent to it. Its public key must be this
	// node's Peer.PublicKey.
	SigningKey string `json:"signingKey"`
	// Verifiers are the id token verifiers this node trusts.
	Verifiers []idtoken.Config `json:"verifiers"`
	// CommitmentTTL is how old a signed commitment may be; 5 min if zero.
	CommitmentTTL time.Duration `json:"commitmentTTL,omitempty"`
	// DKGTimeout bounds one key assignment; 30 s if zero.
	DKGTimeout time.Duration `json:"dkgTimeout,omitempty"`
	// TokenMemory is how long a served token is remembered (refused if
	// presented again); 24 h if zero. It should exceed token lifetimes.
	TokenMemory time.Duration `json:"tokenMemory,omitempty"`
}

// ConfigError names a bad configuration field.
type ConfigError struct {
	Field  string
	Reason string
}

// Error names the field.
func (e *ConfigError) Error() string { return "keynet: " + e.Field + ": " + e.Reason }

func (c *NodeConfig) withDefaults() {
	if c.CommitmentTTL == 0 {
		c.CommitmentTTL = 5 * time.Minute
	}
	if c.DKGTimeout == 0 {
		c.DKGTimeout = 30 * time.Second
	}
	if c.TokenMemory == 0 {
		c.TokenMemory = 24 * time.Hour
	}
}

// Validate checks the node's config and returns its signing key.
func (c *NodeConfig) validate() (*secp256k1.PrivateKey, error) {
	if err := c.Network.Validate(); err != nil {
		return nil, err
	}
	self, ok := c.Network.peer(c.Index)
	if !ok {
		return nil, &ConfigError{Field: "index", Reason: fmt.Sprintf("%d is not a node of network %s", c.Index, c.Network.Name)}
	}
	key, err := eccrypto.ParsePrivateKeyHex(c.SigningKey)
	if err != nil {
		return nil, &ConfigError{Field: "signingKey", Reason: "not a secp256k1 private key"}
	}
	pub, _ := eccrypto.ParsePublicKeyHex(self.PublicKey)
	if !pub.IsEqual(key.PubKey()) {
		return nil, &ConfigError{Field: "signingKey", Reason: "does not match this node's public key in network.nodes"}
	}
	if c.CommitmentTTL < 0 || c.DKGTimeout < 0 || c.TokenMemory < 0 {
		return nil, &ConfigError{Field: "commitmentTTL", Reason: "durations must not be negative"}
	}
	return key, nil
}
