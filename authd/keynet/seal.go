package keynet

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// sealedPrefix marks a share stored encrypted: "enc1:" and the hex of
// nonce ‖ AES-256-GCM ciphertext. A share without it is a plaintext share
// written before shares were sealed; a node seals those at start.
const sealedPrefix = "enc1:"

// Sealer encrypts a node's shares at rest under a key of the node's own,
// derived from its signing key (HKDF-SHA256), so a copy of the node's
// database alone gives no share. The row's network, node index, verifier
// and verifier id are the associated data: a sealed share moved to
// another row does not open.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer derives a node's sealing key from its signing key.
func NewSealer(nodeKey *secp256k1.PrivateKey) (*Sealer, error) {
	secret := nodeKey.Serialize()
	defer clear(secret)
	key, err := hkdf.Key(sha256.New, secret, nil, "portico keynet shares at rest v1", 32)
	if err != nil {
		return nil, err
	}
	defer clear(key)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

func shareAD(network string, node int, verifier, verifierID string) []byte {
	return fmt.Appendf(nil, "%s\x1c%d\x1c%s\x1c%s", network, node, verifier, verifierID)
}

// seal encrypts a share for its row.
func (s *Sealer) seal(share *[32]byte, ad []byte) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return sealedPrefix + hex.EncodeToString(s.aead.Seal(nonce, nonce, share[:], ad))
}

// ErrSealed: a share is sealed and this store has no sealer, or another
// node's (or the row was moved).
var ErrSealed = errors.New("keynet: stored share does not open with this node's key")

// open decrypts a stored share (sealed or, from before sealing, plain).
func (s *Sealer) open(stored string, ad []byte, out *[32]byte) error {
	if !strings.HasPrefix(stored, sealedPrefix) {
		return decodeShare(stored, out)
	}
	b, err := hex.DecodeString(strings.TrimPrefix(stored, sealedPrefix))
	if s == nil || err != nil || len(b) < s.aead.NonceSize() {
		return ErrSealed
	}
	pt, err := s.aead.Open(nil, b[:s.aead.NonceSize()], b[s.aead.NonceSize():], ad)
	if err != nil || len(pt) != 32 {
		return ErrSealed
	}
	copy(out[:], pt)
	clear(pt)
	return nil
}
