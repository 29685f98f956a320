package config

import (
	"fmt"
	"regexp"
	"strconv"
)

var (
	hashPattern = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)
	feltPattern = regexp.MustCompile(`^0x[0-9a-fA-F]{1,64}$`)
)

// checkVerify checks a network's verify lines (docs/verify.md).
func checkVerify(field string, n *Network) error {
	switch n.Verify {
	case "", "off":
		return nil
	case "on", "strict":
	default:
		return fmt.Errorf("config: %s.verify: want off, on or strict, got %q", field, n.Verify)
	}
	pattern, want := hashPattern, "a block hash, 0x and 64 hex digits"
	switch n.Family {
	case "evm":
	case "starknet":
		pattern, want = feltPattern, "a block hash, 0x and 1 to 64 hex digits"
	case "solana":
		return fmt.Errorf("config: %s.verify: the slot chain's answers cannot be verified: its RPC gives no proofs (docs/verify.md)", field)
	default:
		return fmt.Errorf("config: %s.verify: the %s family's answers are not verified by the gateway (docs/verify.md); evm and starknet networks take verify: %s", field, n.Family, n.Verify)
	}
	// A quorum below a majority trusts the hash of the nodes that answer
	// while the others are slow or down: one lying node then has its
	// headers trusted. A network without upstreams has one node, its
	// embedded devnet.
	nodes := max(len(n.Upstreams), 1)
	if q := n.VerifyQuorum; q != 0 && (q < nodes/2+1 || q > nodes) {
		return fmt.Errorf("config: %s.verify_quorum: want 0 (a majority, the default) or %d to %d, a majority of the %d nodes at least, got %d: below a majority, the nodes that answer while the others are slow or down have their hash trusted",
			field, nodes/2+1, nodes, nodes, q)
	}
	if n.Family == "evm" && n.ChainID != "" {
		if _, err := strconv.ParseUint(n.ChainID, 0, 64); err != nil {
			return fmt.Errorf("config: %s.chain_id: verify needs an EVM chain id, a number such as \"0x1\" or \"1\", got %q", field, n.ChainID)
		}
	}
	if n.VerifyCheckpoint != "" && !pattern.MatchString(n.VerifyCheckpoint) {
		return fmt.Errorf("config: %s.verify_checkpoint: want %s", field, want)
	}
	return nil
}
