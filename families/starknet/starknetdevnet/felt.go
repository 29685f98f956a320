package starknetdevnet

import (
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// Felt is a Starknet field element (starknettx.Felt, which parses,
// writes and hashes it).
type Felt = starknettx.Felt

// appendFeltJSON appends starknettx.Hex(f) as a JSON string.
func appendFeltJSON(dst []byte, f *Felt) []byte {
	dst = append(dst, `"0x`...)
	dst = append(dst, f.Text(16)...)
	return append(dst, '"')
}

// mustFelt parses a constant; it is only called with literals of this
// package, so a failure is a programming error caught by every test.
func mustFelt(s string) Felt {
	f, err := starknettx.ParseFelt(s)
	if err != nil {
		panic("starknetdevnet: bad felt constant " + s)
	}
	return f
}

// feltKey returns the 32-byte big-endian encoding of a felt, the form keys
// take in tries, maps and the database.
func feltKey(f *Felt) [32]byte { return f.Bytes() }

// feltFromKey is the inverse of feltKey.
func feltFromKey(b []byte) Felt {
	var f Felt
	f.SetBytes(b)
	return f
}
