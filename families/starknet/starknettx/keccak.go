package starknettx

import "golang.org/x/crypto/sha3"

// snKeccak is starknet_keccak: Keccak-256 with the top 6 bits cleared, so
// it fits in 250 bits.
func snKeccak(b []byte) Felt {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	sum := h.Sum(nil)
	sum[0] &= 0x03
	var f Felt
	f.SetBytes(sum)
	return f
}
