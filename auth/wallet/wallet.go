// Package wallet turns a login of the auth SDK into an account on each
// chain family Portico serves, each signing with its ecosystem's own
// library: an EVM account from the secp256k1 key (go-ethereum), a
// slot-chain account from the ed25519 key (solana-go), and a rollup
// account from a Stark key ground out of the secp256k1 key, as the
// rollup's wallets and starknet.js derive one (package starknettx signs
// and hashes). The addresses are the ones each family's JavaScript library
// derives from the same key; the tests hold them to ethers,
// @solana/web3.js and starknet.js.
//
// Keys stay inside the accounts: no method returns one, and the accounts
// print (fmt, log/slog) as their addresses only. Keep the session the SDK
// way (its Storage, the OS keyring) and rebuild a Wallet from the State at
// start, rather than storing keys of your own.
package wallet

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/porticohq/portico/auth/authwire"
)

// Wallet is one login's account on each family.
type Wallet struct {
	// EVM signs with the login's secp256k1 key.
	EVM *EVMAccount
	// Solana signs with the login's ed25519 key.
	Solana *SolanaAccount
	// Starknet signs with the Stark key ground from the secp256k1 key.
	Starknet *StarknetAccount
}

// ErrNoKey: the state holds no key material (nobody is logged in, or the
// login failed).
var ErrNoKey = errors.New("wallet: the state holds no keys")

// KeyError says which key of a state is malformed, without its value.
type KeyError struct {
	// Field is the State field: "privKey" or "ed25519PrivKey".
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error names the field.
func (e *KeyError) Error() string { return "wallet: " + e.Field + " " + e.Reason }

// FromState builds the accounts of a login's app-scoped keys, State.PrivKey
// and State.Ed25519PrivKey (what the SDK's PrivKey and Ed25519PrivKey give
// unless InitParams.UseCoreKitKey is set; use FromKeys with those then).
func FromState(st *authwire.State) (*Wallet, error) {
	if st == nil || st.PrivKey == "" && st.Ed25519PrivKey == "" {
		return nil, ErrNoKey
	}
	return FromKeys(st.PrivKey, st.Ed25519PrivKey)
}

// FromKeys builds the accounts from a secp256k1 key (hex, 64 digits, the
// SDK's privKey form; a shorter one is zero-padded as the SDK pads) and an
// ed25519 key (hex of seed ‖ public key, 128 digits).
func FromKeys(privKeyHex, ed25519Hex string) (*Wallet, error) {
	priv, err := decodeHex("privKey", privKeyHex, 32, true)
	if err != nil {
		return nil, err
	}
	defer clear(priv)
	ed, err := decodeHex("ed25519PrivKey", ed25519Hex, 64, false)
	if err != nil {
		return nil, err
	}
	defer clear(ed)
	w := &Wallet{}
	if w.EVM, err = newEVMAccount(priv); err != nil {
		return nil, err
	}
	if w.Solana, err = newSolanaAccount(ed); err != nil {
		return nil, err
	}
	if w.Starknet, err = newStarknetAccount(priv); err != nil {
		return nil, err
	}
	return w, nil
}

// decodeHex reads a key in hex (an optional 0x) of n bytes; pad allows
// fewer digits, zero-padded on the left.
func decodeHex(field, s string, n int, pad bool) ([]byte, error) {
	s = strings.TrimPrefix(s, "0x")
	if pad && len(s) < 2*n {
		s = strings.Repeat("0", 2*n-len(s)) + s
	}
	if len(s) != 2*n {
		return nil, &KeyError{Field: field, Reason: fmt.Sprintf("is not %d hex digits", 2*n)}
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, &KeyError{Field: field, Reason: "is not hex"}
	}
	return b, nil
}

// String lists the three addresses.
func (w *Wallet) String() string {
	return fmt.Sprintf("evm %s, solana %s, starknet %s", w.EVM, w.Solana, w.Starknet)
}

// LogValue logs the three addresses (never a key).
func (w *Wallet) LogValue() slog.Value {
	return slog.GroupValue(slog.String("evm", w.EVM.String()), slog.String("solana", w.Solana.String()),
		slog.String("starknet", w.Starknet.String()))
}

var _ slog.LogValuer = (*Wallet)(nil)
