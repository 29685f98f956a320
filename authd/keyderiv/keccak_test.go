package keyderiv_test

import "golang.org/x/crypto/sha3"

func keccak(b []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	return h.Sum(nil)
}
