package keyderiv

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// ErrZeroKey is returned when a key is zero, or is n or more (not a
// secp256k1 private key). A subkey can in principle be zero; the chance is
// about 2^-254.
var ErrZeroKey = errors.New("keyderiv: key is not a valid secp256k1 private key (zero or not below the curve order)")

// InputError reports a bad value for a named input.
type InputError struct {
	Field  string
	Reason string
}

// Error names the field.
func (e *InputError) Error() string { return "keyderiv: " + e.Field + ": " + e.Reason }

// PadKey checks that key is a hex number of at most 32 bytes (with or
// without "0x") and returns it as 64 lower-case hex characters,
// zero-padded on the left.
func PadKey(key string) (string, error) {
	b, err := parseKey("key", key)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

func parseKey(field, key string) ([32]byte, error) {
	var out [32]byte
	s := strings.TrimPrefix(strings.TrimPrefix(key, "0x"), "0X")
	if s == "" {
		return out, &InputError{field, "empty"}
	}
	if len(s) > 64 {
		return out, &InputError{field, fmt.Sprintf("%d hex characters, want at most 64", len(s))}
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return out, &InputError{field, "not hex"}
	}
	copy(out[32-len(b):], b)
	return out, nil
}

// ClientIDBytes decodes a client id the way Node's Buffer.from(id,
// "base64") does for well-formed input: both the standard and the URL-safe
// alphabets are accepted, padding is optional. Characters outside both
// alphabets are an error (Node would skip them silently).
func ClientIDBytes(clientID string) ([]byte, error) {
	s := strings.TrimRight(clientID, "=")
	if s == "" {
		return nil, &InputError{"clientId", "empty"}
	}
	s = strings.NewReplacer("-", "+", "_", "/").Replace(s)
	if len(s)%4 == 1 {
		// Node ignores a lone trailing character (6 bits, no whole byte).
		s = s[:len(s)-1]
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, &InputError{"clientId", "not base64: " + err.Error()}
	}
	return b, nil
}

// secpN is the order of the secp256k1 group.
func secpN() *big.Int { return secp256k1.S256().N }

// Subkey returns the app-scoped key privKey for coreKitKey and a client id:
// MiMC-sponge Hash(xL=1, xR=key, k=clientIdBytes mod n).xL, as 64 hex
// characters. sponge may be shared; nil makes one.
func Subkey(sponge *Sponge, coreKitKey, clientID string) (string, error) {
	key, err := parseKey("coreKitKey", coreKitKey)
	if err != nil {
		return "", err
	}
	id, err := ClientIDBytes(clientID)
	if err != nil {
		return "", err
	}
	if sponge == nil {
		sponge = NewSponge()
	}
	var one fr.Element
	one.SetOne()
	k := new(big.Int).Mod(new(big.Int).SetBytes(id), secpN())
	xL, _ := sponge.Hash(one, Element(new(big.Int).SetBytes(key[:])), Element(k))
	out := xL.Bytes() // big-endian, 32 bytes
	if xL.IsZero() {
		return "", ErrZeroKey
	}
	return hex.EncodeToString(out[:]), nil
}

// Ed25519Key returns the 64-byte ed25519 private key seed‖pub whose seed is
// the 32-byte key, as 128 hex characters.
func Ed25519Key(key string) (string, error) {
	seed, err := parseKey("key", key)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(ed25519.NewKeyFromSeed(seed[:])), nil
}

// Keys is the key material a login returns, all in hex.
type Keys struct {
	// PrivKey is the app-scoped secp256k1 key (the subkey of CoreKitKey).
	PrivKey string
	// Ed25519PrivKey is the ed25519 key made from PrivKey.
	Ed25519PrivKey string
	// CoreKitKey is the user's base secp256k1 key: what the key network (or
	// tKey, once MFA is on) reconstructs, the same across apps.
	CoreKitKey string
	// CoreKitEd25519PrivKey is the ed25519 key made from CoreKitKey.
	CoreKitEd25519PrivKey string
}

// Derive computes every key of a login from coreKitKey and the app's
// client id. sponge may be shared; nil makes one.
func Derive(sponge *Sponge, coreKitKey, clientID string) (Keys, error) {
	core, err := parseKey("coreKitKey", coreKitKey)
	if err != nil {
		return Keys{}, err
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetBytes(&core); overflow != 0 || s.IsZero() {
		return Keys{}, ErrZeroKey
	}
	var k Keys
	k.CoreKitKey = hex.EncodeToString(core[:])
	if k.PrivKey, err = Subkey(sponge, k.CoreKitKey, clientID); err != nil {
		return Keys{}, err
	}
	if k.Ed25519PrivKey, err = Ed25519Key(k.PrivKey); err != nil {
		return Keys{}, err
	}
	if k.CoreKitEd25519PrivKey, err = Ed25519Key(k.CoreKitKey); err != nil {
		return Keys{}, err
	}
	return k, nil
}
