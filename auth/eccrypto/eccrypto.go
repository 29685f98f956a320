// Package eccrypto implements the two secp256k1 primitives the auth
// session protocol is built on, in the byte formats the mobile SDKs and the
// JavaScript session manager use on the wire:
//
//   - ECIES in the format of the JavaScript eccrypto library: an ephemeral
//     key, ECDH (x coordinate), SHA-512 as the KDF (first half the AES key,
//     second half the MAC key), AES-256-CBC with PKCS#7 padding, and
//     HMAC-SHA256 over iv ‖ ephemeral public key ‖ ciphertext. Decrypt
//     checks the MAC before anything else; it accepts the x coordinate
//     hashed padded to 32 bytes (what Encrypt writes) or without its
//     leading zero bytes (what the JavaScript library's encrypt writes).
//   - ECDSA signatures over the legacy Keccak-256 digest of a message
//     (RFC 6979 nonces, low S), carried as JSON {"r": hex, "s": hex}.
package eccrypto

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Errors returned by Decrypt and the parsers.
var (
	// ErrMACMismatch means the ciphertext was not made for this key or was
	// altered; nothing was decrypted.
	ErrMACMismatch = errors.New("eccrypto: MAC mismatch")
	// ErrBadPadding means the decrypted block did not end in valid PKCS#7
	// padding (only possible after a good MAC, so the sender is broken).
	ErrBadPadding = errors.New("eccrypto: bad PKCS#7 padding")
)

// FieldError reports a malformed field of an encrypted message, a
// signature or a key.
type FieldError struct {
	// Field is the JSON name of the field ("iv", "ephemPublicKey",
	// "ciphertext", "mac", "r", "s") or "privateKey"/"publicKey".
	Field string
	// Err is the cause.
	Err error
}

// Error names the field.
func (e *FieldError) Error() string { return "eccrypto: " + e.Field + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// Encrypted is one ECIES message. Its JSON form is the eccrypto one: an
// object of lower-case hex strings.
type Encrypted struct {
	// IV is the 16-byte AES-CBC initialisation vector.
	IV []byte
	// EphemPublicKey is the sender's one-time public key, 65 bytes
	// uncompressed.
	EphemPublicKey []byte
	// Ciphertext is the AES-256-CBC output, a multiple of 16 bytes.
	Ciphertext []byte
	// MAC is HMAC-SHA256 over IV ‖ EphemPublicKey ‖ Ciphertext.
	MAC []byte
}

type encryptedJSON struct {
	IV             string `json:"iv"`
	EphemPublicKey string `json:"ephemPublicKey"`
	Ciphertext     string `json:"ciphertext"`
	MAC            string `json:"mac"`
}

// MarshalJSON writes {"iv","ephemPublicKey","ciphertext","mac"} as hex.
func (e Encrypted) MarshalJSON() ([]byte, error) {
	return json.Marshal(encryptedJSON{
		IV:             hex.EncodeToString(e.IV),
		EphemPublicKey: hex.EncodeToString(e.EphemPublicKey),
		Ciphertext:     hex.EncodeToString(e.Ciphertext),
		MAC:            hex.EncodeToString(e.MAC),
	})
}

// UnmarshalJSON reads the hex object; every field is required.
func (e *Encrypted) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var out Encrypted
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"iv", &out.IV}, {"ephemPublicKey", &out.EphemPublicKey}, {"ciphertext", &out.Ciphertext}, {"mac", &out.MAC}} {
		v, ok := raw[f.name]
		if !ok {
			return &FieldError{Field: f.name, Err: errors.New("missing")}
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return &FieldError{Field: f.name, Err: errors.New("not a string")}
		}
		d, err := decodeHex(s)
		if err != nil {
			return &FieldError{Field: f.name, Err: err}
		}
		*f.dst = d
	}
	*e = out
	return nil
}

// ParseEncrypted decodes the JSON string form the session server stores.
func ParseEncrypted(s string) (*Encrypted, error) {
	var e Encrypted
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// String returns the JSON form, the string the session server stores and
// the one that is signed.
func (e *Encrypted) String() string {
	b, _ := e.MarshalJSON() // cannot fail: only strings
	return string(b)
}

func decodeHex(s string) ([]byte, error) {
	s = strings.TrimPrefix(s, "0x")
	if len(s)%2 == 1 {
		s = "0" + s
	}
	d, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("not hex")
	}
	return d, nil
}

// Encrypt encrypts plaintext to pub with a fresh ephemeral key and IV.
func Encrypt(pub *secp256k1.PublicKey, plaintext []byte) (*Encrypted, error) {
	return encrypt(rand.Reader, pub, plaintext)
}

