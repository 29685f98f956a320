package solanadevnet

import (
	"fmt"
	"strings"
)

// WSURL returns the JSON-RPC endpoint over WebSocket (the HTTP port), or
// "" before Start.
func (d *Devnet) WSURL() string {
	if d.url == "" {
		return ""
	}
	return "ws" + strings.TrimPrefix(d.url, "http")
}

// Info says what the running devnet offers, for a ready line.
func (d *Devnet) Info() string {
	return fmt.Sprintf("embedded slot-chain devnet at %s, faucet %s (requestAirdrop funds any account)", d.url, d.keys.faucet.PublicKey())
}
