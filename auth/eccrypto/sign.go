package eccrypto

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/sha3"
)

// Keccak256 returns the legacy (pre-NIST) Keccak-256 digest of msg, the
// hash Ethereum and the session protocol use.
func Keccak256(msg []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(msg)
	return h.Sum(nil)
}

// Signature is an ECDSA secp256k1 signature. Its JSON form is
// {"r": 64 hex, "s": 64 hex}.
type Signature struct {
	// R and S are the big-endian signature scalars.
	R, S [32]byte
}

type signatureJSON struct {
	R string `json:"r"`
	S string `json:"s"`
}

// MarshalJSON writes {"r","s"} as zero-padded lower-case hex.
func (s Signature) MarshalJSON() ([]byte, error) {
	return json.Marshal(signatureJSON{R: hex.EncodeToString(s.R[:]), S: hex.EncodeToString(s.S[:])})
}

// UnmarshalJSON reads {"r","s"}; shorter hex (leading zeros dropped) is
// accepted.
func (s *Signature) UnmarshalJSON(b []byte) error {
	var raw signatureJSON
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var out Signature
	for _, f := range []struct {
		name, val string
		dst       *[32]byte
	}{{"r", raw.R, &out.R}, {"s", raw.S, &out.S}} {
		if f.val == "" {
			return &FieldError{Field: f.name, Err: errors.New("missing")}
		}
		d, err := decodeHex(f.val)
		if err != nil {
			return &FieldError{Field: f.name, Err: err}
		}
		if len(d) > 32 {
			return &FieldError{Field: f.name, Err: fmt.Errorf("%d bytes, at most 32", len(d))}
		}
		copy(f.dst[32-len(d):], d)
	}
	*s = out
	return nil
}

// String returns the JSON form.
func (s Signature) String() string {
	b, _ := s.MarshalJSON()
	return string(b)
}

// Sign signs keccak256(msg) with priv (RFC 6979 deterministic nonce, low S).
func Sign(priv *secp256k1.PrivateKey, msg []byte) Signature {
	compact := ecdsa.SignCompact(priv, Keccak256(msg), false)
	var s Signature
	copy(s.R[:], compact[1:33])
	copy(s.S[:], compact[33:65])
	return s
}

// Verify reports whether sig is pub's signature over keccak256(msg).
func Verify(pub *secp256k1.PublicKey, msg []byte, sig Signature) bool {
	if pub == nil {
		return false
	}
	var r, s secp256k1.ModNScalar
	if r.SetBytes(&sig.R) != 0 || s.SetBytes(&sig.S) != 0 || r.IsZero() || s.IsZero() {
		return false
	}
	return ecdsa.NewSignature(&r, &s).Verify(Keccak256(msg), pub)
}

// PrivateKeyFromBytes parses a 32-byte big-endian scalar, rejecting zero
// and values not below the group order (which secp256k1.PrivKeyFromBytes
// would silently reduce).
func PrivateKeyFromBytes(b []byte) (*secp256k1.PrivateKey, error) {
	if len(b) != 32 {
		return nil, &FieldError{Field: "privateKey", Err: fmt.Errorf("%d bytes, want 32", len(b))}
	}
	var k secp256k1.ModNScalar
	if k.SetByteSlice(b) || k.IsZero() {
		return nil, &FieldError{Field: "privateKey", Err: errors.New("out of range")}
	}
	return secp256k1.NewPrivateKey(&k), nil
}

// ParsePrivateKeyHex parses a private key written as hex (64 chars, or
// fewer when leading zeros were dropped; an 0x prefix is allowed).
func ParsePrivateKeyHex(s string) (*secp256k1.PrivateKey, error) {
	s = strings.TrimPrefix(s, "0x")
	if len(s) == 0 || len(s) > 64 {
		return nil, &FieldError{Field: "privateKey", Err: errors.New("want 1 to 64 hex characters")}
	}
	d, err := hex.DecodeString(strings.Repeat("0", 64-len(s)) + s)
	if err != nil {
		return nil, &FieldError{Field: "privateKey", Err: errors.New("not hex")}
	}
	return PrivateKeyFromBytes(d)
}

// PrivateKeyHex writes priv as 64 lower-case hex characters.
func PrivateKeyHex(priv *secp256k1.PrivateKey) string {
	return hex.EncodeToString(priv.Serialize())
}

// PublicKeyHex writes pub uncompressed (65 bytes, 130 hex characters
// starting "04"), the session server's record key.
func PublicKeyHex(pub *secp256k1.PublicKey) string {
	return hex.EncodeToString(pub.SerializeUncompressed())
}

// ParsePublicKeyHex parses a hex public key (compressed or uncompressed).
func ParsePublicKeyHex(s string) (*secp256k1.PublicKey, error) {
	d, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		return nil, &FieldError{Field: "publicKey", Err: errors.New("not hex")}
	}
	pub, err := secp256k1.ParsePubKey(d)
	if err != nil {
		return nil, &FieldError{Field: "publicKey", Err: err}
	}
	return pub, nil
}

// GenerateKey returns a fresh random private key.
func GenerateKey() (*secp256k1.PrivateKey, error) {
	k, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("eccrypto: generate key: %w", err)
	}
	return k, nil
}

// ParseSignature reads a signature in either form the session protocol's
// clients send: the JSON string {"r","s"} (the Swift session manager) or
// a DER signature in hex, with or without 0x (the JavaScript session
// managers, through the JavaScript eccrypto's sign).
func ParseSignature(s string) (Signature, error) {
	var sig Signature
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		err := json.Unmarshal([]byte(s), &sig)
		return sig, err
	}
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	if err != nil || len(b) == 0 {
		return sig, &FieldError{Field: "signature", Err: errors.New(`neither JSON {"r","s"} nor DER in hex`)}
	}
	if _, err := ecdsa.ParseDERSignature(b); err != nil {
		return sig, &FieldError{Field: "signature", Err: err}
	}
	// The parser checked the strict DER layout 0x30 len 0x02 rlen r 0x02
	// slen s, with r and s canonical and below the group order.
	rLen := int(b[3])
	r, s2 := b[4:4+rLen], b[6+rLen:]
	r, s2 = bytes.TrimLeft(r, "\x00"), bytes.TrimLeft(s2, "\x00")
	copy(sig.R[32-len(r):], r)
	copy(sig.S[32-len(s2):], s2)
	return sig, nil
}