func encrypt(r io.Reader, pub *secp256k1.PublicKey, plaintext []byte) (*Encrypted, error) {
	if pub == nil {
		return nil, &FieldError{Field: "publicKey", Err: errors.New("missing")}
	}
	var seed [32]byte
	var ephem *secp256k1.PrivateKey
	for ephem == nil {
		if _, err := io.ReadFull(r, seed[:]); err != nil {
			return nil, fmt.Errorf("eccrypto: random: %w", err)
		}
		ephem, _ = PrivateKeyFromBytes(seed[:])
	}
	defer ephem.Zero()
	iv := make([]byte, aes.BlockSize)
	if _, err := io.ReadFull(r, iv); err != nil {
		return nil, fmt.Errorf("eccrypto: random: %w", err)
	}
	encKey, macKey := kdf(ephem, pub)
	block, _ := aes.NewCipher(encKey) // 32-byte key: cannot fail
	pad := aes.BlockSize - len(plaintext)%aes.BlockSize
	ct := make([]byte, len(plaintext)+pad)
	copy(ct, plaintext)
	for i := len(plaintext); i < len(ct); i++ {
		ct[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, ct)
	e := &Encrypted{IV: iv, EphemPublicKey: ephem.PubKey().SerializeUncompressed(), Ciphertext: ct}
	e.MAC = mac(macKey, e)
	return e, nil
}

// Decrypt checks the MAC, then decrypts. Any failure returns no plaintext.
func Decrypt(priv *secp256k1.PrivateKey, e *Encrypted) ([]byte, error) {
	if priv == nil {
		return nil, &FieldError{Field: "privateKey", Err: errors.New("missing")}
	}
	if e == nil {
		return nil, &FieldError{Field: "ciphertext", Err: errors.New("missing")}
	}
	if len(e.IV) != aes.BlockSize {
		return nil, &FieldError{Field: "iv", Err: fmt.Errorf("%d bytes, want %d", len(e.IV), aes.BlockSize)}
	}
	if len(e.Ciphertext) == 0 || len(e.Ciphertext)%aes.BlockSize != 0 {
		return nil, &FieldError{Field: "ciphertext", Err: fmt.Errorf("%d bytes, not a positive multiple of %d", len(e.Ciphertext), aes.BlockSize)}
	}
	if len(e.MAC) != sha256.Size {
		return nil, &FieldError{Field: "mac", Err: fmt.Errorf("%d bytes, want %d", len(e.MAC), sha256.Size)}
	}
	ephem, err := secp256k1.ParsePubKey(e.EphemPublicKey)
	if err != nil {
		return nil, &FieldError{Field: "ephemPublicKey", Err: err}
	}
	shared := secp256k1.GenerateSharedSecret(priv, ephem)
	encKey, macKey := kdfFrom(shared)
	if !hmac.Equal(mac(macKey, e), e.MAC) {
		// The JavaScript eccrypto's encrypt hashes the x coordinate
		// without its leading zero bytes (its decrypt retries padded):
		// about 1 in 256 of its messages only open this way.
		unpadded := bytes.TrimLeft(shared, "\x00")
		if len(unpadded) == len(shared) {
			return nil, ErrMACMismatch
		}
		if encKey, macKey = kdfFrom(unpadded); !hmac.Equal(mac(macKey, e), e.MAC) {
			return nil, ErrMACMismatch
		}
	}
	block, _ := aes.NewCipher(encKey)
	pt := make([]byte, len(e.Ciphertext))
	cipher.NewCBCDecrypter(block, e.IV).CryptBlocks(pt, e.Ciphertext)
	pad := int(pt[len(pt)-1])
	if pad == 0 || pad > aes.BlockSize || !bytes.Equal(pt[len(pt)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, ErrBadPadding
	}
	return pt[:len(pt)-pad], nil
}

// kdf derives the AES and MAC keys from the ECDH x coordinate, always 32
// bytes, left-padded: the form the Swift SDK and the JavaScript eccrypto's
// decrypt accept.
func kdf(priv *secp256k1.PrivateKey, pub *secp256k1.PublicKey) (encKey, macKey []byte) {
	return kdfFrom(secp256k1.GenerateSharedSecret(priv, pub))
}

// kdfFrom hashes a shared secret into the AES and MAC keys.
func kdfFrom(shared []byte) (encKey, macKey []byte) {
	h := sha512.Sum512(shared)
	return h[:32], h[32:]
}

func mac(key []byte, e *Encrypted) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(e.IV)
	m.Write(e.EphemPublicKey)
	m.Write(e.Ciphertext)
	return m.Sum(nil)
}
