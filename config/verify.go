package config

import "fmt"

// checkVerify checks a network's verify lines that need no family
// (docs/verify.md): the mode's spelling and the quorum. What a family's
// verifier takes (whether there is one, the checkpoint's form, the chain
// id) is its family's check (families.Family.CheckVerify).
func checkVerify(field string, n *Network) error {
	switch n.Verify {
	case "", "off":
		return nil
	case "on", "strict":
	default:
		return fmt.Errorf("config: %s.verify: want off, on or strict, got %q", field, n.Verify)
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
	return nil
}
