// Package starknettx is the rollup's (Starknet's) version 3 transaction as
// a wallet signs it and a node checks it: the transaction hash of the spec
// (Poseidon over the fields, with the fee fields and data-availability
// modes packed as Starknet packs them), the account address a standard
// account class gets for a public key, and the Stark-curve ECDSA signature
// and its check. One copy serves both sides: the wallet (package wallet)
// signs with it and the embedded rollup devnet (families/starknet/starknetdevnet)
// checks with it, so the two cannot drift apart; JavaScript's starknet.js
// is the third party the tests hold them to.
//
// The curve and its ECDSA are gnark-crypto's (ecc/stark-curve), Pedersen
// is gnark-crypto's pedersen-hash. Poseidon is this package's own, checked
// against the Cairo builtin's vectors and starknet.js: the Go libraries
// that carry Starknet's Poseidon (NethermindEth/juno, starknet.go) are not
// served by the module proxy this project builds from.
package starknettx

import (
	"errors"
	"math/big"
	"strings"

	"github.com/consensys/gnark-crypto/ecc/stark-curve/fp"
)

// Felt is a Starknet field element: an integer below the Stark prime
// 2^251 + 17·2^192 + 1.
type Felt = fp.Element

// ErrBadFelt is returned by ParseFelt; callers name the field.
var ErrBadFelt = errors.New("want a felt, 0x and 1 to 64 hex digits below the Stark prime")

// ParseFelt reads 0x-prefixed hex (either case, leading zeros allowed)
// below the prime.
func ParseFelt(s string) (Felt, error) {
	var f Felt
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return f, ErrBadFelt
	}
	h := s[2:]
	if len(h) == 0 || len(h) > 64 {
		return f, ErrBadFelt
	}
	n, ok := new(big.Int).SetString(h, 16)
	if !ok || n.Sign() < 0 || n.Cmp(fp.Modulus()) >= 0 {
		return f, ErrBadFelt
	}
	f.SetBigInt(n)
	return f, nil
}

// Hex renders a felt as the spec's FELT: 0x, lower-case hex, no leading
// zeros ("0x0" for zero).
func Hex(f *Felt) string { return "0x" + f.Text(16) }

// FeltU64 returns v as a felt.
func FeltU64(v uint64) Felt {
	var f Felt
	f.SetUint64(v)
	return f
}

// ShortString encodes an ASCII string of at most 31 bytes as a felt, the
// way Cairo short strings are: its bytes read as a big-endian integer.
func ShortString(s string) Felt {
	var f Felt
	f.SetBytes([]byte(s))
	return f
}

// feltBig returns f as a big integer.
func feltBig(f *Felt) *big.Int { return f.BigInt(new(big.Int)) }
