package starknetdevnet

import (
	"fmt"
	"strings"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// WSURL returns the JSON-RPC endpoint over WebSocket (the HTTP port), or
// "" before Start.
func (d *Devnet) WSURL() string {
	u := d.HTTPURL()
	if u == "" {
		return ""
	}
	return "ws" + strings.TrimPrefix(u, "http")
}

// Info says what the running devnet offers, for a ready line.
func (d *Devnet) Info() string {
	faucet := FaucetAddress()
	return fmt.Sprintf("embedded rollup devnet at %s, chain id %s, spec %s; faucet account %s, key 0x%s (a public test key, dev only: never use it elsewhere)",
		d.HTTPURL(), d.cfg.ChainID, SpecVersion, starknettx.Hex(&faucet), FaucetKey().Text(16))
}
