package config

import (
	"fmt"
	"regexp"
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
	if n.VerifyQuorum < 0 || (len(n.Upstreams) > 0 && n.VerifyQuorum > len(n.Upstreams)) {
		return fmt.Errorf("config: %s.verify_quorum: want 0 (a majority) up to the %d upstreams, got %d", field, len(n.Upstreams), n.VerifyQuorum)
	}
	if n.VerifyCheckpoint != "" && !pattern.MatchString(n.VerifyCheckpoint) {
		return fmt.Errorf("config: %s.verify_checkpoint: want %s", field, want)
	}
	return nil
}
