package config

import (
	"fmt"
	"regexp"
)

var hashPattern = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// checkVerify checks a network's verify lines (docs/verify.md).
func checkVerify(field string, n *Network) error {
	switch n.Verify {
	case "", "off":
		return nil
	case "on", "strict":
	default:
		return fmt.Errorf("config: %s.verify: want off, on or strict, got %q", field, n.Verify)
	}
	switch n.Family {
	case "evm":
	case "solana":
		return fmt.Errorf("config: %s.verify: the slot chain's answers cannot be verified: its RPC gives no proofs (docs/verify.md)", field)
	default:
		return fmt.Errorf("config: %s.verify: the %s family's answers are not verified by the gateway (docs/verify.md); only evm networks take verify: %s", field, n.Family, n.Verify)
	}
	if n.VerifyQuorum < 0 || (len(n.Upstreams) > 0 && n.VerifyQuorum > len(n.Upstreams)) {
		return fmt.Errorf("config: %s.verify_quorum: want 0 (a majority) up to the %d upstreams, got %d", field, len(n.Upstreams), n.VerifyQuorum)
	}
	if n.VerifyCheckpoint != "" && !hashPattern.MatchString(n.VerifyCheckpoint) {
		return fmt.Errorf("config: %s.verify_checkpoint: want a block hash, 0x and 64 hex digits", field)
	}
	return nil
}
