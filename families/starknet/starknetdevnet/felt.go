package starknetdevnet

import (
	"errors"
	"math/big"
	"strings"

	"github.com/consensys/gnark-crypto/ecc/stark-curve/fp"
	"github.com/ethereum/go-ethereum/crypto"
)

// Felt is a Starknet field element: an integer below the Stark prime
// 2^251 + 17·2^192 + 1.
type Felt = fp.Element

// errBadFelt is returned by parseFelt; callers name the field.
var errBadFelt = errors.New("want a felt, 0x and 1 to 64 hex digits below the Stark prime")

// feltHex renders a felt as the spec's FELT: 0x, lower-case hex, no leading
// zeros ("0x0" for zero).
func feltHex(f *Felt) string {
	return "0x" + f.Text(16)
}

// appendFeltHex appends feltHex(f) as a JSON string.
func appendFeltJSON(dst []byte, f *Felt) []byte {
	dst = append(dst, `"0x`...)
	dst = append(dst, f.Text(16)...)
	return append(dst, '"')
}

// parseFelt reads 0x-prefixed hex (either case, leading zeros allowed) below
// the prime.
func parseFelt(s string) (Felt, error) {
	var f Felt
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return f, errBadFelt
	}
	h := s[2:]
	if len(h) == 0 || len(h) > 64 {
		return f, errBadFelt
	}
	n, ok := new(big.Int).SetString(h, 16)
	if !ok || n.Cmp(fp.Modulus()) >= 0 {
		return f, errBadFelt
	}
	f.SetBigInt(n)
	return f, nil
}

// mustFelt parses a constant; it is only called with literals of this
// package, so a failure is a programming error caught by every test.
func mustFelt(s string) Felt {
	f, err := parseFelt(s)
	if err != nil {
		panic("starknetdevnet: bad felt constant " + s)
	}
	return f
}

// feltU64 returns v as a felt.
func feltU64(v uint64) Felt {
	var f Felt
	f.SetUint64(v)
	return f
}

// shortString encodes an ASCII string of at most 31 bytes as a felt, the
// way Cairo short strings are: its bytes read as a big-endian integer.
func shortString(s string) Felt {
	var f Felt
	f.SetBytes([]byte(s))
	return f
}

// snKeccak is starknet_keccak: Keccak-256 with the top 6 bits cleared, so
// it fits in 250 bits. Selectors of functions and events are snKeccak of
// their names.
func snKeccak(b []byte) Felt {
	sum := crypto.Keccak256(b)
	sum[0] &= 0x03
	var f Felt
	f.SetBytes(sum)
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
